// The implementation classes behind sm/sm.h: DatabaseImpl (the engine's parts wired together,
// the catalog, the meta file), TableImpl, TransactionImpl and CursorImpl.
//
// Owns: the order in which the parts are built and torn down (file system, volume, log, buffer
// pool, lock manager, transaction manager, B-tree logger, runtime), the catalog and the table
// handles, and the translation of public calls into B-tree operations with a transaction's
// logging and key-lock context.
//
// Catalog: a B-tree (table id 1) whose root page id is in the meta file; key = table name,
// value = CatalogEntry (catalog.cc). DDL runs in an internal serializable transaction that
// locks the name's key, so concurrent DDL on one name serializes and a crash in the middle is
// undone like any transaction. Table ids are never reused within a database run (max + 1).
// Names that begin with a NUL byte are the engine's: a dropped table whose pages are not yet
// all given back has an entry of kind kDropped under PendingDropKey(its id) (drop.cc); users
// may not create or drop such names.
//
// Lifetime of the user's objects: a TransactionImpl, and a CursorImpl through the transaction
// object it was made in, may outlive the DatabaseImpl (sm.h). The database keeps a list of its
// live transaction objects (live_txns_), each transaction object a list of its cursors
// (TxnCursor). Close, or the destructor of a database that was not closed, detaches them all
// (DetachTxns, TransactionImpl::Detach): an active transaction is aborted, its Txn goes back
// to the transaction manager while the lock manager still exists, and from then on the object
// touches nothing of the database and every call on it returns Closed. A transaction object
// destroyed first detaches its cursors the same way (their calls return TxnFinished).
// Read-only (Options::read_only): OpenParts opens the volume and the log read-only and starts
// no background writer; OpenExisting runs recovery's analysis alone (Restart), refusing a
// database whose recovery would have work, and neither resumes drops nor frees pages in no
// tree; every entry point that would change the database (TableImpl::Write and Add, Create,
// DropTable, Checkpoint) returns RefuseReadOnly before it touches anything, so no page is ever
// dirtied and nothing logged, which CloseReadOnly asserts before it closes without writing.
//
// Invariants:
//   1. A TransactionImpl is in live_txns_ iff db_ is set (it is attached); detached, txn_ is
//      null.
//   2. A CursorImpl is in the cursor list of the transaction object txn_ names iff txn_ is set.
//
// Thread/fiber safety: as sm/sm.h says; tables_mu_ guards the handle map, reclaim_mu_ the
// pending drops (taken before tables_mu_ where both are held), live_txns_mu_ the list of live
// transaction objects. A cursor's calls count as calls on its transaction object (they share
// its key-lock hooks and its cursor list).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include <boost/intrusive/list.hpp>

#include "index/btree.h"
#include "index/btree_locks.h"
#include "index/btree_wal.h"
#include "log/log_manager.h"
#include "sm/api/large_values.h"
#include "sm/buffer/buffer_pool.h"
#include "sm/io/aligned_buffer.h"
#include "sm/io/file.h"
#include "sm/lock/lock_manager.h"
#include "sm/sm.h"
#include "sm/space/volume.h"
#include "sm/txn/page_frees.h"
#include "sm/txn/txn_manager.h"
#include "steps/steps.h"
#include "threads/runtime.h"
#include "threads/sync.h"

