// The CTX hook: registration, listing, stable ids, dispatch to the installed handler, and
// muting per thread.
#include "threads/ctx_point.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {
SM_DEFINE_CTX_SITE(kTestSiteA, "test.site_a");
SM_DEFINE_CTX_SITE(kTestSiteB, "test.site_b");

std::vector<std::string> g_calls;
void RecordingHandler(sm::threads::CtxSite& site) { g_calls.emplace_back(site.name); }
}  // namespace

TEST_CASE("CTX sites register at static init with stable ids", "[unit][ctx]") {
  auto sites = sm::threads::ListCtxSites();
  std::vector<std::string> names;
  for (auto* s : sites) names.emplace_back(s->name);
  REQUIRE(std::find(names.begin(), names.end(), "test.site_a") != names.end());
  REQUIRE(std::is_sorted(names.begin(), names.end()));
  REQUIRE(sm::threads::FindCtxSite("test.site_b") == &kTestSiteB);
  REQUIRE(sm::threads::FindCtxSite("no.such.site") == nullptr);
  REQUIRE(kTestSiteA.id == sm::threads::CtxSiteId("test.site_a"));
  REQUIRE(kTestSiteA.id != kTestSiteB.id);
}

TEST_CASE("the CTX hook calls the handler only when one is installed", "[unit][ctx]") {
  g_calls.clear();
  kTestSiteA.enabled = true;
  kTestSiteB.enabled = true;
  SM_CTX(kTestSiteA);
  REQUIRE(g_calls.empty());
  sm::threads::SetCtxHandler(&RecordingHandler);
  SM_CTX(kTestSiteA);
  SM_CTX(kTestSiteB);
  sm::threads::SetCtxHandler(nullptr);
  SM_CTX(kTestSiteB);
  REQUIRE(g_calls == std::vector<std::string>{"test.site_a", "test.site_b"});
  kTestSiteA.enabled = false;
  kTestSiteB.enabled = false;
}

TEST_CASE("the CTX hook skips disabled sites", "[unit][ctx]") {
  g_calls.clear();
  sm::threads::SetCtxHandler(&RecordingHandler);
  kTestSiteA.enabled = true;
  SM_CTX(kTestSiteA);
  SM_CTX(kTestSiteB);  // disabled: no call
  sm::threads::SetAllCtxSitesEnabled(true);
  SM_CTX(kTestSiteB);
  sm::threads::SetAllCtxSitesEnabled(false);
  SM_CTX(kTestSiteA);
  sm::threads::SetCtxHandler(nullptr);
  REQUIRE(g_calls == std::vector<std::string>{"test.site_a", "test.site_b"});
}

TEST_CASE("a thread that mutes its CTX sites skips the handler, and other threads do not",
          "[unit][ctx]") {
  g_calls.clear();
  sm::threads::SetCtxHandler(&RecordingHandler);
  kTestSiteA.enabled = true;
  CHECK(sm::threads::CtxHandlerInstalled());
  const uint32_t changes = sm::threads::CtxMuteChangesOnThisThread();
  sm::threads::SetCtxMutedOnThisThread(true);
  sm::threads::SetCtxMutedOnThisThread(true);  // no change
  REQUIRE(sm::threads::CtxMutedOnThisThread());
  CHECK(sm::threads::CtxMuteChangesOnThisThread() == changes + 1);
  SM_CTX(kTestSiteA);  // muted here: no call
  bool other_muted = true;
  std::thread other([&] {
    other_muted = sm::threads::CtxMutedOnThisThread();
    SM_CTX(kTestSiteA);  // not muted there: a call
  });
  other.join();
  sm::threads::SetCtxMutedOnThisThread(false);
  CHECK(sm::threads::CtxMuteChangesOnThisThread() == changes + 2);
  SM_CTX(kTestSiteA);
  sm::threads::SetCtxHandler(nullptr);
  CHECK_FALSE(sm::threads::CtxHandlerInstalled());
  kTestSiteA.enabled = false;
  CHECK_FALSE(other_muted);
  REQUIRE(g_calls == std::vector<std::string>{"test.site_a", "test.site_a"});
}
