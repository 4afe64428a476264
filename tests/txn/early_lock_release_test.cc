// Early lock release at commit (sm/txn/txn_manager.h, "Commit"): a committing transaction's
// locks are released before its commit record is durable, so other transactions read its data
// meanwhile; the committer is acknowledged only once the record is durable, and so is a
// read-only transaction that may have read such data.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "sm/io/testing/fault_file.h"
#include "sm/sm.h"
#include "tests/api/api_test_util.h"
#include "tests/forwarding_fs.h"

namespace sm {
namespace {

// Syncs of the log's files wait while the gate is closed.
class GatedLogSyncs final : public test::ForwardingFileSystem {
 public:
  explicit GatedLogSyncs(io::FileSystem* base) : ForwardingFileSystem(base) {}
  void Close() {
    std::lock_guard<std::mutex> guard(mu_);
    open_ = false;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> guard(mu_);
      open_ = true;
    }
    cv_.notify_all();
  }
  void WaitUntilOpen() {
    std::unique_lock<std::mutex> guard(mu_);
    cv_.wait(guard, [&] { return open_; });
  }

 protected:
  std::unique_ptr<io::File> WrapFile(std::unique_ptr<io::File> inner) override {
    if (inner->path().find("/log/") == std::string::npos) return inner;
    return std::make_unique<GatedFile>(std::move(inner), this);
  }

 private:
  class GatedFile final : public test::ForwardingFile {
   public:
    GatedFile(std::unique_ptr<io::File> inner, GatedLogSyncs* gate)
        : ForwardingFile(std::move(inner)), gate_(gate) {}
    Status Sync() override {
      gate_->WaitUntilOpen();
      return ForwardingFile::Sync();
    }

   private:
    GatedLogSyncs* gate_;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
};

// A database with table "t" holding k = `value`, committed durably.
std::unique_ptr<Database> OpenWithRow(const Options& o, const std::string& value, Table** t) {
  std::unique_ptr<Database> db;
  REQUIRE(Database::Open(o, &db).ok());
  REQUIRE(db->CreateTable("t", t).ok());
  std::unique_ptr<Transaction> txn;
  REQUIRE(db->Begin(&txn).ok());
  REQUIRE((*t)->Insert(txn.get(), "k", value).ok());
  REQUIRE(txn->Commit().ok());
  return db;
}

TEST_CASE("a durable commit releases its locks before its record is durable", "[unit][txn]") {
  io::FaultInjectionFileSystem base(81);
  GatedLogSyncs fs(&base);
  Options o = test::SmallDbOptions(&base);
  o.file_system = &fs;
  o.commit_mode = CommitMode::kDurable;
  o.lock_wait_timeout = std::chrono::milliseconds(5000);
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithRow(o, "v0", &t);

  fs.Close();
  std::atomic<bool> writer_updated{false}, writer_done{false};
  Status writer_status;
  std::thread writer([&] {
    std::unique_ptr<Transaction> txn;
    REQUIRE(db->Begin(&txn).ok());
    REQUIRE(t->Update(txn.get(), "k", "v1").ok());
    writer_updated = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader queues behind
    writer_status = txn->Commit();  // waits for the gated sync
    writer_done = true;
  });
  while (!writer_updated.load()) std::this_thread::yield();

  // The reader waits for the writer's lock until the writer commits, then reads its value
  // while the writer still waits for the sync.
  std::unique_ptr<Transaction> reader;
  REQUIRE(db->Begin(&reader).ok());
  std::string value;
  Status read = t->Get(reader.get(), "k", &value);
  INFO(read.ToString());
  CHECK(read.ok());  // not REQUIRE: the gate must open before the threads are joined
  CHECK(value == "v1");
  CHECK_FALSE(writer_done.load());

  // The reader logged nothing, yet it saw data that is not durable: its commit waits too.
  std::atomic<bool> reader_done{false};
  Status reader_status;
  std::thread reader_commit([&] {
    reader_status = reader->Commit();
    reader_done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK_FALSE(reader_done.load());
  CHECK_FALSE(writer_done.load());

  fs.Open();
  writer.join();
  reader_commit.join();
  CHECK(writer_status.ok());
  CHECK(reader_status.ok());
  REQUIRE(db->Close().ok());
}

TEST_CASE("a read-only durable commit costs no sync once every released commit is durable",
          "[unit][txn]") {
  io::FaultInjectionFileSystem fs(82);
  Options o = test::SmallDbOptions(&fs);
  o.commit_mode = CommitMode::kDurable;
  Table* t = nullptr;
  std::unique_ptr<Database> db = OpenWithRow(o, "v", &t);
  std::unique_ptr<Transaction> txn;
  // Nothing is waiting to become durable: read-only commits cost no sync.
  const uint64_t syncs = db->stats().log_syncs;
  for (int i = 0; i < 20; ++i) {
    REQUIRE(db->Begin(&txn).ok());
    std::string value;
    REQUIRE(t->Get(txn.get(), "k", &value).ok());
    REQUIRE(txn->Commit().ok());
  }
  CHECK(db->stats().log_syncs == syncs);
  REQUIRE(db->Close().ok());
}

}  // namespace
}  // namespace sm