namespace sm::api {

inline constexpr uint32_t kCatalogTableId = 1;
inline constexpr uint32_t kFirstUserTableId = 2;

// kDropped: a pending-drop entry (drop.cc), never a table. Versions without it refuse a
// catalog that holds one (a damaged entry) rather than misread it.
// kValues: a table's value tree (large_values.h), under ValueTreeName(owner id).
enum class TableKind : uint8_t { kTable = 1, kIndex = 2, kDropped = 3, kValues = 4 };

struct CatalogEntry {
  TableKind kind = TableKind::kTable;
  uint32_t id = 0;
  PageId root;
};
std::string EncodeCatalogEntry(const CatalogEntry& entry);
Status DecodeCatalogEntry(std::string_view name, std::string_view bytes, CatalogEntry* entry);
// The catalog key of table `table_id`'s pending-drop entry: NUL, "drop", the id big-endian.
std::string PendingDropKey(uint32_t table_id);
inline bool IsReservedName(std::string_view name) { return !name.empty() && name[0] == '\0'; }
// The catalog key of table `owner_id`'s value tree: NUL, "values", the id big-endian. False
// from ParseValueTreeName for any other key.
std::string ValueTreeName(uint32_t owner_id);
bool ParseValueTreeName(std::string_view name, uint32_t* owner_id);

// The entries of a database directory: the meta file (and its temporary while it is written),
// the volume, the log directory and the lock file. DestroyDatabase (destroy.cc) removes these
// and refuses a directory that holds anything else.
inline std::string VolumePath(const std::string& dir) { return dir + "/data.sm"; }
inline std::string LogDir(const std::string& dir) { return dir + "/log"; }
inline std::string LockPath(const std::string& dir) { return dir + "/LOCK"; }
inline constexpr const char* kDatabaseEntries[] = {"LOCK", "data.sm", "log", "sm.meta",
                                                   "sm.meta.tmp"};

// The meta file ("sm.meta"): what identifies a database directory and where its catalog is.
struct MetaData {
  PageId catalog_root;
};
Status WriteMeta(io::FileSystem* fs, const std::string& dir, const MetaData& meta);
// NotFound if the file does not exist; Corruption if it is damaged.
Status ReadMeta(io::FileSystem* fs, const std::string& dir, MetaData* meta);

class DatabaseImpl;

// A cursor as the transaction object it was made in sees it (CursorImpl, table.cc).
class TxnCursor : public Cursor, public boost::intrusive::list_base_hook<> {
 public:
  // The transaction object goes away, or its database closes: from now on the cursor is
  // !Valid() and its calls return `why`, and it never touches the transaction or the tree
  // again.
  virtual void Detach(const Status& why) = 0;
};

class TransactionImpl final : public Transaction {
 public:
  TransactionImpl(DatabaseImpl* db, std::unique_ptr<txn::Txn> txn);
  ~TransactionImpl() override;
  uint64_t id() const override { return txn_ != nullptr ? txn_->id().value() : detached_id_; }
  Isolation isolation() const override;
  bool active() const override { return txn_ != nullptr && txn_->active(); }
  Status Commit() override;
  Status Commit(CommitMode mode) override;
  Status Abort() override;
  // What a call on this transaction returns once it is no longer active: the error that
  // rolled it back (Settle), else TxnFinished.
  Status NotActive() const;
  // The result of one of this transaction's operations, passed on: a retryable error
  // (Deadlock, LockTimeout) first rolls the transaction back (RollBackVictim), so that every
  // later call returns it and Commit cannot commit half of the transaction (sm.h).
  Status Settle(Status result) {
    if (result.IsRetryable()) [[unlikely]] return RollBackVictim(std::move(result));
    return result;
  }
  // Rolls the transaction back after `cause`, an error that left a change made in part (a
  // large value whose chunks could not all be written or freed): every later call returns
  // `cause`, as after a retryable error, so that Commit cannot commit half of the change.
  Status RollBackAfter(Status cause);

  txn::Txn* txn() { return txn_.get(); }
  // Where a write puts the stub of a large value it replaced (index::ExternalWrite::replaced).
  std::string* stub_buffer() { return &stub_buffer_; }
  DatabaseImpl* db() const { return db_; }  // null once detached

  // The cursors made in this object (see "Lifetime" above).
  void AdoptCursor(TxnCursor* cursor) { cursors_.push_back(*cursor); }
  void ForgetCursor(TxnCursor* cursor) { cursors_.erase(cursors_.iterator_to(*cursor)); }
  // Close, or the destruction of a database that was not closed (DatabaseImpl::DetachTxns):
  // aborts the transaction if it is active, detaches the cursors and hands the Txn back;
  // every later call returns Closed.
  void Detach();
  // DatabaseImpl::live_txns_.
  boost::intrusive::list_member_hook<> live_hook;

