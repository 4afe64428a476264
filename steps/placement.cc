// Reading and applying CTX placement files.
#include "steps/placement.h"

#include <fstream>
#include <sstream>

#include "sm/common/assert.h"
#include "threads/ctx_point.h"

namespace sm::steps {

namespace {
// steps/ctx_placement.txt, embedded by steps/CMakeLists.txt.
constexpr const char kDefaultPlacement[] =
#include "steps/ctx_placement.inc"
    ;
}  // namespace

Status ParsePlacement(const std::string& text, const std::string& source,
                      Placement* placement) {
  placement->sites.clear();
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if (!(words >> name)) continue;
    if (threads::FindCtxSite(name) == nullptr) {
      return Status::InvalidArgument(source + ":" + std::to_string(number) + ": no CTX site '" +
                                     name + "' in this build (regenerate the placement)");
    }
    placement->sites.push_back(name);
  }
  return Status::OK();
}

Status ReadPlacement(const std::string& path, Placement* placement) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the CTX placement file");
  std::stringstream text;
  text << in.rdbuf();
  return ParsePlacement(text.str(), path, placement);
}

Status ApplyPlacement(const Placement& placement) {
  for (const std::string& name : placement.sites) {
    if (threads::FindCtxSite(name) == nullptr) {
      return Status::InvalidArgument("no CTX site '" + name + "' in this build");
    }
  }
  for (threads::CtxSite* site : threads::ListCtxSites()) {
    site->enabled.store(false, std::memory_order_relaxed);
  }
  for (const std::string& name : placement.sites) {
    threads::FindCtxSite(name)->enabled.store(true, std::memory_order_relaxed);
  }
  return Status::OK();
}

Placement DefaultPlacement() {
  Placement placement;
  // Sites of layers not linked into this binary are skipped: the default must always apply.
  std::istringstream in(kDefaultPlacement);
  std::string line;
  while (std::getline(in, line)) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string name;
    if ((words >> name) && threads::FindCtxSite(name) != nullptr) {
      placement.sites.push_back(name);
    }
  }
  return placement;
}

}  // namespace sm::steps
