// Running a program under callgrind and reading its dumped parts.
#include "tools/icache/callgrind_parts.h"

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

}  // namespace

std::string Geometry::Name() const {
  unsigned long size = 0, ways = 0;
  std::sscanf(i1.c_str(), "%lu,%lu", &size, &ways);
  return std::to_string(size / 1024) + " KiB " + std::to_string(ways) + "-way";
}

std::string Geometry::Suffix() const {
  if (i1 == Geometry{}.i1) return "";
  unsigned long size = 0, ways = 0;
  std::sscanf(i1.c_str(), "%lu,%lu", &size, &ways);
  return "_" + std::to_string(size / 1024) + "k" + std::to_string(ways) + "w";
}

uint64_t Counters::Get(const std::string& name) const {
  auto it = events.find(name);
  return it == events.end() ? 0 : it->second;
}

bool ParseCallgrindFile(const std::string& path, std::string* label, Counters* counters) {
  std::ifstream in(path);
  if (!in) return false;
  std::vector<std::string> names;
  std::string line;
  bool have_summary = false;
  while (std::getline(in, line)) {
    if (StartsWith(line, "desc: Trigger: ")) {
      *label = line.substr(std::string("desc: Trigger: ").size());
      const std::string kClient = "Client Request: ";
      if (StartsWith(*label, kClient)) *label = label->substr(kClient.size());
    } else if (StartsWith(line, "events: ")) {
      names = SplitWords(line.substr(8));
    } else if (StartsWith(line, "summary: ") || StartsWith(line, "totals: ")) {
      std::vector<uint64_t> values = SplitNumbers(line.substr(line.find(':') + 1));
      counters->events.clear();
      for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
        counters->events[names[i]] = values[i];
      }
      have_summary = true;
    }
  }
  return have_summary;
}

bool RunUnderCallgrind(const std::string& command, const Geometry& geometry,
                       const std::string& out_prefix, bool keep,
                       std::map<std::string, Counters>* parts, std::string* error) {
  namespace fs = std::filesystem;
  if (std::system("valgrind --version >/dev/null 2>&1") != 0) {
    *error = "valgrind is not installed (Debian package valgrind)";
    return false;
  }
  // Explicit cache sizes always: valgrind's auto-detection reads this host's caches wrongly.
  std::string cmd = "valgrind --tool=callgrind --cache-sim=yes --branch-sim=yes"
                    " --collect-atstart=no --I1=" + geometry.i1 + " --D1=" + geometry.d1 +
                    " --LL=" + geometry.ll + " --callgrind-out-file=" + out_prefix +
                    " --log-file=" + out_prefix + ".log " + command;
  int rc = std::system(cmd.c_str());
  fs::path dir = fs::path(out_prefix).parent_path();
  std::string base = fs::path(out_prefix).filename().string();
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? fs::path(".") : dir)) {
    std::string name = entry.path().filename().string();
    if (StartsWith(name, base)) files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    if (file.extension() == ".log") continue;
    std::string label;
    Counters counters;
    if (ParseCallgrindFile(file.string(), &label, &counters) && !label.empty()) {
      (*parts)[label] = counters;
    }
  }
  if (rc != 0) {
    *error = "the run under valgrind failed (exit " + std::to_string(rc) + "); see " +
             out_prefix + ".log";
    return false;
  }
  if (!keep) {
    for (const fs::path& file : files) fs::remove(file);
  }
  return true;
}

bool FreshCopy(const std::string& from, const std::string& to) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(to, ec);
  fs::copy(from, to, fs::copy_options::recursive, ec);
  if (ec) std::fprintf(stderr, "cannot copy %s: %s\n", from.c_str(), ec.message().c_str());
  return !ec;
}

double ReductionPct(double baseline, double measured) {
  return baseline == 0 ? 0 : 100.0 * (1.0 - measured / baseline);
}

}  // namespace sm::icache
