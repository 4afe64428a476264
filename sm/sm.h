// sm/sm.h: the public API of the storage manager - the only header applications, tpcc/ and
// query/ include.
//
// A database is a directory holding a data volume ("data.sm"), a write-ahead log ("log/") and
// a small metadata file ("sm.meta"). It stores tables: ordered maps from byte-string keys to
// byte-string values, each a B+-tree. Keys compare with memcmp (encode composite keys with
// sm::KeyEncoder and read them back with sm::KeyDecoder, from sm/common/key_encoding.h, which
// this header includes; or use any memcmp-comparable encoding); a key is at
// most 1024 bytes and a value at most 256 MiB (larger is InvalidArgument). A value too large
// for a leaf (key + value above 1974 bytes) is kept in chunks in the table's value tree and
// read back whole by every read (docs/design/api.md, "Large values"); Add does not apply to it.
//
// Transactions are serializable by default (two-phase locking with key-range locks, so no
// phantoms) or read committed, chosen per transaction. Every change is logged; Open runs
// ARIES restart recovery when the last run did not close cleanly and reports what it did.
// Commit is durable by default; Options::commit_mode selects async (durable within a bounded
// delay, as many benchmarks measure) or none. A committing transaction's locks are released
// once its commit record is in the log, before it is durable; a durable Commit returns only
// once it is, and so does a read-only one that may have read such data.
//
// Secondary indexes are tables whose entries the application maintains in the same
// transaction as the base row: an index created with CreateIndex is a non-unique table whose
// key is the secondary key followed by the row's primary key (IndexKey), found with a prefix
// scan (Table::NewCursor with ScanOptions::Prefix).
//
// Errors are Status values (sm/common/status.h). A call's comment names the errors particular
// to it; these are the codes the API returns and what they mean:
//   NotFound         an absent key or table, or no database at the path (create_if_missing)
//   Duplicate        the key or table exists
//   InvalidArgument  a bad key, value, option or handle: a null or foreign transaction, a key
//                    or record beyond the limits above, Close with transactions active; a
//                    change to a database opened read-only, or a read-only open of one that
//                    needs recovery (Options::read_only)
//   TxnFinished      a call on a transaction that has committed or aborted, or on a cursor
//                    whose transaction has
//   Deadlock, LockTimeout  retryable (Status::IsRetryable): the engine has rolled the
//                    transaction back (see Transaction); run it again
//   Aborted          writing or freeing a large value's chunks failed after its stub was
//                    written (the message says why): the engine has rolled the transaction
//                    back, as after a deadlock, so that no commit keeps half of the value
//   Busy             the database directory is open in another Database or process
//   Corruption       a checksum or a structure check failed (the message names the page or
//                    the log record)
//   IOError          the operating system refused a file operation, or a fiber's stack
//   NoSpace          the disk is full; unless the log or a rollback needed the space, the
//                    database stays usable
//   NotSupported     a log or page format this version does not read
//   Closed           the database is closed
//   Fatal            the log or the volume failed to write or sync, or a rollback failed: the
//                    database refuses changes and acknowledges no commit, not even a
//                    read-only one, until it is reopened, when recovery decides the outcome of
//                    the transactions that were in flight
// status.h's other code (LogFull) is internal and never returned. Misuse returns an
// error; it never corrupts the database.
//
// Thread/fiber safety: Database, Table and the statistics are safe from any number of plain
// threads and of fibers on the database's runtime (Database::Spawn); a fiber that waits for a
// lock, a page read or a log flush is suspended and its worker runs other fibers. A
// Transaction and a Cursor are used by one thread or fiber at a time, and a call on a cursor
// is a use of its transaction. Handles (Table*) stay valid until the database is closed.
//
// Lifetime: Transaction and Cursor objects may outlive their Database. Close refuses while a
// transaction is active; the Database's destructor aborts the transactions still active and
// then closes. From then on those objects are inert: every call returns Closed, active() and
// Valid() are false, and destroying them is safe (destroying an active transaction still
// aborts it while the database is open). A cursor whose transaction object is destroyed
// first is inert likewise, its calls returning TxnFinished. Close and the destructor must not
// run while another thread or fiber is using one of the database's transactions or cursors,
// nor on a fiber of the database's runtime.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sm/common/key_encoding.h"
#include "sm/common/status.h"