  // Begins the next transaction on this finished one (DatabaseImpl::Begin): the Txn and the
  // key-lock hooks are kept, so a warm transaction object begins without allocating.
  Status Restart(Isolation isolation);
  // The key-lock hook of table `table_id` (index/btree_locks.h: one per transaction and
  // table). Kept from one operation, and one transaction, to the next, so that the table's
  // intention lock is asked of the lock manager once per transaction, not once per operation.
  index::TxnKeyLocks* KeyLocks(uint32_t table_id);
  // The leaf hint of table `table_id` (index/btree.h, "Leaf hints"), or null (no hint) for ids
  // beyond the inline ones. Kept across operations and transactions like the hooks: a read
  // for update and the update that follows, or the inserts of one order's lines, land in one
  // leaf; a hint left by an earlier transaction is checked on use like any other.
  index::LeafHint* Hint(uint32_t table_id) {
    return table_id < kInlineTableIds ? &hints_[table_id] : nullptr;
  }

 private:
  // The hooks of table ids below this live in the object itself (a transaction object used
  // for one transaction only allocates none); larger ids (a database that has created many
  // tables in one run) are searched in overflow_locks_.
  static constexpr uint32_t kInlineTableIds = 16;
  static_assert(kInlineTableIds <= 32, "inline_in_use_ has a bit per inline id");

  index::TxnKeyLocks* NewKeyLocks(uint32_t table_id);
  Status RollBackVictim(Status cause);
  // RollBackVictim and RollBackAfter: aborts and records why in ended_by_.
  Status EndWith(Status cause);
  void DetachCursors(const Status& why);
  void DropKeyLocks();
  // Runs fn on every hook in use.
  template <typename Fn>
  void ForEachKeyLocks(Fn fn);

  DatabaseImpl* db_;  // null once detached (invariant 1)
  std::unique_ptr<txn::Txn> txn_;
  // Once detached: what id() and isolation() answer.
  uint64_t detached_id_ = 0;
  Isolation detached_isolation_ = Isolation::kSerializable;
  boost::intrusive::list<TxnCursor> cursors_;
  // The error that ended the transaction when the engine rolled it back (RollBackVictim:
  // the retryable error, or the rollback's own failure), returned by every later call until
  // the object begins again; OK otherwise.
  Status ended_by_;
  std::optional<index::TxnKeyLocks> key_locks_[kInlineTableIds];     // by table id
  uint32_t inline_in_use_ = 0;  // bit i: key_locks_[i] holds a hook (Restart visits only those)
  std::vector<std::unique_ptr<index::TxnKeyLocks>> overflow_locks_;  // ids >= kInlineTableIds
  index::LeafHint hints_[kInlineTableIds];                            // by table id
  std::string stub_buffer_;
};

class TableImpl final : public Table {
 public:
  TableImpl(DatabaseImpl* db, std::string name, const CatalogEntry& entry,
            std::unique_ptr<index::BTree> tree);
  const std::string& name() const override { return name_; }
  uint32_t id() const override { return id_; }
  bool unique() const override { return kind_ == TableKind::kTable; }

  Status Get(Transaction* txn, std::string_view key, std::string* value) override;
  Status GetForUpdate(Transaction* txn, std::string_view key, std::string* value) override;
  Status GetMany(Transaction* txn, const std::vector<std::string_view>& keys, bool for_update,
                 const RowFn& row) override;
  Status Insert(Transaction* txn, std::string_view key, std::string_view value) override;
  Status Update(Transaction* txn, std::string_view key, std::string_view value) override;
  Status Modify(Transaction* txn, std::string_view key, const ValueEdit& edit) override;
  Status Upsert(Transaction* txn, std::string_view key, std::string_view value) override;
  Status Delete(Transaction* txn, std::string_view key) override;
  Status Add(Transaction* txn, std::string_view key, uint32_t offset, int64_t delta,
             std::string* value) override;
  Status NewCursor(Transaction* txn, const ScanOptions& options,
                   std::unique_ptr<Cursor>* cursor) override;
  Status SplitRange(Transaction* txn, const ScanOptions& range, size_t parts,
                    std::vector<std::string>* cuts) override;

