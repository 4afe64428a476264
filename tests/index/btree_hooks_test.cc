// The B-tree's seams for logging and key-range locking (index/btree_hooks.h): which hook is
// called when, with which keys, that returned LSNs are stamped on the pages, that a failed log
// call leaves nothing on the page, that a structure change - a cascade included - is one
// logging call with every page it changed, latched, that a structure change whose start or
// whose logging fails leaves the tree as it was, and that a lock the hook cannot grant at once
// is waited for with no latch held.
#include "index/btree_hooks.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "index/btree.h"
#include "tests/index/btree_test_util.h"

using namespace sm;
using index::BTree;
using index::Cursor;
using index::KeyLockPurpose;
using index::KeyLockRequest;
using index::ScanBound;
using index::ScanRange;
using sm::test::Key64;
using sm::test::Model;
using sm::test::RequireSameAsModel;
using sm::test::RequireVerified;
using sm::test::TreeEnv;

namespace {

// Records every call as a line of text and hands out increasing LSNs.
class RecordingLogger : public index::BtreeLogger {
 public:
  std::vector<std::string> events;
  uint64_t next_lsn = 100;
  Lsn last;
  bool fail_record_ops = false;
  bool fail_begin = false;
  bool fail_end = false;
  std::vector<PageId> last_structure_pages;

  Status LogInsert(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view key,
                   std::string_view, bool, Lsn* lsn) override {
    return Record("insert " + std::string(key), lsn);
  }
  Status LogUpdate(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view key,
                   std::string_view old_value, bool, std::string_view new_value, bool,
                   Lsn* lsn) override {
    return Record(
        "update " + std::string(key) + " " + std::string(old_value) + "->" + std::string(new_value),
        lsn);
  }
  Status LogDelete(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view key,
                   std::string_view old_value, bool, Lsn* lsn) override {
    return Record("delete " + std::string(key) + " " + std::string(old_value), lsn);
  }
  Status LogAdd(void*, const BTree&, buffer::PageHandle&, uint16_t, std::string_view key,
                std::string_view, std::string_view, uint16_t offset, Lsn* lsn) override {
    return Record("add " + std::string(key) + " at " + std::to_string(offset), lsn);
  }
  Status BeginStructureChange(const BTree&) override {
    if (fail_begin) return Status::LogFull("no reservation");
    events.push_back("begin");
    return Status::OK();
  }
  Status EndStructureChange(const BTree&, std::span<buffer::PageHandle* const> pages,
                            Lsn* lsn) override {
    std::string event = "end";
    std::set<PageId> distinct;
    for (buffer::PageHandle* page : pages) {
      REQUIRE(page->mode() == threads::LatchMode::kExclusive);
      distinct.insert(page->page_id());
      event += " " + std::string(index::Node(page->data()).is_leaf() ? "leaf" : "inner");
    }
    REQUIRE(distinct.size() == pages.size());  // each page once
    last_structure_pages.assign(distinct.begin(), distinct.end());
    if (fail_end) return Status::Fatal("log failed");
    *lsn = Next(event);
    return Status::OK();
  }
  Status LogFormatRoot(const BTree&, buffer::PageHandle&, Lsn* lsn) override {
    *lsn = Next("format");
    return Status::OK();
  }

 private:
  Lsn Next(const std::string& event) {
    events.push_back(event);
    last = Lsn(next_lsn++);
    return last;
  }
  Status Record(const std::string& event, Lsn* lsn) {
    if (fail_record_ops) return Status::LogFull("log full");
    *lsn = Next(event);
    return Status::OK();
  }
};

std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key) out += std::to_string(static_cast<uint8_t>(c)) + ".";
  return out;
}

// Records lock requests as "try|wait purpose key"; can say Busy once for chosen keys, or fail.
class RecordingLocks : public index::KeyLockHook {
 public:
  std::vector<std::string> calls;
  std::set<std::string> busy_once;  // keys (as given) whose next TryLockKey says Busy
  Status fail = Status::OK();
  // Run by the LockKey that follows a Busy (the tree's wait), not by a direct LockKey.
  std::function<void()> while_waiting;

