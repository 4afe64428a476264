// Running a program under callgrind and reading its dumped parts.
#include "tools/icache/callgrind_parts.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sm::icache {

namespace {

std::vector<uint64_t> SplitNumbers(const std::string& text) {
  std::vector<uint64_t> out;
  std::istringstream in(text);
  uint64_t v;
  while (in >> v) out.push_back(v);
  return out;
}

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The instruction address of a cost line's first subposition, given the previous one's.
bool ReadAddress(const char* text, uint64_t last, uint64_t* addr) {
  if (*text == '*') {
    *addr = last;
  } else if (*text == '+' || *text == '-') {
    *addr = last + static_cast<uint64_t>(std::strtoll(text, nullptr, 10));
  } else if (std::isdigit(static_cast<unsigned char>(*text))) {
    *addr = std::strtoull(text, nullptr, 0);  // "0x..." hex, or decimal
  } else {
    return false;
  }
  return true;
}

// The L1-I's SIZE,WAYS,LINE; false (zeros) if `i1` is not three positive numbers.
struct CacheShape {
  unsigned long size = 0, ways = 0, line = 0;
};
bool ParseShape(const std::string& i1, CacheShape* shape) {
  char extra = 0;
  *shape = CacheShape{};
  return std::sscanf(i1.c_str(), "%lu,%lu,%lu%c", &shape->size, &shape->ways, &shape->line,
                     &extra) == 3 &&
         shape->size > 0 && shape->ways > 0 && shape->line > 0;
}

}  // namespace

std::string Geometry::Name() const {
  CacheShape s;
  (void)ParseShape(i1, &s);
  return std::to_string(s.size / 1024) + " KiB " + std::to_string(s.ways) + "-way";
}

std::string Geometry::Suffix() const {
  if (i1 == Geometry{}.i1) return "";
  CacheShape s;
  (void)ParseShape(i1, &s);
  return "_" + std::to_string(s.size / 1024) + "k" + std::to_string(s.ways) + "w";
}

bool Geometry::Valid() const {
  CacheShape s;
  return ParseShape(i1, &s);
}

uint64_t Counters::Get(const std::string& name) const {
  auto it = events.find(name);
  return it == events.end() ? 0 : it->second;
}

bool ParseCallgrindFile(const std::string& path, uint32_t line_bytes, Part* part) {
  std::ifstream in(path);
  if (!in) return false;
  std::vector<std::string> names;
  size_t subpositions = 1;  // "positions: line" by default; "instr line" with --dump-instr
  bool instr = false;
  uint64_t last = 0;  // the instruction address of the previous cost line
  bool call_cost = false;  // the next cost line is a call's inclusive cost
  std::vector<uint64_t> lines;
  std::string line;
  bool have_summary = false;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    if (c == '+' || c == '-' || c == '*' || std::isdigit(static_cast<unsigned char>(c))) {
      if (call_cost) {  // relative to the previous cost line, and moves no position
        call_cost = false;
        continue;
      }
      if (!instr || line_bytes == 0) continue;
      if (!ReadAddress(line.c_str(), last, &last)) return false;
      std::istringstream words(line);
      std::string word;
      for (size_t i = 0; i < subpositions && words >> word;) ++i;
      uint64_t ir = 0;
      if (words >> ir && ir > 0) lines.push_back(last / line_bytes);
    } else if (StartsWith(line, "calls=")) {
      call_cost = true;  // "calls=<count> <target position>", which moves no position either
    } else if (StartsWith(line, "desc: Trigger: ")) {
      part->label = line.substr(std::string("desc: Trigger: ").size());
      const std::string kClient = "Client Request: ";
      if (StartsWith(part->label, kClient)) part->label = part->label.substr(kClient.size());
    } else if (StartsWith(line, "positions: ")) {
      std::vector<std::string> kinds = SplitWords(line.substr(11));
      subpositions = kinds.size();
      instr = !kinds.empty() && kinds[0] == "instr";
    } else if (StartsWith(line, "events: ")) {
      names = SplitWords(line.substr(8));
    } else if (StartsWith(line, "summary: ") || StartsWith(line, "totals: ")) {
      std::vector<uint64_t> values = SplitNumbers(line.substr(line.find(':') + 1));
      part->counters.events.clear();
      for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
        part->counters.events[names[i]] = values[i];
      }
      have_summary = true;
    }
  }
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  part->lines = std::move(lines);
  return have_summary;
}

