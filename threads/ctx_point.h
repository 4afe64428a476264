// CTX points: named sites in the engine's code where a fiber may hand the CPU to the next
// member of its execution team (STEPS). This file only provides the hook; steps/ installs the
// handler that decides and switches. The handler is called only at enabled sites (the CTX
// placement enables them, and only while STEPS runs); a disabled site costs the load of its
// flag and a predictable branch, and no call. So a site may sit on a hot path (every latch, every
// page fix) as a candidate that the placement tool weighs, at two instructions per pass while
// it is not chosen, with STEPS off or on.
//
// A site must mark a point where its callers tolerate a switch: one where the fiber may wait
// anyway (a latch, a lock, a page fix, a log insert), or one that ends a step (a page unfixed),
// never inside a SpinLock's section or between steps that must not interleave with the
// worker's other fibers. The handler itself skips the switch while the fiber holds an exclusive
// latch or mutex. A test runs the API's concurrent workload with every site enabled.
//
// A site is defined once, at namespace scope, in the .cc file that uses it:
//     SM_DEFINE_CTX_SITE(kCtxBtreeDescend, "btree.descend");
// and marked where the switch may happen:
//     SM_CTX(kCtxBtreeDescend);
// Sites register themselves during static initialization, so every site compiled into a
// binary can be listed (steps_bench --list-ctx-points) before anything runs.
//
// Invariants:
//   1. Site names are unique in a binary (checked at registration); ids are the 32-bit FNV-1a
//      hash of the name, so they are stable across builds.
//   2. The handler is installed before workers start running operations and removed after
//      they stop; the hook reads it with a relaxed load (a plain move on x86-64).
//   3. A thread may mute its own sites (SetCtxMutedOnThisThread): a STEPS worker that runs
//      without teams (adaptive mode) then pays at each enabled site two loads and branches more
//      than at a disabled one, instead of a call to a handler that would do nothing.
//
// Thread/fiber safety: registration runs at static-init time; the hook is safe everywhere.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>
#include <vector>

namespace sm::threads {

struct CtxSite {
  explicit CtxSite(const char* site_name);
  CtxSite(const CtxSite&) = delete;
  CtxSite& operator=(const CtxSite&) = delete;

  const char* name;
  uint32_t id;
  // Set by the placement loader (steps/); the hook calls the handler only while it is set.
  std::atomic<bool> enabled{false};
};

using CtxHandler = void (*)(CtxSite& site);

namespace detail {
extern std::atomic<CtxHandler> g_ctx_handler;
// Per OS thread (a fiber runs on one worker thread for life). constinit: no TLS wrapper call.
extern constinit thread_local bool tls_ctx_muted;
extern constinit thread_local uint32_t tls_ctx_mute_changes;
}  // namespace detail

// Installs (or with nullptr removes) the handler called at every CTX site.
void SetCtxHandler(CtxHandler handler);
// Whether the calling thread's CTX sites call the handler (invariant 3).
inline void SetCtxMutedOnThisThread(bool muted) {
  if (detail::tls_ctx_muted == muted) return;
  detail::tls_ctx_muted = muted;
  ++detail::tls_ctx_mute_changes;
}
inline bool CtxMutedOnThisThread() { return detail::tls_ctx_muted; }
// How often the calling thread's muting has changed (wrapping): a measurement of the thread's
// work that must not straddle a change of STEPS mode compares it (index/interleave_chooser.h).
inline uint32_t CtxMuteChangesOnThisThread() { return detail::tls_ctx_mute_changes; }
// Whether a handler is installed (STEPS runs, or a test's hook).
inline bool CtxHandlerInstalled() {
  return detail::g_ctx_handler.load(std::memory_order_relaxed) != nullptr;
}
// All sites linked into this binary, sorted by name.
std::vector<CtxSite*> ListCtxSites();
CtxSite* FindCtxSite(std::string_view name);
// Enables or disables every site (tests that use the hook as a sync point at every site).
void SetAllCtxSitesEnabled(bool enabled);
constexpr uint32_t CtxSiteId(std::string_view name) {
  uint32_t hash = 2166136261u;
  for (char c : name) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 16777619u;
  }
  return hash;
}

}  // namespace sm::threads

#define SM_DEFINE_CTX_SITE(ident, site_name) ::sm::threads::CtxSite ident{site_name}

#define SM_CTX(site)                                                                  \
  do {                                                                                \
    if ((site).enabled.load(std::memory_order_relaxed)) [[unlikely]] {                \
      ::sm::threads::CtxHandler sm_ctx_handler_ =                                     \
          ::sm::threads::detail::g_ctx_handler.load(std::memory_order_relaxed);       \
      if (sm_ctx_handler_ != nullptr && !::sm::threads::detail::tls_ctx_muted) {      \
        sm_ctx_handler_(site);                                                        \
      }                                                                               \
    }                                                                                 \
  } while (0)
