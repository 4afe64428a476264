// The footprint table (contract in footprints.h).
#include "query/footprints.h"

#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "sm/common/assert.h"

namespace sm::query {

namespace {
// query/footprints.txt, embedded by query/CMakeLists.txt.
constexpr const char kDefaultFootprints[] =
#include "query/footprints.inc"
    ;
}  // namespace

Status FootprintTable::Parse(std::string_view text, const std::string& source,
                             FootprintTable* out) {
  FootprintTable table;
  std::set<std::string> names;
  bool has_threshold = false;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string kind;
    if (!(words >> kind)) continue;
    auto bad = [&](const std::string& what) {
      return Status::InvalidArgument(source + ":" + std::to_string(number) + ": " + what);
    };
    if (kind == "function") {
      uint64_t id = 0, bytes = 0;
      std::string name;
      if (!(words >> id >> bytes >> name) || bytes > UINT32_MAX) return bad("a bad function line");
      if (id != table.function_bytes_.size()) return bad("function ids must count up from 0");
      if (!names.insert(name).second) return bad("function " + name + " appears twice");
      table.function_bytes_.push_back(static_cast<uint32_t>(bytes));
    } else if (kind == "module") {
      std::string name;
      if (!(words >> name)) return bad("a module without a name");
      if (!names.insert("module " + name).second) return bad("module " + name + " appears twice");
      std::vector<uint32_t>& ids = table.modules_[name];
      for (uint64_t id = 0; words >> id;) {
        if (id >= table.function_bytes_.size()) return bad("an undefined function id");
        ids.push_back(static_cast<uint32_t>(id));
      }
      if (!words.eof()) return bad("a module's functions are ids");
    } else if (kind == "threshold") {
      std::string rows;
      if (has_threshold) return bad("a second threshold line");
      std::string extra;
      if (!(words >> rows) || words >> extra) return bad("a threshold line is 'threshold ROWS'");
      has_threshold = true;
      if (rows == "none") {
        table.threshold_rows_ = std::numeric_limits<double>::infinity();
      } else {
        char* end = nullptr;
        const double value = std::strtod(rows.c_str(), &end);
        if (*end != '\0' || !(value >= 0) || !std::isfinite(value)) {
          return bad("a threshold is a number of rows or 'none', not '" + rows + "'");
        }
        table.threshold_rows_ = value;
      }
    } else {
      return bad("expected 'function', 'module' or 'threshold', not '" + kind + "'");
    }
  }
  *out = std::move(table);
  return Status::OK();
}

const FootprintTable& FootprintTable::Default() {
  static const FootprintTable table = [] {
    FootprintTable t;
    Status s = Parse(kDefaultFootprints, "query/footprints.txt", &t);
    SM_ASSERT(s.ok());  // the checked-in file (tests/query/buffer_test.cc parses it too)
    return t;
  }();
  return table;
}

const char* FootprintTable::DefaultText() { return kDefaultFootprints; }

std::string FootprintTable::WithThreshold(std::string_view text, double threshold_rows) {
  std::string line = threshold_rows < 0 || std::isinf(threshold_rows)
                         ? "threshold none"
                         : "threshold " + std::to_string(std::llround(threshold_rows));
  std::string out;
  bool replaced = false;
  std::istringstream in{std::string(text)};
  for (std::string l; std::getline(in, l);) {
    std::istringstream words(l);
    std::string kind;
    if (words >> kind && kind == "threshold") {
      l = line;
      replaced = true;
    }
    out += l + "\n";
  }
  if (!replaced) out += line + "\n";
  return out;
}

uint64_t FootprintTable::Bytes(const std::vector<std::string>& modules,
                               std::vector<std::string>* unknown) const {
  std::set<uint32_t> functions;
  for (const std::string& m : modules) {
    auto it = modules_.find(m);
    if (it == modules_.end()) {
      if (unknown != nullptr) unknown->push_back(m);
      continue;
    }
    functions.insert(it->second.begin(), it->second.end());
  }
  uint64_t bytes = 0;
  for (uint32_t f : functions) bytes += function_bytes_[f];
  return bytes;
}

std::vector<std::string> FootprintTable::ModuleNames() const {
  std::vector<std::string> names;
  for (const auto& [name, ids] : modules_) names.push_back(name);
  return names;
}

}  // namespace sm::query