namespace {

// A "fn=" or "cfn=" line's name: "(12) name" defines id 12, "(12)" refers to it; without
// compression the name stands alone.
std::string CompressedName(const std::string& text, std::map<std::string, std::string>* names) {
  std::string name = text;
  if (!text.empty() && text[0] == '(') {
    const size_t close = text.find(')');
    const std::string id = text.substr(0, close + 1);
    if (close + 1 < text.size()) {
      name = text.substr(std::min(text.size(), close + 2));
      (*names)[id] = name;
    } else {
      name = (*names)[id];
    }
  }
  const size_t quote = name.rfind('\'');  // "name'2": a context of the same function
  if (quote != std::string::npos && quote + 1 < name.size() &&
      name.find_first_not_of("0123456789", quote + 1) == std::string::npos) {
    name.resize(quote);
  }
  return name;
}

}  // namespace

bool AddCallgrindFunctions(const std::string& path, FunctionProfile* profile) {
  std::ifstream in(path);
  if (!in) return false;
  std::map<std::string, std::string> fn_names;  // callgrind compresses fn and cfn together
  std::string fn, callee;
  uint64_t pending_calls = 0;
  bool call_cost = false;
  size_t subpositions = 1;  // then the events, Ir first
  std::vector<std::string> events;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const char c = line[0];
    if (c == '+' || c == '-' || c == '*' || std::isdigit(static_cast<unsigned char>(c))) {
      std::vector<std::string> words = SplitWords(line);
      if (call_cost) {  // the call's inclusive cost: the callee's, not this function's own
        call_cost = false;
        profile->calls[{fn, callee}] += pending_calls;
        Counters& called = profile->called[callee];
        for (size_t i = 0; i < events.size() && subpositions + i < words.size(); ++i) {
          called.events[events[i]] += std::strtoull(words[subpositions + i].c_str(), nullptr, 10);
        }
        continue;
      }
      if (words.size() > subpositions) {
        profile->self_ir[fn] += std::strtoull(words[subpositions].c_str(), nullptr, 10);
      }
    } else if (StartsWith(line, "positions: ")) {
      subpositions = std::max<size_t>(SplitWords(line.substr(11)).size(), 1);
    } else if (StartsWith(line, "events: ")) {
      events = SplitWords(line.substr(8));
      if (events.empty() || events[0] != "Ir") return false;  // not instructions first
    } else if (StartsWith(line, "fn=")) {
      fn = CompressedName(line.substr(3), &fn_names);
    } else if (StartsWith(line, "cfn=")) {
      callee = CompressedName(line.substr(4), &fn_names);
    } else if (StartsWith(line, "calls=")) {
      pending_calls = std::strtoull(line.c_str() + 6, nullptr, 10);
      call_cost = true;
    }
  }
  return true;
}