namespace sm {

namespace io {
class FileSystem;
}
namespace threads {
class WaitGroup;
}
namespace api {
class DatabaseImpl;
}

enum class CommitMode : uint8_t { kDurable, kAsync, kNone };
enum class Isolation : uint8_t { kSerializable, kReadCommitted };
const char* CommitModeName(CommitMode mode);  // "durable", "async", "none"
// Options::miss_interleaving.
enum class MissInterleaving : uint8_t { kOff, kOn, kAdaptive };
const char* MissInterleavingName(MissInterleaving mode);  // "off", "on", "auto"
// The mode named by MissInterleavingName; false if `name` names none.
bool ParseMissInterleaving(std::string_view name, MissInterleaving* mode);

struct Options {
  std::string path;  // the database directory
  bool create_if_missing = true;
  bool error_if_exists = false;
  // Opens an existing database for reading only and writes nothing to its directory, ever: no
  // recovery, checkpoint, log write, control-file or meta-file update, no growth of the data
  // file (reserve_free_bytes is ignored), no free-space reclamation, no background writer or
  // checkpointer, and Close writes no page. The files are opened read-only, so a directory
  // the process may not write serves (its LOCK file must exist, as every database's does; the
  // lock is still taken, so a writer and a reader never share a directory). For inspecting a
  // database that must not change (a backup, evidence, a replica being diagnosed).
  //   - A database that did not close cleanly, whose recovery would have work to do, is
  //     refused: InvalidArgument saying it needs recovery (OpenReport::needs_recovery), which
  //     a read-write open performs. A missing database is NotFound (create_if_missing does
  //     not apply).
  //   - Transactions begin, read, scan, GetForUpdate and commit as usual (they log nothing);
  //     Verify and Prewarm work. Every call that would change the database (Insert, Update,
  //     Upsert, Delete, Add, CreateTable, CreateIndex, DropTable, Checkpoint) returns
  //     InvalidArgument naming the call and read-only, and changes nothing.
  bool read_only = false;
  // The defaults suit an embedded database: a few MiB on disk and in memory at open, growing
  // with use. The pool's memory is taken as its frames are first used, up to this size.
  // Servers and benchmarks set larger values (the TPC-C driver: its --buffer-pool and
  // --log-buffer, 64 MiB log segments and a prefaulted pool).
  size_t buffer_pool_bytes = 64u << 20;
  // A background thread has the kernel back the pool's memory a window (64 MiB) ahead of the
  // pages in use, so that no operation waits while the kernel zeroes memory it touches first
  // (a whole huge page at a time: sm/buffer/pool_memory.h). It costs that window of memory at
  // open and a thread, so it is off by default.
  bool prefault_pool = false;
  // The buffer pool's background writer wakes this often (and whenever eviction meets dirty
  // pages) to write the dirty pages whose oldest unwritten change lies at least
  // background_write_log_lag_bytes of log behind its end (0: every dirty page) and that has
  // not changed for background_write_quiet (0: regardless), or any dirty page when clean
  // frames run short; 0: only for eviction. Rewriting a page that is still changing buys
  // nothing: it is dirty again at once, and a checkpoint writes every dirty page anyway.
  // Checkpoints, eviction and close write pages regardless.
  std::chrono::milliseconds background_write_interval{100};
  uint64_t background_write_log_lag_bytes = 256ull << 20;
  std::chrono::milliseconds background_write_quiet{5000};
  // At open, the data file grows (in whole extents) until at least this many bytes of it are
  // free, so that no operation waits for the file to grow until that space is used up (0: the
  // file grows only when it is full).
  uint64_t reserve_free_bytes = 0;
  uint64_t log_segment_bytes = 4ull << 20;  // for a new database; preallocated whole
  // Log segments a checkpoint retires are kept for reuse, up to this many bytes (the rest are
  // deleted), so the log's files stay at about the size one checkpoint interval needs. A
  // sync after a write into a reused segment commits no file-system metadata, so it is shorter
  // than one into a new segment, and durable commits wait for it (log/log_manager.h,
  // "Segments"; bench_log's durable_commits_per_s_1fiber times that wait).
  uint64_t log_spare_bytes = 64ull << 20;
  size_t log_buffer_bytes = 1u << 20;  // the log's in-memory ring (a multiple of 4 KiB, >= 16 KiB)
  CommitMode commit_mode = CommitMode::kDurable;
  // Background fuzzy checkpoints (which also truncate the log); 0 disables them.
  std::chrono::milliseconds checkpoint_interval{30000};
  // A background checkpoint spreads its page writes over this fraction of the interval (in
  // [0, 1); 0: as fast as it can), so that it does not take the device and a core from the
  // transactions at once (PostgreSQL's checkpoint_completion_target). The log is truncated
  // when the checkpoint ends, so it keeps this much more of it. Checkpoint() and Close write
  // at once, and hurry a background checkpoint in progress.
  double checkpoint_spread = 0.5;
  // Worker threads of the fiber runtime (Database::Spawn); 0: one per core.
  unsigned workers = 2;
  // STEPS: fibers on the runtime run each storage operation (begin, commit, index fetch, scan,
  // insert, update, delete) in an execution team and switch among teammates at the enabled CTX
  // points. Process-wide (one fiber scheduler): the first database opened with steps installs
  // it, and closing that database removes it.
  bool steps = false;
  uint32_t steps_team_size = 32;  // the team-size cap
  // How many times a team may be passed over for the team the last member joined (the
  // paper's policy, which keeps teams together); bounds what a long transaction run alone
  // makes the worker's other teams wait (steps/steps.h).
  uint32_t steps_max_pass_overs = 4096;
  // With steps: each worker probes, in short epochs, its transaction rate with teams and
  // without, and runs the faster (STEPS pays only where the instruction misses it saves cost
  // more than its switches; that depends on the machine and the workload).
  bool steps_adaptive = false;
  std::string ctx_placement;      // a CTX placement file; empty: the built-in default
  // Miss interleaving: a B-tree descent about to read a leaf asks for its first cache lines and
  // lets the worker's other ready fibers run while they arrive (index/btree.h). It pays where
  // the leaves are not in the CPU cache (tables far larger than it, random point operations,
  // several fibers per worker: bench_btree's lookups_per_s_1w with --miss-interleaving on
  // against off) and costs where they are (TPC-C at one warehouse: tpcc run's
  // throughput_tx_per_s with --miss-interleaving on against off). kAdaptive: each worker
  // measures which is faster for it, in short alternating epochs, and runs that.
  MissInterleaving miss_interleaving = MissInterleaving::kAdaptive;
  std::chrono::milliseconds lock_wait_timeout{10000};
  // Every file goes through this (tests inject faults); null: the POSIX file system.
  io::FileSystem* file_system = nullptr;
  bool direct_io = true;  // O_DIRECT for the log
};

// What Open did. After a failed Open, opened is false and the rest says how far it got.
struct OpenReport {
  bool opened = false;   // Open succeeded
  bool read_only = false;  // Options::read_only
  // A read-only Open refused the database because restart recovery would have work to do.
  bool needs_recovery = false;
  bool created = false;
  bool recovered = false;  // restart recovery had work to do (the last run did not close)
  uint64_t tables = 0;
  std::string recovery;  // the recovery report, one paragraph ("recovery: ...")
  // Recovery's figures: page records redone (or found already on disk), log bytes redo
  // scanned, transactions rolled back, and the time of analysis + redo + undo.
  uint64_t redo_records = 0;
  uint64_t redo_bytes = 0;
  uint64_t losers = 0;
  uint64_t torn_pages_repaired = 0;  // data pages a crash tore, rebuilt from full images
  // Damaged allocation-map copies found (the volume keeps two per range and used the other),
  // and the tree pages the surviving, possibly older, copy lacked and Open marked allocated.
  uint64_t map_copies_rejected = 0;
  uint64_t pages_remarked = 0;
  // Pages allocated in no tree that Open gave back (leaves retired, pages of creates that
  // aborted or of splits a crash cut short), those it kept because they do not read back
  // intact (Verify names them), and why it gave back none if a tree's walk failed (empty
  // otherwise: a damaged tree keeps every page; Verify names the damage).
  uint64_t orphan_pages_freed = 0;
  uint64_t orphan_pages_damaged = 0;
  std::string orphan_sweep_skipped;
  double recovery_seconds = 0;
  std::string ToString() const;
};

struct DatabaseStats {
  uint64_t txn_begun = 0, txn_committed = 0, txn_aborted = 0, txn_failed = 0;
  uint64_t checkpoints = 0;
  uint64_t lock_requests = 0, lock_waits = 0, deadlocks = 0, lock_timeouts = 0;
  uint64_t log_bytes = 0, log_syncs = 0;
  uint64_t log_space_waits = 0;  // log records that waited for room in the log buffer
  double commits_per_sync = 0;
  uint64_t pool_hits = 0, pool_misses = 0, pool_writes = 0, pool_dirty_pages = 0;
  uint64_t pool_hinted_hits = 0;  // of pool_hits, those through a remembered frame (no table)
  // The data file's 8 KiB pages: all of them, and those in use (trees, the allocation map,
  // the pages of dropped tables not yet given back).
  uint64_t volume_pages = 0, volume_pages_allocated = 0;
  std::string ToString() const;  // several lines, for reports
};

// A scan range: each bound absent, inclusive or exclusive.
struct ScanOptions {
  std::string lower, upper;
  bool has_lower = false, has_upper = false;
  bool lower_inclusive = true, upper_inclusive = false;
  bool reverse = false;  // start at the upper end and move down