  Status TryLockKey(const KeyLockRequest& request) override {
    calls.push_back("try " + Describe(request));
    if (!fail.ok()) return fail;
    if (!request.end_of_index && busy_once.erase(std::string(request.key)) != 0) {
      said_busy_ = true;
      return Status::Busy();
    }
    return Status::OK();
  }
  Status LockKey(const KeyLockRequest& request) override {
    calls.push_back("wait " + Describe(request));
    const bool after_busy = std::exchange(said_busy_, false);
    if (while_waiting && after_busy) while_waiting();
    return Status::OK();
  }
  // The calls other than the kWrite locks.
  std::vector<std::string> NonWrite() const {
    std::vector<std::string> out;
    for (const std::string& c : calls) {
      if (c.find(" write ") == std::string::npos) out.push_back(c);
    }
    return out;
  }

  // With `tokens`, PrefetchKey hands out a distinct token per call, and a request that
  // carries one is described with " +" if it is the token of its own key, " !" if not.
  bool tokens = false;
  uint64_t PrefetchKey(std::string_view key) override {
    if (!tokens) return 0;
    prefetched_.emplace_back(key);
    return prefetched_.size();
  }
  std::string Describe(const KeyLockRequest& r) const {
    std::string out = std::string(index::KeyLockPurposeName(r.purpose)) + " " +
                      (r.end_of_index ? std::string("EOI") : Printable(r.key));
    if (r.prefetched == 0) return out;
    const bool own = r.prefetched <= prefetched_.size() && !r.end_of_index &&
                     prefetched_[r.prefetched - 1] == r.key;
    return out + (own ? " +" : " !");
  }

 private:
  bool said_busy_ = false;
  std::vector<std::string> prefetched_;  // by token - 1
};

std::string K(uint64_t n) { return Printable(Key64(n)); }

}  // namespace

TEST_CASE("btree hooks: record operations are logged and their LSNs stamped",
          "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(32, index::BtreeOptions{true, &logger});
  REQUIRE(logger.events == std::vector<std::string>{"format"});
  REQUIRE(env.tree->Insert("k", "v1").ok());
  REQUIRE(env.tree->Update("k", "v2").ok());
  REQUIRE(env.tree->Upsert("k", "v3").ok());
  REQUIRE(env.tree->Upsert("j", "w").ok());
  REQUIRE(env.tree->Delete("k").ok());
  REQUIRE(env.tree->Delete("k").IsNotFound());
  REQUIRE(env.tree->Insert("c", std::string(12, '\0')).ok());
  std::string counter;
  REQUIRE(env.tree->Add("c", 4, 7, &counter).ok());
  REQUIRE(logger.events == std::vector<std::string>{"format", "insert k", "update k v1->v2",
                                                    "update k v2->v3", "insert j", "delete k v3",
                                                    "insert c", "add c at 4"});
  buffer::PageHandle root;
  REQUIRE(env.pool->Fix(env.root, threads::LatchMode::kShared, &root).ok());
  REQUIRE(PageLsn(root.data()) == logger.last);
}

TEST_CASE("btree hooks: a failed log call leaves the page as it was", "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(32, index::BtreeOptions{true, &logger});
  REQUIRE(env.tree->Insert("a", "1").ok());
  logger.fail_record_ops = true;
  REQUIRE(env.tree->Insert("b", "2").code() == Status::Code::kLogFull);
  REQUIRE(env.tree->Update("a", "longer value").code() == Status::Code::kLogFull);
  REQUIRE(env.tree->Delete("a").code() == Status::Code::kLogFull);
  RequireSameAsModel(*env.tree, Model{{"a", "1"}});
}