  index::BTree* tree() const { return tree_.get(); }
  // The table's large values and its value tree (null until its first large value).
  LargeValues& large_values() { return large_; }
  index::BTree* value_tree() const { return large_.tree(); }
  void MarkDropped() { dropped_.store(true, std::memory_order_release); }

 private:
  enum class Op : uint8_t { kInsert, kUpdate, kUpsert, kDelete };
  // Every operation asks: the usual answer is inline, the errors come from ResolveSlow (which
  // checks in the documented order and also sets *impl when all is well).
  inline Status Resolve(Transaction* txn, TransactionImpl** impl) const;
  Status ResolveSlow(Transaction* txn, TransactionImpl** impl) const;
  Status Fetch(Transaction* txn, std::string_view key, std::string* value, bool for_update);
  Status Write(Op op, Transaction* txn, std::string_view key, std::string_view value);
  Status WriteTree(Op op, std::string_view key, std::string_view value,
                   const index::OpContext& ctx);
  // Write of a record too large for a leaf: its stub, then its chunks (large_values.h).
  Status WriteLarge(Op op, TransactionImpl* t, std::string_view key, std::string_view value,
                    const index::OpContext& ctx);
  // NewCursor for a resolved transaction: reuses the cursor in *cursor if it is ours.
  Status StartCursor(TransactionImpl* t, const ScanOptions& options,
                     std::unique_ptr<Cursor>* cursor);
  steps::TeamKey StepsKey(Op op) const;

  DatabaseImpl* const db_;
  const std::string name_;
  const uint32_t id_;
  const TableKind kind_;
  std::unique_ptr<index::BTree> tree_;
  LargeValues large_;
  std::atomic<bool> dropped_{false};
};

class DatabaseImpl final : public Database {
 public:
  explicit DatabaseImpl(const Options& options);
  ~DatabaseImpl() override;

  // Builds everything: creates or opens, recovers, loads the catalog.
  Status Start(OpenReport* report);
  // After Start failed: stops everything without writing a page, a log record or a checkpoint
  // (Close would record a half-recovered database as whole), so the destructor only frees.
  void AbandonFailedStart();

  Status Close() override;
  Status CreateTable(std::string_view name, Table** table) override {
    return Create(name, TableKind::kTable, table);
  }
  Status CreateIndex(std::string_view name, Table** index) override {
    return Create(name, TableKind::kIndex, index);
  }
  Status OpenTable(std::string_view name, Table** table) override;
  Status DropTable(std::string_view name) override;
  std::vector<std::string> TableNames() override;
  Status Begin(std::unique_ptr<Transaction>* txn, Isolation isolation) override;
  // A transaction object going away takes itself off live_txns_.
  void ForgetTxn(TransactionImpl* txn);
  Status Checkpoint() override;
  Status Verify() override;
  Status Prewarm(uint64_t* pages) override;
  DatabaseStats stats() override;
  Status Spawn(std::function<void()> fn, int worker, WaitGroup* group) override;
  unsigned workers() const override;

  // For TableImpl / TransactionImpl.
  // Inline: every table operation asks (TableImpl::Resolve).
  Status CheckOpen() const {
    if (closed_.load(std::memory_order_acquire)) [[unlikely]] {
      return Status::Closed("the database is closed");
    }
    return Status::OK();
  }
  // Options::read_only: every call that would change the database returns RefuseReadOnly.
  bool read_only() const { return options_.read_only; }
  Status RefuseReadOnly(const char* what) const;
  lock::LockManager* locks() const { return locks_.get(); }
  txn::TxnManager* txns() const { return txns_.get(); }
  index::BtreeWal* wal() const { return wal_.get(); }
  // Makes `table`'s value tree (large_values.h) unless it has one, in a catalog transaction
  // of its own, and attaches it.
  Status CreateValueTree(TableImpl* table);

