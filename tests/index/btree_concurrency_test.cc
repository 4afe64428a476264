// B-tree concurrency: fibers on two workers (threads::Runtime) doing inserts, updates,
// deletes, lookups and scans on disjoint and on overlapping key sets, then the contents equal
// the model and Verify passes; and the same with a buffer pool far smaller than the tree, so
// descents evict and read pages while holding latches above them.
//
// Catch2's REQUIRE is not thread-safe: fibers record failures (Failures) and the test thread
// checks them after the runtime has stopped.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"
#include "tests/test_util.h"
#include "threads/ctx_point.h"
#include "threads/fiber.h"
#include "threads/runtime.h"
#include "threads/sync.h"
#include "threads/worker.h"

using namespace sm;
using index::BTree;
using index::Cursor;
using index::ScanBound;
using index::ScanRange;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::TreeEnv;
using sm::test::ValueFor;

namespace {

struct Failures {
  std::atomic<int> count{0};
  threads::SpinLock lock;
  std::string first;  // GUARDED_BY(lock)

  void Add(const std::string& what) {
    if (count.fetch_add(1) == 0) {
      std::lock_guard<threads::SpinLock> guard(lock);
      first = what;
    }
  }
  void Check(const char* what, bool ok, const Status& s) {
    if (!ok) Add(std::string(what) + ": " + s.ToString());
  }
};

uint64_t KeyNumber(std::string_view key) {
  uint64_t n = 0;
  for (char c : key) n = (n << 8) | static_cast<uint8_t>(c);
  return n;
}

// Runs fn(i) in `fibers` fibers spread over the runtime's workers and waits for all.
template <typename Fn>
void RunFibers(threads::Runtime& runtime, int fibers, Fn fn) {
  threads::WaitGroup done;
  done.Add(fibers);
  for (int i = 0; i < fibers; ++i) {
    runtime.Spawn(
        [&, i] {
          fn(i);
          done.Done();
        },
        static_cast<int>(i % runtime.worker_count()));
  }
  done.Wait();
}

// One fiber owning the keys n with n % fibers == self: it alone changes them, so its own model
// predicts every result, while its keys share leaves with every other fiber's. With hints, its
// point operations go through its own leaf hint (btree.h, "Leaf hints"), and half of them stay
// near the previous key, so that the hint is used while the other fibers split its leaf.
class OwnerFiber {
 public:
  OwnerFiber(BTree* tree, int self, int fibers, uint64_t keys, uint64_t seed, Failures* failures,
             bool hints)
      : tree_(tree),
        self_(self),
        fibers_(fibers),
        keys_(keys),
        rng_(seed),
        failures_(failures),
        hints_(hints) {}

  void Run(uint64_t ops) {
    for (uint64_t op = 0; op < ops; ++op) Step(op);
  }
  const Model& model() const { return model_; }
  const index::LeafHint& hint() const { return hint_; }

 private:
  void Step(uint64_t op) {
    uint64_t slot = rng_() % keys_;
    if (hints_ && rng_() % 2 == 0) slot = (last_slot_ + rng_() % 3) % keys_;
    last_slot_ = slot;
    uint64_t n = slot * fibers_ + self_;
    std::string key = Key64(n);
    const index::OpContext ctx{nullptr, nullptr, hints_ ? &hint_ : nullptr};
    bool present = model_.count(key) != 0;
    std::string value = ValueFor(n, op, 20 + rng_() % 150);
    Status s;
    switch (rng_() % 8) {
      case 0:
      case 1:
        s = tree_->Insert(key, value, ctx);
        failures_->Check("insert",
                         s.code() == (present ? Status::Code::kDuplicate : Status::Code::kOk), s);
        if (!present) model_[key] = value;
        break;
      case 2:
        s = tree_->Update(key, value, ctx);
        failures_->Check("update",
                         s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound), s);
        if (present) model_[key] = value;
        break;
      case 3:
        s = tree_->Upsert(key, value, ctx);
        failures_->Check("upsert", s.ok(), s);
        model_[key] = value;
        break;
      case 4:
        s = tree_->Delete(key, ctx);
        failures_->Check("delete",
                         s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound), s);
        model_.erase(key);
        break;
      case 5:
        Scan(n);
        break;
      default: {
        std::string got;
        s = tree_->Lookup(key, &got, ctx, rng_() % 2 == 0);
        failures_->Check("lookup",
                         s.code() == (present ? Status::Code::kOk : Status::Code::kNotFound), s);
        if (present && s.ok() && got != model_[key]) failures_->Add("lookup: wrong value");
      }
    }
  }

  // A short scan in either direction: all keys in order; this fiber's own keys as its model.
  void Scan(uint64_t from) {
    std::string lo = Key64(from);
    std::string hi = Key64(from + 40 * fibers_);
    Cursor cursor(tree_, ScanRange{ScanBound::Inclusive(lo), ScanBound::Exclusive(hi)});
    bool forward = rng_() % 2 == 0;
    std::vector<std::string> own;
    std::string previous;
    Status s = forward ? cursor.SeekToFirst() : cursor.SeekToLast();
    for (; s.ok() && cursor.Valid(); s = forward ? cursor.Next() : cursor.Prev()) {
      std::string key(cursor.key());
      if (!previous.empty() && (forward ? key <= previous : key >= previous)) {
        failures_->Add("scan: keys out of order");
      }
      previous = key;
      if (KeyNumber(key) % fibers_ == static_cast<uint64_t>(self_)) own.push_back(key);
    }
    failures_->Check("scan", s.ok(), s);
    std::vector<std::string> expected;
    for (auto it = model_.lower_bound(lo); it != model_.end() && it->first < hi; ++it) {
      expected.push_back(it->first);
    }
    if (!forward) std::reverse(expected.begin(), expected.end());
    if (own != expected) failures_->Add("scan: own keys differ from the model");
  }

  BTree* tree_;
  int self_;
  int fibers_;
  uint64_t keys_;
  std::mt19937_64 rng_;
  Failures* failures_;
  const bool hints_;
  index::LeafHint hint_;
  uint64_t last_slot_ = 0;
  Model model_;
};