TEST_CASE("btree hooks: structure changes are bracketed and the record op follows",
          "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(64, index::BtreeOptions{true, &logger});
  uint64_t n = 0;
  while (env.tree->counters().root_grows == 0) {
    REQUIRE(env.tree->Insert(Key64(n++), std::string(100, 'v')).ok());
  }
  // The insert that filled the root leaf: root growth, the split of the new child and the
  // separator into the root are one structure change, logged once with all three pages (the
  // root first); then the insert itself.
  std::vector<std::string> tail(logger.events.end() - 3, logger.events.end());
  REQUIRE(tail ==
          std::vector<std::string>{"begin", "end inner leaf leaf", "insert " + Key64(n - 1)});
  REQUIRE(logger.last_structure_pages.size() == 3);
  Lsn split_lsn(logger.last.value() - 1);
  for (PageId id : logger.last_structure_pages) {
    buffer::PageHandle page;
    REQUIRE(env.pool->Fix(id, threads::LatchMode::kShared, &page).ok());
    // Every page of the change carries its LSN, except the leaf the insert went to since.
    REQUIRE((PageLsn(page.data()) == split_lsn || PageLsn(page.data()) == logger.last));
  }
  buffer::PageHandle root;
  REQUIRE(env.pool->Fix(env.root, threads::LatchMode::kShared, &root).ok());
  REQUIRE(PageLsn(root.data()) == split_lsn);
  root.Release();
  index::VerifyOptions options;
  options.max_page_lsn = logger.last;
  REQUIRE(env.tree->Verify(nullptr, options).ok());
  options.max_page_lsn = Lsn(100);
  REQUIRE(env.tree->Verify(nullptr, options).IsCorruption());
}

TEST_CASE("btree hooks: a structure change that cannot begin changes nothing",
          "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(64, index::BtreeOptions{true, &logger});
  Model model;
  uint64_t n = 0;
  for (; n < 3000; ++n) {
    REQUIRE(env.tree->Insert(Key64(n), std::string(100, 'v')).ok());
    model[Key64(n)] = std::string(100, 'v');
  }
  index::BtreeStats before;
  RequireVerified(*env.tree, &before);
  uint64_t allocated = env.volume->allocated_pages();
  logger.fail_begin = true;
  int refused = 0;
  for (; refused == 0; ++n) {
    Status s = env.tree->Insert(Key64(n), std::string(100, 'v'));
    if (s.ok()) {
      model[Key64(n)] = std::string(100, 'v');
    } else {
      REQUIRE(s.code() == Status::Code::kLogFull);
      ++refused;
    }
  }
  index::BtreeStats after;
  RequireVerified(*env.tree, &after);
  REQUIRE(after.pages() == before.pages());
  // The page allocated for the split is kept for the next one.
  const uint64_t kept = env.volume->allocated_pages() - allocated;
  REQUIRE(kept >= 1);
  RequireSameAsModel(*env.tree, model);
  logger.fail_begin = false;
  REQUIRE(env.tree->Insert(Key64(n - 1), std::string(100, 'v')).ok());  // now it splits
  RequireVerified(*env.tree);
  REQUIRE(env.tree->counters().pages_reused == kept);
  REQUIRE(env.volume->allocated_pages() == allocated + kept);
}

TEST_CASE("btree hooks: a structure change that cannot be logged leaves the tree as it was",
          "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(64, index::BtreeOptions{true, &logger});
  Model model;
  // Long keys that differ only at the end (suffix truncation keeps their separators long):
  // inner nodes hold few separators, so splits cascade and the root grows often.
  auto key = [](uint64_t n) { return std::string(600, 'k') + Key64(n); };
  uint64_t failures = 0;
  uint64_t cascades_refused = 0;
  size_t most_pages = 0;  // the most pages one refused change touched
  index::BtreeStats start;
  RequireVerified(*env.tree, &start);
  const uint64_t outside_tree = env.volume->allocated_pages() - start.pages();  // metadata
  for (uint64_t n = 0; n < 600; ++n) {
    uint64_t k = (n * 7919) % 600;
    logger.fail_end = n % 3 == 0;
    uint64_t allocated = env.volume->allocated_pages();
    uint64_t grows = env.tree->counters().root_grows;
    index::BtreeStats before;
    RequireVerified(*env.tree, &before);
    Status s = env.tree->Insert(key(k), "v");
    if (s.ok()) {
      model[key(k)] = "v";
      continue;
    }
    REQUIRE(s.IsFatal());
    ++failures;
    // Nothing of the change stays: same pages, the new ones kept for the next split (at most
    // as many as the change touched), no counted split.
    index::BtreeStats after;
    RequireVerified(*env.tree, &after);
    REQUIRE(after.pages() == before.pages());
    REQUIRE(after.height == before.height);
    REQUIRE(env.volume->allocated_pages() - allocated <= logger.last_structure_pages.size());
    REQUIRE(env.tree->counters().root_grows == grows);
    if (logger.last_structure_pages.size() > 3) ++cascades_refused;
    most_pages = std::max(most_pages, logger.last_structure_pages.size());
  }
  REQUIRE(failures > 10);
  REQUIRE(cascades_refused > 0);  // some refused changes were cascades
  logger.fail_end = false;
  RequireSameAsModel(*env.tree, model);
  // The kept pages went to later splits: outside the tree are only the pages of the last
  // refused change at most.
  index::BtreeStats end;
  RequireVerified(*env.tree, &end);
  REQUIRE(env.tree->counters().pages_reused > 0);
  REQUIRE(env.volume->allocated_pages() - end.pages() - outside_tree <= most_pages);
}