  // Verify with a report: one line per tree (height, pages, records, bytes), one for the pages
  // of the volume, one for the log. Checks every B-tree (key order, fences, parent-child
  // agreement, page LSNs, checksums), that every tree page is allocated and every other
  // allocated page reads back intact, and every record of the retained log (checksums,
  // transaction chains; log::LogManager::Verify). Corruption names the tree and page, or the
  // log record's LSN.
  Status VerifyWithReport(std::string* report);

  // Test hook: the process dies here. The log stops (nothing more reaches it), the background
  // threads stop, and the database is left to its destructor, which writes, syncs and
  // checkpoints nothing: unsynced page and log writes stay unsynced. Transactions still open
  // fail (their aborts are refused); destroy them, then the database, then call
  // io::FaultInjectionFileSystem::SimulateCrash.
  void TEST_Crash();
  // Test hook: from now on reclamation gives nothing back in this run: dropped tables' pages
  // stay allocated in no tree, and their pending-drop entries stay in the catalog (the state a
  // crash right after a drop committed leaves; the next Open finishes them).
  void TEST_KeepDroppedPages() { keep_dropped_pages_.store(true, std::memory_order_relaxed); }
  // Test hook: from now on page-free records cover at most `chunk_pages` pages, and after
  // `chunks` more steps (a page-free record, the root's included, or the removal of a
  // pending-drop entry) reclamation stops as with TEST_KeepDroppedPages: a crash then finds a
  // drop reclaimed in part.
  void TEST_LimitReclaim(uint32_t chunk_pages, int64_t chunks) {
    reclaim_chunk_pages_.store(chunk_pages, std::memory_order_relaxed);
    reclaim_chunks_left_.store(chunks, std::memory_order_relaxed);
  }
  // Test hook: drops whose reclamation has not finished (in this run's memory).
  size_t TEST_PendingDrops();

 private:
  // A dropped table whose pages are not yet given back (drop.cc). Once walked, `pages` holds
  // the pages of its tree below the root, leaves first, and `root_owned` whether the root is
  // still the tree's; `logged` of the pages are covered by page-free records and `freed` are
  // free (freed <= logged), so a reclamation that failed half way resumes where it stopped.
  struct PendingDrop {
    uint32_t table_id = 0;
    PageId root;
    std::vector<TxnId> users;  // the transactions active when it was dropped
    bool walked = false;
    bool root_owned = false;
    bool root_freed = false;
    std::vector<PageId> pages;
    size_t logged = 0;
    size_t freed = 0;
    uint64_t unreadable = 0;  // pages the walk could not read (left allocated)
    PageId first_unreadable;
  };
  Status OpenParts(bool create);
  Status StartSteps();
  Status CreateNew(OpenReport* report);
  Status OpenExisting(const MetaData& meta, OpenReport* report);
  Status Restart(OpenReport* report);
  Status LoadCatalog();
  // The options of every tree this database opens or creates: logged through wal_, with the
  // database's miss interleaving.
  index::BtreeOptions TreeOptions() const {
    index::BtreeOptions options;
    options.logger = wal_.get();
    options.miss_interleaving = static_cast<index::MissInterleaving>(options_.miss_interleaving);
    return options;
  }
  Status RemarkTreePages(OpenReport* report);
  Status VerifyTrees(std::string* report, std::vector<PageId>* reachable);
  Status VerifyPages(const std::vector<PageId>& reachable, std::string* report);
  Status VerifyLog(std::string* report);
  Status Create(std::string_view name, TableKind kind, Table** table);
  Status CatalogOp(std::string_view name, const std::function<Status(txn::Txn*, index::OpContext&)>& op);
  Status CatalogTxn(const std::function<Status(txn::Txn*, index::OpContext&)>& op);
  // Gives back the pages of every dropped table that no transaction can still use (drop.cc).
  Status ReclaimDropped();
  // Close: gives back the pages the trees retired and kept for reuse (drop.cc).
  Status FreeRetiredPages();
  // Open, before any transaction: gives back the pages allocated in no tree (drop.cc).
  Status FreeOrphanPages(OpenReport* report);
  Status OrphanIntact(PageId id, io::AlignedBuffer* buf, bool* intact);
  Status FreePagesLogged(const std::vector<PageId>& pages);
  Status Reclaim(PendingDrop* drop, bool* finished);
  Status WalkDropped(PendingDrop* drop);
  Status ReadDroppedNode(PageId id, PageId root, int level, bool* mine, uint16_t* node_level,
                         std::vector<PageId>* children);
  Status FinishDrop(PendingDrop* drop, bool* held);
  bool TakeReclaimChunk();
  // Open: finishes the drops LoadCatalog found pending (drop.cc).
  Status ResumeDrops();
  bool RootOwnedElsewhere(const PendingDrop& drop);
  // Detaches every live transaction object (see "Lifetime" above); later Begins fail. No
  // fiber of the runtime may be running: they may use them.
  void DetachTxns();
  // The caller runs on one of the runtime's workers (where waiting for them never ends).
  bool OnOwnWorker() const;
  Status CloseReadOnly();
  void Teardown();