  static ScanOptions All() { return {}; }
  // [lower, upper)
  static ScanOptions Range(std::string_view lower, std::string_view upper);
  // every key that starts with prefix
  static ScanOptions Prefix(std::string_view prefix);
};

class Transaction;
class Cursor;
class Database;

// A table or index handle, owned by its Database.
class Table {
 public:
  virtual ~Table() = default;
  virtual const std::string& name() const = 0;
  virtual uint32_t id() const = 0;
  virtual bool unique() const = 0;  // false for an index made by CreateIndex

  // NotFound if absent.
  [[nodiscard]] virtual Status Get(Transaction* txn, std::string_view key,
                                   std::string* value) = 0;
  // Get for a row the transaction will update (SELECT ... FOR UPDATE): the row is locked
  // exclusively until the transaction ends, at any isolation, so the Update that follows takes
  // no new lock, and two transactions reading one row to update it queue at the read instead
  // of deadlocking when both try to upgrade a shared lock. An absent key is locked as by Get.
  [[nodiscard]] virtual Status GetForUpdate(Transaction* txn, std::string_view key,
                                            std::string* value) = 0;
  // Get, or GetForUpdate with for_update, of each key in turn, with that call's locks and
  // results: `row` gets each key's index and outcome in order, OK with the row's value or
  // NotFound (empty value), and returns false to stop. Faster than the calls one after another
  // for keys spread over more leaves than the CPU caches hold: a key's leaf starts loading a few
  // keys ahead of its read. Returns the first error other than NotFound (the keys before it were
  // read; the batch stops there), as a Get of that key would (also when `row` has ended the
  // transaction), else OK.
  using RowFn = std::function<bool(size_t index, const Status& found, std::string_view value)>;
  [[nodiscard]] virtual Status GetMany(Transaction* txn, const std::vector<std::string_view>& keys,
                                       bool for_update, const RowFn& row) = 0;
  // Duplicate if present.
  [[nodiscard]] virtual Status Insert(Transaction* txn, std::string_view key,
                                      std::string_view value) = 0;
  // NotFound if absent.
  [[nodiscard]] virtual Status Update(Transaction* txn, std::string_view key,
                                      std::string_view value) = 0;
  [[nodiscard]] virtual Status Upsert(Transaction* txn, std::string_view key,
                                      std::string_view value) = 0;
  // NotFound if absent.
  [[nodiscard]] virtual Status Delete(Transaction* txn, std::string_view key) = 0;
  // Edits the value of `key` in place, in one operation where GetForUpdate then Update are
  // two: under the row's exclusive lock (taken as Update takes it), `edit` gets a copy of the
  // value's bytes, whose number cannot change, and what it leaves there becomes the new value,
  // written and logged as Update writes it. `edit` may run more than once (the write restarted
  // after waiting), each time on the current bytes, and must not use the database. NotFound if
  // absent; NotSupported for a large value (Update it instead).
  using ValueEdit = std::function<void(char* value, size_t size)>;
  [[nodiscard]] virtual Status Modify(Transaction* txn, std::string_view key,
                                      const ValueEdit& edit) = 0;
  // Adds `delta` to the counter at value bytes [offset, offset + 8) of the key's row, a
  // little-endian int64_t, under an increment (escrow) lock: transactions that only Add to a
  // row share it and never wait for each other there, while a Get, Update or Delete of the row
  // waits for every adder to finish (and an Add for them), at any isolation. Meant for sums
  // that many transactions bump (a year-to-date total, a stock count without a floor). *value
  // (if not null) receives the row after the addition: its counters include other adders'
  // uncommitted additions; the bytes no transaction adds to are committed. An abort subtracts
  // the delta again, keeping what others added meanwhile. A transaction that adds to a row and
  // then reads or writes it otherwise upgrades to an exclusive lock, waiting for the other
  // adders. NotFound if absent; InvalidArgument if the counter lies outside the value, the
  // value is a large one (kept out of the leaf: see the top) or the sum leaves int64_t (the
  // row is unchanged).
  [[nodiscard]] virtual Status Add(Transaction* txn, std::string_view key, uint32_t offset,
                                   int64_t delta, std::string* value = nullptr) = 0;
  // A cursor positioned on the first key of the range (last, if reverse); check Valid(). If
  // *cursor holds a cursor of this library (of any table or transaction), that object becomes
  // the new cursor, keeping its buffers (the cheapest way to run one scan after another: once
  // they have grown nothing is allocated); anything else in *cursor is destroyed. On failure
  // *cursor is empty.
  [[nodiscard]] virtual Status NewCursor(Transaction* txn, const ScanOptions& options,
                                         std::unique_ptr<Cursor>* cursor) = 0;
  // Up to parts - 1 ascending keys strictly inside `range` that cut it into parts of about
  // equal size, for sharing a scan among threads: part 0 runs from the range's start to cut 0
  // (exclusive), part i from cut i - 1 (inclusive) to cut i, the last from the last cut to the
  // range's end. The keys are read from the B-tree's inner nodes: no row is read or locked,
  // and any keys would cut the range correctly, so rows committed meanwhile only make the
  // parts less even. Fewer cuts (none) for a range of few (one) leaves. InvalidArgument for a
  // reverse range or parts == 0.
  [[nodiscard]] virtual Status SplitRange(Transaction* txn, const ScanOptions& range, size_t parts,
                                          std::vector<std::string>* cuts) = 0;
};

// A position in a table's key range (ScanOptions), moved in key order by the Seek calls and
// in the scan's direction by Next (Prev: against it), like LevelDB's and RocksDB's iterators.
// Every move takes the locks a scan to that row would (next-key locks under serializable).
// A cursor is Valid() only on a row and while its transaction is active: once the transaction
// has finished (committed, aborted, rolled back by the engine, its object or database gone)
// it is !Valid(), status() says why, and every call but status() returns that status.
class Cursor {
 public:
  virtual ~Cursor() = default;
  virtual bool Valid() const = 0;
  // OK while the cursor may be used (also when it is exhausted); else why it may not.
  [[nodiscard]] virtual Status status() const = 0;
  virtual std::string_view key() const = 0;    // the row's, while Valid()
  virtual std::string_view value() const = 0;  // the row's, while Valid()
  // Moves in the scan's direction; an exhausted cursor becomes !Valid() with OK.
  [[nodiscard]] virtual Status Next() = 0;
  // Moves against the scan's direction (to the previous key of a forward scan); past the
  // range's end the cursor becomes !Valid() with OK.
  [[nodiscard]] virtual Status Prev() = 0;
  // Positioned in key order within the range, whatever the scan's direction, on a valid or
  // an exhausted cursor: the smallest key; the largest; the smallest key >= `key`; the largest
  // key <= `key`. !Valid() with OK if there is no such row.
  [[nodiscard]] virtual Status SeekToFirst() = 0;
  [[nodiscard]] virtual Status SeekToLast() = 0;
  [[nodiscard]] virtual Status Seek(std::string_view key) = 0;
  [[nodiscard]] virtual Status SeekForPrev(std::string_view key) = 0;
  // Moves forward over up to `max_rows` rows, calling row(key, value) for each, and stops
  // after a row for which `row` returns false; *visited: the rows passed to `row`. The same
  // rows, with the same locks, as calling Next and reading key() and value() for each, but
  // cheaper for a scan: the rows of one page are read under one latch, without a copy each (the
  // views are valid only during the call, which must not use the database), and a read-
  // committed transaction reads without per-row read locks the pages of a table that no other
  // transaction is writing (their rows are committed). Afterwards the cursor is on the last
  // row visited, or !Valid() at the end. Forward cursors only (InvalidArgument if reverse).
  using RowVisitor = std::function<bool(std::string_view key, std::string_view value)>;
  [[nodiscard]] virtual Status NextBatch(size_t max_rows, const RowVisitor& row, size_t* visited);
};

// A transaction that meets a retryable error (Deadlock: it was chosen as a deadlock victim;
// LockTimeout: a lock wait outlasted Options::lock_wait_timeout) is rolled back by the engine
// before that call returns, as InnoDB and PostgreSQL roll back theirs: none of its changes
// remain, its locks are released so that the others go on, active() is false, and every later
// call on it returns that same error - Commit too, which commits nothing - except Abort, which
// returns OK (the rollback asked for has happened). The same holds after Aborted (a large
// value written in part). To retry, begin it again (Database::Begin may reuse the object).
class Transaction {
 public:
  virtual ~Transaction() = default;  // aborts if still active
  virtual uint64_t id() const = 0;
  virtual Isolation isolation() const = 0;
  virtual bool active() const = 0;
  [[nodiscard]] virtual Status Commit() = 0;
  [[nodiscard]] virtual Status Commit(CommitMode mode) = 0;
  [[nodiscard]] virtual Status Abort() = 0;
};

// Waits for fibers spawned with it (Database::Spawn), like Go's sync.WaitGroup: a fiber
// counts from its Spawn until its function returns. Wait suspends a calling fiber of the
// database's runtime (its worker runs other fibers meanwhile) or blocks a plain thread until
// the count is zero; the destructor waits likewise, so that no fiber outlives the group it
// counts in. A group may be used again after Wait, and with several databases.
// Thread/fiber safety: safe from any thread or fiber.
class WaitGroup {
 public:
  WaitGroup();
  ~WaitGroup();  // waits
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  void Wait();
  // The fibers counted that have not finished.
  uint64_t count() const;