TEST_CASE("btree hooks: a cascade of splits is one structure change with every page",
          "[unit][btree][hooks]") {
  RecordingLogger logger;
  TreeEnv env(128, index::BtreeOptions{true, &logger});
  auto key = [](uint64_t n) { return std::string(900, 'k') + Key64(n); };
  size_t most_pages = 0;
  for (uint64_t n = 0; n < 400; ++n) {
    size_t before = logger.events.size();
    REQUIRE(env.tree->Insert(key((n * 7919) % 400), "v").ok());
    std::vector<std::string> events(logger.events.begin() + before, logger.events.end());
    if (events.size() == 1) continue;  // no structure change
    REQUIRE(events.size() == 3);       // begin, one end record, the insert
    REQUIRE(events[0] == "begin");
    REQUIRE(events[1].rfind("end ", 0) == 0);
    most_pages = std::max(most_pages, logger.last_structure_pages.size());
  }
  index::BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.height >= 3);
  REQUIRE(most_pages >= 5);  // a leaf and an inner node split (and their parent) in one record
}

TEST_CASE("btree hooks: point operations lock the key and its next key", "[unit][btree][hooks]") {
  TreeEnv env(32);
  for (uint64_t n : {10, 20, 30}) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  RecordingLocks locks;
  // With a leaf hint (btree.h, "Leaf hints") the same locks are asked for in the same order.
  index::LeafHint hint;
  const bool hinted = GENERATE(false, true);
  index::OpContext ctx{nullptr, &locks, hinted ? &hint : nullptr};
  std::string value;
  REQUIRE(env.tree->Insert(Key64(15), "v", ctx).ok());
  REQUIRE(env.tree->Insert(Key64(35), "v", ctx).ok());
  REQUIRE(env.tree->Delete(Key64(20), ctx).ok());
  REQUIRE(env.tree->Delete(Key64(35), ctx).ok());
  REQUIRE(env.tree->Lookup(Key64(30), &value, ctx).ok());
  REQUIRE(env.tree->Lookup(Key64(25), &value, ctx).IsNotFound());
  REQUIRE(env.tree->Update(Key64(26), "v", ctx).IsNotFound());
  REQUIRE(env.tree->Insert(Key64(10), "v", ctx).IsDuplicate());
  REQUIRE(env.tree->Upsert(Key64(30), "u", ctx).ok());
  REQUIRE(env.tree->Upsert(Key64(31), "u", ctx).ok());
  // An insertion checks the gap before it locks its key; Update and Delete lock their key
  // before the descent; an Insert that finds its key reads it.
  REQUIRE(locks.calls == std::vector<std::string>{
                             "try insert-next " + K(20), "try write " + K(15),
                             "try insert-next EOI", "try write " + K(35), "wait write " + K(20),
                             "try delete-next " + K(30), "wait write " + K(35),
                             "try delete-next EOI", "try read " + K(30), "try read-next " + K(30),
                             "wait write " + K(26), "try read-next " + K(30), "try read " + K(10),
                             "try write " + K(30), "try insert-next EOI", "try write " + K(31)});
  REQUIRE(env.tree->counters().lock_waits == 0);
  if (hinted) REQUIRE(hint.hits == 9);  // all but the first of the ten operations
}