void RunOwners(TreeEnv& env, int fibers, uint64_t keys_per_fiber, uint64_t ops, uint64_t seed,
               bool hints = false) {
  auto runtime = sm::test::MakeRuntime(2);
  Failures failures;
  std::vector<std::unique_ptr<OwnerFiber>> owners;
  for (int f = 0; f < fibers; ++f) {
    owners.push_back(std::make_unique<OwnerFiber>(env.tree.get(), f, fibers, keys_per_fiber,
                                                  seed + f, &failures, hints));
  }
  RunFibers(*runtime, fibers, [&](int f) { owners[f]->Run(ops); });
  runtime->Shutdown();
  INFO(failures.first);
  REQUIRE(failures.count.load() == 0);
  Model all;
  for (const auto& owner : owners) all.insert(owner->model().begin(), owner->model().end());
  RequireSameAsModel(*env.tree, all);
  sm::test::RequireVerified(*env.tree);
  if (hints) {
    uint64_t hits = 0, misses = 0, rejected = 0;
    for (const auto& owner : owners) {
      hits += owner->hint().hits;
      misses += owner->hint().misses;
      rejected += owner->hint().rejected;
    }
    std::printf("  hint hits %llu, misses %llu (%llu rejected)\n",
                static_cast<unsigned long long>(hits), static_cast<unsigned long long>(misses),
                static_cast<unsigned long long>(rejected));
    REQUIRE(hits > 0);
  }
}

}  // namespace

TEST_CASE("btree concurrency: fibers on two workers with disjoint interleaved keys",
          "[random][btree][concurrency]") {
  uint64_t seed = sm::test::TestSeed("btree disjoint fibers");
  TreeEnv env(1024);
  RunOwners(env, 8, 2000, 6000, seed);
  REQUIRE(env.tree->counters().leaf_splits > 0);
}

TEST_CASE("btree concurrency: fibers on two workers with leaf hints",
          "[random][btree][concurrency][hint]") {
  uint64_t seed = sm::test::TestSeed("btree fibers with hints");
  TreeEnv env(1024);
  RunOwners(env, 8, 2000, 6000, seed, /*hints=*/true);
  REQUIRE(env.tree->counters().leaf_splits > 0);
}

TEST_CASE("btree concurrency: fibers with leaf hints in a pool much smaller than the tree",
          "[random][btree][concurrency][hint]") {
  uint64_t seed = sm::test::TestSeed("btree small pool fibers with hints");
  TreeEnv env(64);
  RunOwners(env, 6, 8000, 8000, seed, /*hints=*/true);
  REQUIRE(env.pool->stats().evictions > 0);
}

// A stand-in for the STEPS scheduler: every B-tree CTX point yields to the next fiber of the
// worker, so that fibers interleave inside operations while holding shared latches, and counts
// CTX points reached with an exclusive latch held (the placement rule says: none).
namespace {

std::atomic<uint64_t> g_ctx_switches{0};
std::atomic<uint64_t> g_ctx_with_exclusive{0};
std::mutex g_ctx_sites_mu;
std::set<std::string> g_ctx_sites;  // GUARDED_BY(g_ctx_sites_mu)

void YieldingCtxHandler(threads::CtxSite& site) {
  threads::Fiber* fiber = threads::Fiber::Current();
  if (fiber == nullptr || std::string_view(site.name).substr(0, 6) != "btree.") return;
  {
    std::lock_guard<std::mutex> guard(g_ctx_sites_mu);
    g_ctx_sites.insert(site.name);
  }
  if (fiber->exclusive_held() != 0) {
    g_ctx_with_exclusive++;
    return;
  }
  g_ctx_switches++;
  threads::Worker::Current()->Yield();
}

}  // namespace