 private:
  friend class api::DatabaseImpl;  // Spawn counts its fibers
  std::unique_ptr<threads::WaitGroup> impl_;
};

class Database {
 public:
  // Opens (recovering if needed) or creates the database at options.path (read-only: neither;
  // see Options::read_only). A directory is open in one Database at a time (it holds the
  // directory's LOCK file until Close): Busy if another process or another Database of this
  // one has it open.
  [[nodiscard]] static Status Open(const Options& options, std::unique_ptr<Database>* db,
                                   OpenReport* report = nullptr);
  // If Close was not called: aborts the transactions still active, then closes (ignoring the
  // status).
  virtual ~Database() = default;

  // Checkpoints, writes every page, and closes (read-only: writes nothing); later calls return
  // Closed, also those on the database's Transaction and Cursor objects (see "Lifetime" at
  // the top). InvalidArgument, changing nothing, while a transaction is active, or when called
  // from a fiber of the database's runtime (Close waits for those fibers). Fibers still
  // running (Spawn) are not stopped: Close waits until each has returned, and meanwhile their
  // calls on the database return Closed and their Spawns fail; a fiber that never returns (one
  // that ignores errors in a loop, or waits for something only the closing thread would do)
  // makes Close wait forever.
  [[nodiscard]] virtual Status Close() = 0;