TEST_CASE("btree hooks: a request on the prefetched key carries what PrefetchKey returned",
          "[unit][btree][hooks]") {
  TreeEnv env(32);
  for (uint64_t n : {10, 20, 30}) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  RecordingLocks locks;
  locks.tokens = true;
  index::LeafHint hint;
  const bool hinted = GENERATE(false, true);
  index::OpContext ctx{nullptr, &locks, hinted ? &hint : nullptr};
  std::string value;
  REQUIRE(env.tree->Insert(Key64(15), "v", ctx).ok());
  REQUIRE(env.tree->Lookup(Key64(30), &value, ctx).ok());
  REQUIRE(env.tree->Lookup(Key64(25), &value, ctx).IsNotFound());
  REQUIRE(env.tree->Insert(Key64(10), "v", ctx).IsDuplicate());
  REQUIRE(env.tree->Upsert(Key64(30), "u", ctx).ok());
  REQUIRE(env.tree->Update(Key64(20), "u", ctx).ok());
  // The key's own requests carry it, a next key's never; Update locks before any prefetch.
  REQUIRE(locks.calls == std::vector<std::string>{
                             "try insert-next " + K(20), "try write " + K(15) + " +",
                             "try read " + K(30) + " +", "try read-next " + K(30),
                             "try read " + K(10) + " +", "try write " + K(30) + " +",
                             "wait write " + K(20)});
  // A wait keeps it for the request made after the wait.
  locks.calls.clear();
  locks.busy_once = {Key64(30)};
  REQUIRE(env.tree->Lookup(Key64(30), &value, ctx).ok());
  REQUIRE(locks.calls == std::vector<std::string>{"try read " + K(30) + " +",
                                                  "wait read " + K(30) + " +",
                                                  "try read " + K(30) + " +"});
}