bool RunUnderCallgrindParts(const std::string& command, const Geometry& geometry,
                            const std::string& out_prefix, const std::string& extra_args,
                            uint32_t line_bytes, bool functions, bool keep,
                            std::vector<Part>* parts, std::string* error) {
  namespace fs = std::filesystem;
  if (std::system("valgrind --version >/dev/null 2>&1") != 0) {
    *error = "valgrind is not installed (Debian package valgrind)";
    return false;
  }
  // Explicit cache sizes always: valgrind's auto-detection reads this host's caches wrongly.
  std::string cmd = "valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes"
                    " --collect-atstart=no --I1=" + geometry.i1 + " --D1=" + geometry.d1 +
                    " --LL=" + geometry.ll + " " + extra_args + " --callgrind-out-file=" +
                    out_prefix + " --log-file=" + out_prefix + ".log " + command;
  int rc = std::system(cmd.c_str());
  fs::path dir = fs::path(out_prefix).parent_path();
  std::string base = fs::path(out_prefix).filename().string();
  // Callgrind names the dumps <prefix>.1, <prefix>.2, ... in order, the last one <prefix>.
  std::vector<std::pair<uint64_t, fs::path>> files;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? fs::path(".") : dir)) {
    std::string name = entry.path().filename().string();
    if (!StartsWith(name, base)) continue;
    std::string rest = name.substr(base.size());
    uint64_t order = UINT64_MAX;  // <prefix> itself (the dump at exit), and <prefix>.log
    if (rest.size() > 1 && rest[0] == '.' &&
        rest.find_first_not_of("0123456789", 1) == std::string::npos) {
      order = std::strtoull(rest.c_str() + 1, nullptr, 10);
    } else if (!rest.empty() && rest != ".log") {
      continue;
    }
    files.emplace_back(order, entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& [order, file] : files) {
    if (file.extension() == ".log") continue;
    Part part;
    if (ParseCallgrindFile(file.string(), line_bytes, &part) && !part.label.empty() &&
        (!functions || AddCallgrindFunctions(file.string(), &part.functions))) {
      parts->push_back(std::move(part));
    }
  }
  if (rc != 0) {
    *error = "the run under valgrind failed (exit " + std::to_string(rc) + "); see " +
             out_prefix + ".log";
    return false;
  }
  if (!keep) {
    for (const auto& [order, file] : files) fs::remove(file);
  }
  return true;
}

bool RunUnderCallgrind(const std::string& command, const Geometry& geometry,
                       const std::string& out_prefix, bool keep,
                       std::map<std::string, Counters>* parts, std::string* error) {
  std::vector<Part> all;
  bool ok = RunUnderCallgrindParts(command, geometry, out_prefix, "", 0, false, keep, &all,
                                   error);
  for (Part& part : all) (*parts)[part.label] = std::move(part.counters);
  return ok;
}

bool FreshCopy(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) std::fprintf(stderr, "cannot copy %s: %s\n", from.c_str(), ec.message().c_str());
  return !ec;
}

bool ReadFunctionSymbols(const std::string& binary, FunctionSymbols* symbols, std::string* error) {
  const std::string cmd = "nm -S --defined-only " + ShellQuote(binary) + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    *error = "cannot run nm (Debian package binutils)";
    return false;
  }
  std::map<std::string, std::vector<std::string>> at;  // address -> names
  char buf[8192];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) {
    // "<address> <size> <type> <name>"; symbols without a size have three fields.
    std::istringstream line(buf);
    std::string address, size, type, name;
    if (!(line >> address >> size >> type >> name)) continue;
    if (type != "t" && type != "T" && type != "w" && type != "W") continue;
    if (symbols->sizes.emplace(name, std::strtoull(size.c_str(), nullptr, 16)).second) {
      at[address].push_back(name);
    }
  }
  const int rc = pclose(pipe);
  if (rc != 0 || symbols->sizes.empty()) {
    *error = "nm found no functions in " + binary;
    return false;
  }
  for (const auto& [address, names] : at) {
    if (names.size() < 2) continue;
    for (const std::string& name : names) {
      for (const std::string& other : names) {
        if (other != name) symbols->aliases[name].push_back(other);
      }
    }
  }
  return true;
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

double ReductionPct(double baseline, double measured) {
  return baseline == 0 ? 0 : 100.0 * (1.0 - measured / baseline);
}

uint32_t LineBytes(const std::string& geometry) {
  CacheShape s;
  return ParseShape(geometry, &s) ? static_cast<uint32_t>(s.line) : 64;
}

}  // namespace sm::icache