  const Options options_;
  io::FileSystem* fs_ = nullptr;
  // The directory's LOCK file, held from Start to Close (or TEST_Crash): one Database per
  // directory, in this process and across processes.
  std::unique_ptr<io::FileLock> dir_lock_;
  std::unique_ptr<space::Volume> volume_;
  std::unique_ptr<log::LogManager> log_;
  std::unique_ptr<buffer::BufferPool> pool_;
  std::unique_ptr<lock::LockManager> locks_;
  std::unique_ptr<txn::TxnManager> txns_;
  std::unique_ptr<index::BtreeWal> wal_;
  std::unique_ptr<index::BTree> catalog_;
  std::unique_ptr<threads::Runtime> runtime_;
  std::atomic<bool> closed_{false};
  bool installed_steps_ = false;

  using TxnList = boost::intrusive::list<
      TransactionImpl, boost::intrusive::member_hook<TransactionImpl,
                                                     boost::intrusive::list_member_hook<>,
                                                     &TransactionImpl::live_hook>>;
  threads::Mutex live_txns_mu_;
  TxnList live_txns_;          // GUARDED_BY(live_txns_mu_)
  bool txns_detached_ = false;  // GUARDED_BY(live_txns_mu_): DetachTxns ran; none may join

  mutable threads::Mutex tables_mu_;
  std::map<std::string, std::unique_ptr<TableImpl>, std::less<>> tables_;  // GUARDED_BY(tables_mu_)
  // Handles stay valid until Close. GUARDED_BY(tables_mu_)
  std::vector<std::unique_ptr<TableImpl>> dropped_;
  uint32_t next_table_id_ = kFirstUserTableId;  // GUARDED_BY(tables_mu_)

  threads::Mutex value_trees_mu_;  // one CreateValueTree at a time

  threads::Mutex reclaim_mu_;  // one reclamation at a time
  std::vector<PendingDrop> pending_drops_;  // GUARDED_BY(reclaim_mu_)
  // Test hooks (relaxed: a test sets them before the drops they affect, on the same thread).
  std::atomic<bool> keep_dropped_pages_{false};
  std::atomic<uint32_t> reclaim_chunk_pages_{txn::kMaxPageFreesPerRecord};
  std::atomic<int64_t> reclaim_chunks_left_{-1};  // -1: no limit
};

// TableImpl::Resolve, here where DatabaseImpl is complete.
inline Status TableImpl::Resolve(Transaction* txn, TransactionImpl** impl) const {
  // TransactionImpl is final, so a type_info comparison decides what dynamic_cast would.
  if (txn != nullptr && typeid(*txn) == typeid(TransactionImpl)) [[likely]] {
    auto* t = static_cast<TransactionImpl*>(txn);
    if (t->db() == db_ && t->active() && !dropped_.load(std::memory_order_acquire) &&
        db_->CheckOpen().ok()) [[likely]] {
      *impl = t;
      return Status::OK();
    }
  }
  return ResolveSlow(txn, impl);
}

}  // namespace sm::api