TEST_CASE("btree hooks: a write that waits at the leaf restarts and searches again",
          "[unit][btree][hooks]") {
  TreeEnv env(32);
  Model model;
  for (uint64_t n : {10, 20, 30}) {
    REQUIRE(env.tree->Insert(Key64(n), "v").ok());
    model[Key64(n)] = "v";
  }
  RecordingLocks locks;
  // A restart after a wait goes through the leaf hint again, and asks for the same locks.
  index::LeafHint hint;
  const bool hinted = GENERATE(false, true);
  index::OpContext ctx{nullptr, &locks, hinted ? &hint : nullptr};
  std::function<void()> meanwhile;  // what another transaction does while the write waits
  locks.while_waiting = [&] { meanwhile(); };
  auto run = [&](uint64_t busy, std::function<void()> other, std::function<Status()> op) {
    locks.calls.clear();
    locks.busy_once = {Key64(busy)};
    meanwhile = std::move(other);
    Status s = op();
    REQUIRE(locks.busy_once.empty());
    return s;
  };
  SECTION("an insert waits for its key, which stays absent") {
    auto nothing = [] {};
    REQUIRE(run(15, nothing, [&] { return env.tree->Insert(Key64(15), "t", ctx); }).ok());
    REQUIRE(locks.calls == std::vector<std::string>{"try insert-next " + K(20),
                                                    "try write " + K(15), "wait write " + K(15),
                                                    "try insert-next " + K(20),
                                                    "try write " + K(15)});
    model[Key64(15)] = "t";
  }
  SECTION("an insert waits for its key, which another inserts meanwhile: Duplicate") {
    auto other = [&] { REQUIRE(env.tree->Insert(Key64(15), "o").ok()); };
    REQUIRE(run(15, other, [&] { return env.tree->Insert(Key64(15), "t", ctx); }).IsDuplicate());
    REQUIRE(locks.calls == std::vector<std::string>{"try insert-next " + K(20),
                                                    "try write " + K(15), "wait write " + K(15),
                                                    "try read " + K(15)});
    model[Key64(15)] = "o";
  }
  SECTION("an insert waits for the gap, whose next key changes meanwhile") {
    auto other = [&] { REQUIRE(env.tree->Insert(Key64(17), "o").ok()); };
    REQUIRE(run(20, other, [&] { return env.tree->Insert(Key64(15), "t", ctx); }).ok());
    REQUIRE(locks.calls ==
            std::vector<std::string>{"try insert-next " + K(20), "wait insert-next " + K(20),
                                     "try insert-next " + K(17), "try write " + K(15)});
    model[Key64(15)] = "t";
    model[Key64(17)] = "o";
  }
  SECTION("a duplicate's key is deleted while the insert waits to read it: it inserts") {
    auto other = [&] { REQUIRE(env.tree->Delete(Key64(20)).ok()); };
    REQUIRE(run(20, other, [&] { return env.tree->Insert(Key64(20), "t", ctx); }).ok());
    REQUIRE(locks.calls == std::vector<std::string>{"try read " + K(20), "wait read " + K(20),
                                                    "try insert-next " + K(30),
                                                    "try write " + K(20)});
    model[Key64(20)] = "t";
  }
  SECTION("an upsert waits for the key it found, which is deleted meanwhile: it inserts") {
    auto other = [&] { REQUIRE(env.tree->Delete(Key64(30)).ok()); };
    REQUIRE(run(30, other, [&] { return env.tree->Upsert(Key64(30), "t", ctx); }).ok());
    REQUIRE(locks.calls == std::vector<std::string>{"try write " + K(30), "wait write " + K(30),
                                                    "try insert-next EOI", "try write " + K(30)});
    model[Key64(30)] = "t";
  }
  SECTION("an upsert waits for its key, which another inserts meanwhile: it updates") {
    auto other = [&] { REQUIRE(env.tree->Insert(Key64(25), "o").ok()); };
    REQUIRE(run(25, other, [&] { return env.tree->Upsert(Key64(25), "t", ctx); }).ok());
    REQUIRE(locks.calls == std::vector<std::string>{"try insert-next " + K(30),
                                                    "try write " + K(25), "wait write " + K(25),
                                                    "try write " + K(25)});
    model[Key64(25)] = "t";
  }
  REQUIRE(env.tree->counters().lock_waits == 1);
  RequireSameAsModel(*env.tree, model);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hooks: the next key is found across leaves, past empty ones",
          "[unit][btree][hooks]") {
  index::BtreeOptions keep_empty;  // empty leaves stay linked, as a retirement may leave one
  keep_empty.retire_empty_leaves = false;
  TreeEnv env(64, keep_empty);
  for (uint64_t n = 0; n <= 4000; n += 2) REQUIRE(env.tree->Insert(Key64(n), "value").ok());
  for (uint64_t n = 1002; n < 3000; n += 2) REQUIRE(env.tree->Delete(Key64(n)).ok());
  index::BtreeStats stats;
  RequireVerified(*env.tree, &stats);
  REQUIRE(stats.empty_leaves > 0);
  RecordingLocks locks;
  index::LeafHint hint;
  const bool hinted = GENERATE(false, true);
  std::string value;
  // Remembers the leaf of 1000 (a read for update, without locks): the insert of 1001 then
  // starts there.
  if (hinted) REQUIRE(env.tree->Lookup(Key64(1000), &value, {nullptr, nullptr, &hint}, true).ok());
  index::OpContext ctx{nullptr, &locks, hinted ? &hint : nullptr};
  REQUIRE(env.tree->Insert(Key64(1001), "v", ctx).ok());
  REQUIRE(locks.NonWrite() == std::vector<std::string>{"try insert-next " + K(3000)});
  if (hinted) REQUIRE(hint.hits == 1);
}