TEST_CASE("btree concurrency: fibers switch at every CTX point", "[random][btree][concurrency]") {
  uint64_t seed = sm::test::TestSeed("btree fibers switching at CTX points");
  TreeEnv env(1024);
  threads::SetAllCtxSitesEnabled(true);
  threads::SetCtxHandler(&YieldingCtxHandler);
  // Half the fibers' rounds with leaf hints: the hinted path marks the leaf sites too, and
  // with no exclusive latch held.
  const bool hints = GENERATE(false, true);
  g_ctx_switches = 0;
  g_ctx_with_exclusive = 0;
  g_ctx_sites.clear();
  RunOwners(env, 8, 1500, 3000, seed, hints);
  threads::SetCtxHandler(nullptr);
  threads::SetAllCtxSitesEnabled(false);
  REQUIRE(g_ctx_switches.load() > 10000);
  REQUIRE(g_ctx_with_exclusive.load() == 0);
  std::set<std::string> expected = {
      "btree.descend.inner", "btree.leaf.search", "btree.leaf.copy_out",
      "btree.insert.leaf",   "btree.update.leaf", "btree.delete.leaf",
      "btree.split",         "btree.cursor.seek", "btree.cursor.next"};
  REQUIRE(g_ctx_sites == expected);
}

TEST_CASE("btree concurrency: a pool much smaller than the tree", "[random][btree][concurrency]") {
  uint64_t seed = sm::test::TestSeed("btree small pool fibers");
  TreeEnv env(64);  // 512 KiB of frames for a tree of several MiB
  RunOwners(env, 6, 8000, 8000, seed);
  index::BtreeStats stats;
  REQUIRE(env.tree->Verify(&stats).ok());
  REQUIRE(stats.pages() > 4 * env.pool->frame_count());
  REQUIRE(env.pool->stats().evictions > 0);
}