  // Names starting with a NUL byte are reserved for the catalog (InvalidArgument).
  [[nodiscard]] virtual Status CreateTable(std::string_view name, Table** table) = 0;
  // A non-unique index table; see IndexKey.
  [[nodiscard]] virtual Status CreateIndex(std::string_view name, Table** index) = 0;
  // NotFound if there is no such table or index.
  [[nodiscard]] virtual Status OpenTable(std::string_view name, Table** table) = 0;
  // Removes the table from the catalog, durably; handles to it then return NotFound. Its pages
  // go back to the volume for reuse once every transaction that was active at the drop has
  // finished: at once if none was, else at the next CreateTable, DropTable, Checkpoint or
  // Close after they have. A crash before that does not leak them: the next Open finishes the
  // reclamation before its first transaction.
  [[nodiscard]] virtual Status DropTable(std::string_view name) = 0;
  virtual std::vector<std::string> TableNames() = 0;

  // Begins a transaction in *txn. If *txn holds a finished transaction of this database, that
  // object begins again (the cheapest way to run one transaction after another: nothing is
  // allocated); anything else in *txn is destroyed, which aborts it if it is still active.
  [[nodiscard]] virtual Status Begin(std::unique_ptr<Transaction>* txn,
                                     Isolation isolation = Isolation::kSerializable) = 0;
  [[nodiscard]] virtual Status Checkpoint() = 0;
  // Checks every table's B-tree invariants (and the catalog's), that every other allocated page
  // reads back intact, and every record of the retained log; Corruption names the page or the
  // log record's LSN.
  [[nodiscard]] virtual Status Verify() = 0;
  // Reads the database's pages into the buffer pool in file order until the pool is nine
  // tenths full or every page is resident (like PostgreSQL's pg_prewarm): a warm cache without
  // a warm-up run, for measurements that must not wait for reads. *pages: the pages read.
  [[nodiscard]] virtual Status Prewarm(uint64_t* pages = nullptr) = 0;
  virtual DatabaseStats stats() = 0;