TEST_CASE("btree hooks: scans lock every key returned and the key after the range",
          "[unit][btree][hooks]") {
  TreeEnv env(32);
  for (uint64_t n = 10; n <= 50; n += 10) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  RecordingLocks locks;
  index::OpContext ctx{nullptr, &locks};
  auto scan = [&](ScanRange range, bool forward) {
    locks.calls.clear();
    Cursor cursor(env.tree.get(), range, ctx);
    REQUIRE((forward ? cursor.SeekToFirst() : cursor.SeekToLast()).ok());
    while (cursor.Valid()) REQUIRE((forward ? cursor.Next() : cursor.Prev()).ok());
    return locks.calls;
  };
  ScanRange closed{ScanBound::Inclusive(Key64(20)), ScanBound::Inclusive(Key64(40))};
  ScanRange half_open{ScanBound::Exclusive(Key64(10)), ScanBound::Exclusive(Key64(40))};
  ScanRange to_end{ScanBound::Inclusive(Key64(35)), ScanBound::None()};
  REQUIRE(scan(closed, true) == std::vector<std::string>{"try read " + K(20), "try read " + K(30),
                                                         "try read " + K(40),
                                                         "try read-next " + K(50)});
  REQUIRE(scan(half_open, true) == std::vector<std::string>{"try read " + K(20),
                                                            "try read " + K(30),
                                                            "try read-next " + K(40)});
  REQUIRE(scan(to_end, true) ==
          std::vector<std::string>{"try read " + K(40), "try read " + K(50), "try read-next EOI"});
  REQUIRE(scan(closed, false) == std::vector<std::string>{"try read-next " + K(50),
                                                          "try read " + K(40), "try read " + K(30),
                                                          "try read " + K(20)});
  REQUIRE(scan(to_end, false) ==
          std::vector<std::string>{"try read-next EOI", "try read " + K(50), "try read " + K(40)});
}

TEST_CASE("btree hooks: a lock that would wait is waited for with no latch held",
          "[unit][btree][hooks]") {
  TreeEnv env(32);
  for (uint64_t n = 10; n <= 50; n += 10) REQUIRE(env.tree->Insert(Key64(n), "v").ok());
  RecordingLocks locks;
  index::LeafHint hint;
  const bool hinted = GENERATE(false, true);
  std::string value;
  if (hinted) REQUIRE(env.tree->Lookup(Key64(10), &value, {nullptr, nullptr, &hint}, true).ok());
  index::OpContext ctx{nullptr, &locks, hinted ? &hint : nullptr};
  // While "waiting", other operations on the same leaf must get through: the latches are free.
  int waits = 0;
  locks.while_waiting = [&] {
    ++waits;
    std::string value;
    REQUIRE(env.tree->Lookup(Key64(20), &value).ok());
    REQUIRE(env.tree->Upsert(Key64(99), "w").ok());
  };
  locks.busy_once = {Key64(20)};
  REQUIRE(env.tree->Insert(Key64(15), "v", ctx).ok());
  REQUIRE(locks.NonWrite() == std::vector<std::string>{"try insert-next " + K(20),
                                                       "wait insert-next " + K(20),
                                                       "try insert-next " + K(20)});
  // Both attempts used the leaf, the second after the version had changed meanwhile.
  if (hinted) REQUIRE(hint.hits == 2);
  locks.calls.clear();
  locks.busy_once = {Key64(30)};
  Cursor cursor(env.tree.get(),
                ScanRange{ScanBound::Inclusive(Key64(20)), ScanBound::Inclusive(Key64(40))}, ctx);
  std::vector<std::string> seen;
  REQUIRE(cursor.SeekToFirst().ok());
  while (cursor.Valid()) {
    seen.emplace_back(cursor.key());
    REQUIRE(cursor.Next().ok());
  }
  REQUIRE(seen == std::vector<std::string>{Key64(20), Key64(30), Key64(40)});
  REQUIRE(waits == 2);
  REQUIRE(env.tree->counters().lock_waits == 2);
  RequireVerified(*env.tree);
}

TEST_CASE("btree hooks: a lock error ends the operation and changes nothing",
          "[unit][btree][hooks]") {
  TreeEnv env(32);
  REQUIRE(env.tree->Insert(Key64(1), "v").ok());
  RecordingLocks locks;
  locks.fail = Status::Deadlock("victim");
  index::OpContext ctx{nullptr, &locks};
  REQUIRE(env.tree->Insert(Key64(2), "v", ctx).IsDeadlock());
  REQUIRE(env.tree->Delete(Key64(1), ctx).IsDeadlock());
  std::string value;
  REQUIRE(env.tree->Lookup(Key64(1), &value, ctx).IsDeadlock());
  Cursor cursor(env.tree.get(), {}, ctx);
  REQUIRE(cursor.SeekToFirst().IsDeadlock());
  REQUIRE(!cursor.Valid());
  RequireSameAsModel(*env.tree, Model{{Key64(1), "v"}});
}