TEST_CASE("btree concurrency: fibers on two workers with overlapping keys",
          "[random][btree][concurrency]") {
  uint64_t seed = sm::test::TestSeed("btree overlapping fibers");
  constexpr int kFibers = 8;
  constexpr uint64_t kKeys = 3000;
  TreeEnv env(1024);
  auto runtime = sm::test::MakeRuntime(2);
  Failures failures;
  std::atomic<uint64_t> inserted{0}, duplicates{0}, deleted{0};
  // Phase 1: every fiber inserts every key (value version 0), in its own order, with lookups
  // in between. Exactly one insert of each key succeeds.
  RunFibers(*runtime, kFibers, [&](int f) {
    std::mt19937_64 rng(seed + f);
    std::vector<uint64_t> order(kKeys);
    for (uint64_t i = 0; i < kKeys; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (uint64_t n : order) {
      Status s = env.tree->Insert(Key64(n), ValueFor(n, 0));
      if (s.ok())
        inserted++;
      else if (s.IsDuplicate())
        duplicates++;
      else
        failures.Add("insert: " + s.ToString());
      uint64_t probe = rng() % kKeys;
      std::string value;
      s = env.tree->Lookup(Key64(probe), &value);
      if (s.ok() ? value != ValueFor(probe, 0) : !s.IsNotFound()) failures.Add("lookup");
    }
  });
  // Phase 2: fibers delete the even keys (one delete of each succeeds) and upsert the odd ones
  // (version 1, idempotent) while one fiber keeps scanning.
  std::atomic<bool> writers_done{false};
  std::atomic<int> writers_left{kFibers - 1};
  RunFibers(*runtime, kFibers, [&](int f) {
    if (f == 0) {  // the scanner
      uint64_t scans = 0;
      while (!writers_done.load() || scans < 2) {
        Cursor cursor(env.tree.get());
        std::string previous;
        Status s = cursor.SeekToFirst();
        for (; s.ok() && cursor.Valid(); s = cursor.Next()) {
          uint64_t n = KeyNumber(cursor.key());
          if (!previous.empty() && cursor.key() <= previous) failures.Add("scan order");
          if (cursor.value() != ValueFor(n, 0) && cursor.value() != ValueFor(n, 1)) {
            failures.Add("scan value");
          }
          previous.assign(cursor.key());
        }
        if (!s.ok()) failures.Add("scan: " + s.ToString());
        ++scans;
        // Fibers are cooperative: let the writers on this worker run.
        threads::Worker::Current()->Yield();
      }
      return;
    }
    std::mt19937_64 rng(seed + 100 + f);
    std::vector<uint64_t> order(kKeys);
    for (uint64_t i = 0; i < kKeys; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (uint64_t n : order) {
      Status s =
          n % 2 == 0 ? env.tree->Delete(Key64(n)) : env.tree->Upsert(Key64(n), ValueFor(n, 1));
      if (n % 2 == 0 && s.ok()) deleted++;
      if (!s.ok() && !(n % 2 == 0 && s.IsNotFound())) failures.Add("phase 2: " + s.ToString());
    }
    if (--writers_left == 0) writers_done = true;
  });
  runtime->Shutdown();
  INFO(failures.first);
  REQUIRE(failures.count.load() == 0);
  REQUIRE(inserted.load() == kKeys);
  REQUIRE(duplicates.load() == (kFibers - 1) * kKeys);
  REQUIRE(deleted.load() == kKeys / 2);
  Model model;
  for (uint64_t n = 1; n < kKeys; n += 2) model[Key64(n)] = ValueFor(n, 1);
  RequireSameAsModel(*env.tree, model);
}

TEST_CASE("btree concurrency: millions of operations on two workers", "[.slow][btree]") {
  uint64_t seed = sm::test::TestSeed("btree fibers, slow");
  TreeEnv env(16384);
  RunOwners(env, 8, 40000, 250000, seed);
}

// A queue: producers insert at the high end, consumers delete the head, while scanners and
// readers through leaf hints run over it. The consumers' deletes retire the leaves they empty
// (btree_merge.cc) under all of them.
TEST_CASE("btree concurrency: a queue on two workers retires its emptied leaves under readers",
          "[random][btree][concurrency]") {
  uint64_t seed = sm::test::TestSeed("btree queue fibers");
  constexpr uint64_t kKeys = 20000;
  TreeEnv env(1024);
  auto runtime = sm::test::MakeRuntime(2);
  Failures failures;
  std::atomic<uint64_t> consumed{0};
  std::atomic<int> producers_left{2};
  RunFibers(*runtime, 6, [&](int f) {
    std::mt19937_64 rng(seed + f);
    if (f < 2) {  // producers: keys f, f + 2, f + 4, ...
      for (uint64_t n = f; n < kKeys; n += 2) {
        Status s = env.tree->Insert(Key64(n), ValueFor(n, 0));
        failures.Check("insert", s.ok(), s);
        if (n % 64 < 2) threads::Worker::Current()->Yield();
      }
      producers_left--;
      return;
    }
    if (f < 4) {  // consumers: take the head
      while (consumed.load() < kKeys) {
        std::string head;
        {
          Cursor cursor(env.tree.get());
          Status s = cursor.SeekToFirst();
          failures.Check("seek", s.ok(), s);
          if (s.ok() && cursor.Valid()) head.assign(cursor.key());
        }
        if (head.empty()) {
          threads::Worker::Current()->Yield();
          continue;
        }
        Status s = env.tree->Delete(head);
        if (s.ok()) consumed++;
        failures.Check("delete", s.ok() || s.IsNotFound(), s);
        if (rng() % 8 == 0) threads::Worker::Current()->Yield();
      }
      return;
    }
    // Readers: f == 4 scans, f == 5 looks keys up through one hint.
    index::LeafHint hint;
    while (consumed.load() < kKeys) {
      if (f == 4) {
        Cursor cursor(env.tree.get());
        std::string previous;
        Status s = cursor.SeekToFirst();
        for (int steps = 0; s.ok() && cursor.Valid() && steps < 500; ++steps, s = cursor.Next()) {
          if (!previous.empty() && cursor.key() <= previous) failures.Add("scan order");
          if (cursor.value() != ValueFor(KeyNumber(cursor.key()), 0)) failures.Add("scan value");
          previous.assign(cursor.key());
        }
        failures.Check("scan", s.ok(), s);
      } else {
        uint64_t n = consumed.load() + rng() % 512;
        std::string value;
        Status s = env.tree->Lookup(Key64(n), &value, {nullptr, nullptr, &hint});
        if (s.ok() ? value != ValueFor(n, 0) : !s.IsNotFound()) failures.Add("hinted lookup");
      }
      threads::Worker::Current()->Yield();
    }
  });
  INFO(failures.first);
  REQUIRE(failures.count.load() == 0);
  REQUIRE(producers_left.load() == 0);
  index::BtreeStats stats;
  REQUIRE(env.tree->Verify(&stats).ok());
  REQUIRE(stats.records == 0);
  REQUIRE(env.tree->counters().leaf_merges > 50);
  REQUIRE(stats.pages_per_level[0] == stats.pages_per_level[1]);
}
