// CTX site registry and handler slot.
#include "threads/ctx_point.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sm::threads {
namespace detail {
std::atomic<CtxHandler> g_ctx_handler{nullptr};
constinit thread_local bool tls_ctx_muted = false;
constinit thread_local uint32_t tls_ctx_mute_changes = 0;
}  // namespace detail

namespace {
// Function-local so that sites in any translation unit may register during static init.
std::vector<CtxSite*>& Registry() {
  static std::vector<CtxSite*>* sites = new std::vector<CtxSite*>();
  return *sites;
}
}  // namespace

CtxSite::CtxSite(const char* site_name) : name(site_name), id(CtxSiteId(site_name)) {
  for (CtxSite* other : Registry()) {
    if (std::strcmp(other->name, site_name) == 0 || other->id == id) {
      std::fprintf(stderr, "CTX site '%s' collides with '%s'\n", site_name, other->name);
      std::abort();  // static init: a duplicate name is a build defect
    }
  }
  Registry().push_back(this);
}

void SetCtxHandler(CtxHandler handler) {
  detail::g_ctx_handler.store(handler, std::memory_order_relaxed);
}

std::vector<CtxSite*> ListCtxSites() {
  std::vector<CtxSite*> sites = Registry();
  std::sort(sites.begin(), sites.end(),
            [](const CtxSite* a, const CtxSite* b) { return std::strcmp(a->name, b->name) < 0; });
  return sites;
}

void SetAllCtxSitesEnabled(bool enabled) {
  for (CtxSite* site : Registry()) site->enabled.store(enabled, std::memory_order_relaxed);
}

CtxSite* FindCtxSite(std::string_view name) {
  for (CtxSite* site : Registry()) {
    if (name == site->name) return site;
  }
  return nullptr;
}

}  // namespace sm::threads