  // Runs fn on a fiber of the database's runtime (worker -1: round robin; fibers of one
  // worker take turns, and switch at their waits). With a group, the fiber counts in it until
  // fn returns (WaitGroup::Wait). fn must not throw. Closed once Close has begun (fn does not
  // run); IOError if the kernel refuses the fiber's stack: the message names the limit, the
  // process's memory, or its count of memory mappings (vm.max_map_count, of which each
  // fiber alive takes two).
  [[nodiscard]] virtual Status Spawn(std::function<void()> fn, int worker = -1,
                                     WaitGroup* group = nullptr) = 0;
  virtual unsigned workers() const = 0;
};

// The key of an index entry: the secondary key, then the primary key, so that entries of equal
// secondary keys are adjacent and unique. A prefix scan for s finds them, for any encoded s
// that is itself memcmp-comparable and prefix-free (e.g. built with KeyEncoder); the primary
// key is then the rest of the entry's key.
std::string IndexKey(std::string_view secondary_key, std::string_view primary_key);

// Removes the database at options.path (through options.file_system, or the POSIX one): its log,
// data file and meta file, then the directory, as LevelDB's DestroyDB does. Only a database's
// directory is removed: NotFound if there is none; InvalidArgument, removing nothing, if it has
// no meta file of ours or holds any other file; Busy if a Database has it open. A database of
// another format version is removed too (that is the way to start over with it). A removal cut
// short leaves a directory that a second call finishes.
[[nodiscard]] Status DestroyDatabase(const Options& options);

// The library's version, "MAJOR.MINOR.PATCH": the CMake project version, which an application
// can also require with find_package(sm 0.1). It names the release of the code; the on-disk
// format has versions of its own (docs/design/api.md says what a change of them means).
const char* Version();

}  // namespace sm
