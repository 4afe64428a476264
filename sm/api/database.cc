// DatabaseImpl: open (create or recover), the catalog and DDL, transactions, close.
#include <algorithm>
#include <string>
#include <typeinfo>

#include "index/btree_locks.h"
#include "sm/api/api_internal.h"
#include "sm/common/assert.h"
#include "sm/common/counted.h"
#include "sm/io/aligned_buffer.h"
#include "sm/space/alloc_map.h"
#include "steps/placement.h"
#include "steps/steps.h"

namespace sm {

const char* CommitModeName(CommitMode mode) {
  return log::CommitModeName(static_cast<log::CommitMode>(mode));
}

// DatabaseImpl::TreeOptions passes the mode on by value.
static_assert(static_cast<int>(MissInterleaving::kOff) ==
              static_cast<int>(index::MissInterleaving::kOff));
static_assert(static_cast<int>(MissInterleaving::kOn) ==
              static_cast<int>(index::MissInterleaving::kOn));
static_assert(static_cast<int>(MissInterleaving::kAdaptive) ==
              static_cast<int>(index::MissInterleaving::kAdaptive));

namespace {
constexpr const char* kMissInterleavingNames[] = {"off", "on", "auto"};
}  // namespace

const char* MissInterleavingName(MissInterleaving mode) {
  return kMissInterleavingNames[static_cast<int>(mode)];
}

bool ParseMissInterleaving(std::string_view name, MissInterleaving* mode) {
  for (int i = 0; i < 3; ++i) {
    if (name == kMissInterleavingNames[i]) {
      *mode = static_cast<MissInterleaving>(i);
      return true;
    }
  }
  return false;
}

std::string OpenReport::ToString() const {
  if (!opened) {  // the fields say how far it got, not what the database is
    std::string out = "did not open the database";
    if (needs_recovery) out += " read-only: it needs recovery";
    return recovery.empty() ? out : out + "; " + recovery;
  }
  std::string out = created ? "created a new database" : "opened an existing database";
  if (read_only) out += " read-only";
  out += ", " + Counted(tables, "table");
  // The recovery report names itself ("recovery: ...").
  if (!created) out += recovered ? "; " + recovery : "; clean (nothing to recover)";
  if (map_copies_rejected != 0) {
    out += "; " + Counted(map_copies_rejected, "damaged allocation-map copy",
                          "damaged allocation-map copies") +
           " (the other copy used; " + Counted(pages_remarked, "tree page") +
           " marked allocated again)";
  }
  if (orphan_pages_freed != 0) {
    out += "; " + Counted(orphan_pages_freed, "page") + " in no tree given back";
  }
  if (orphan_pages_damaged != 0) {
    out += "; " + Counted(orphan_pages_damaged, "damaged page") +
           " in no tree kept (Verify names them)";
  }
  if (!orphan_sweep_skipped.empty()) {
    out += "; pages in no tree kept (" + orphan_sweep_skipped + ")";
  }
  return out;
}

ScanOptions ScanOptions::Range(std::string_view lower, std::string_view upper) {
  ScanOptions o;
  o.lower = lower;
  o.upper = upper;
  o.has_lower = o.has_upper = true;
  return o;
}

WaitGroup::WaitGroup() : impl_(std::make_unique<threads::WaitGroup>()) {}
WaitGroup::~WaitGroup() { impl_->Wait(); }
void WaitGroup::Wait() { impl_->Wait(); }
uint64_t WaitGroup::count() const { return static_cast<uint64_t>(impl_->count()); }

std::string IndexKey(std::string_view secondary_key, std::string_view primary_key) {
  std::string key(secondary_key);
  key.append(primary_key);
  return key;
}

Status Database::Open(const Options& options, std::unique_ptr<Database>* db, OpenReport* report) {
  OpenReport local;
  OpenReport* out = report != nullptr ? report : &local;
  *out = OpenReport();  // a report of an earlier Open must not speak for this one
  if (options.path.empty()) return Status::InvalidArgument("Options::path is empty");
  if (!(options.checkpoint_spread >= 0 && options.checkpoint_spread < 1)) {
    return Status::InvalidArgument("Options::checkpoint_spread " +
                                   std::to_string(options.checkpoint_spread) +
                                   " is outside [0, 1)");
  }
  auto impl = std::make_unique<api::DatabaseImpl>(options);
  if (Status s = impl->Start(out); !s.ok()) {
    impl->AbandonFailedStart();
    return s;
  }
  SM_ASSERT(!out->opened);  // Start fills in what it did, not the outcome
  out->opened = true;
  *db = std::move(impl);
  return Status::OK();
}

std::string DatabaseStats::ToString() const {
  return "transactions: " + std::to_string(txn_begun) + " begun, " + std::to_string(txn_committed) +
         " committed, " + std::to_string(txn_aborted) + " aborted, " + std::to_string(txn_failed) +
         " failed; checkpoints " + std::to_string(checkpoints) +
         "\nlocks: " + std::to_string(lock_requests) + " requests, " + std::to_string(lock_waits) +
         " waits, " + std::to_string(deadlocks) + " deadlocks, " + std::to_string(lock_timeouts) +
         " timeouts\nlog: " + std::to_string(log_bytes) + " bytes, " + std::to_string(log_syncs) +
         " syncs, " + std::to_string(commits_per_sync) + " commits/sync, " +
         std::to_string(log_space_waits) +
         " waits for buffer space\nbuffer pool: " + std::to_string(pool_hits) + " hits (" +
         std::to_string(pool_hinted_hits) + " through frame hints), " +
         std::to_string(pool_misses) + " misses, " + std::to_string(pool_writes) + " writes, " +
         std::to_string(pool_dirty_pages) + " dirty\nvolume: " + std::to_string(volume_pages) +
         " pages, " + std::to_string(volume_pages_allocated) + " allocated";
}

namespace api {

static_assert(static_cast<int>(CommitMode::kDurable) ==
              static_cast<int>(log::CommitMode::kDurable));
static_assert(static_cast<int>(CommitMode::kAsync) == static_cast<int>(log::CommitMode::kAsync));
static_assert(static_cast<int>(CommitMode::kNone) == static_cast<int>(log::CommitMode::kNone));

namespace {
// Removes what an unfinished creation left (no meta file was written, so nothing in it was
// ever acknowledged).
Status RemoveUnfinished(io::FileSystem* fs, const std::string& dir) {
  bool exists = false;
  SM_TRY(fs->Exists(VolumePath(dir), &exists));
  if (exists) SM_TRY(fs->Delete(VolumePath(dir)));
  SM_TRY(fs->Exists(LogDir(dir), &exists));
  if (exists) {
    std::vector<std::string> names;
    SM_TRY(fs->ListDir(LogDir(dir), &names));
    for (const std::string& name : names) SM_TRY(fs->Delete(LogDir(dir) + "/" + name));
  }
  return Status::OK();
}
}  // namespace

DatabaseImpl::DatabaseImpl(const Options& options) : options_(options) {}

DatabaseImpl::~DatabaseImpl() {
  if (!closed_.load(std::memory_order_acquire) && txns_ != nullptr) {
    // Close refuses while a transaction is active: the fibers that may run one finish, and
    // the transactions still active are aborted, first.
    runtime_->Shutdown();
    DetachTxns();
    Close().PermitUnchecked();
  }
  Teardown();  // after TEST_Crash: the parts are dropped without writing anything
}

Status DatabaseImpl::Start(OpenReport* report) {
  *report = OpenReport();
  report->read_only = options_.read_only;
  if (options_.reserve_free_bytes / kPageBytes > space::kMaxVolumePages) {
    return Status::InvalidArgument("Options::reserve_free_bytes " +
                                   std::to_string(options_.reserve_free_bytes) +
                                   " is beyond the largest volume");
  }
  fs_ = options_.file_system != nullptr ? options_.file_system : io::FileSystem::Default();
  const std::string& dir = options_.path;
  bool exists = false;
  SM_TRY(fs_->Exists(dir, &exists));
  if (!exists) {
    if (options_.read_only) {
      return Status::NotFound(dir + ": no such database (a read-only open creates none)");
    }
    if (!options_.create_if_missing) return Status::NotFound(dir + ": no such database");
    SM_TRY(fs_->CreateDir(dir));
  }
  if (options_.read_only) {
    // Every database has its lock file from its first open on; LockFile would create one.
    SM_TRY(fs_->Exists(LockPath(dir), &exists));
    if (!exists) {
      const std::string why = ": not a database (no LOCK file, and a read-only open makes none)";
      return Status::NotFound(dir + why);
    }
  }
  // Before anything is read: a second writer would corrupt the log and the volume.
  SM_TRY(fs_->LockFile(LockPath(dir), &dir_lock_));
  MetaData meta;
  Status m = ReadMeta(fs_, dir, &meta);
  if (m.ok()) {
    if (options_.error_if_exists) return Status::InvalidArgument(dir + ": database exists");
    SM_TRY(OpenExisting(meta, report));
  } else {
    if (!m.IsNotFound()) return m;
    if (options_.read_only) {
      m.PermitUnchecked();
      return Status::NotFound(dir + ": not a database (no sm.meta; a read-only open creates none)");
    }
    if (!options_.create_if_missing) {
      return Status::NotFound(dir + ": not a database (no sm.meta)");
    }
    SM_TRY(RemoveUnfinished(fs_, dir));
    SM_TRY(CreateNew(report));
  }
  // A read-only volume does not grow: the reserve serves writes, and there are none.
  if (options_.reserve_free_bytes == 0 || options_.read_only) return Status::OK();
  return volume_->Reserve((options_.reserve_free_bytes + kPageBytes - 1) / kPageBytes);
}

Status DatabaseImpl::StartSteps() {
  if (!options_.steps) return Status::OK();
  steps::Placement placement = steps::DefaultPlacement();
  if (!options_.ctx_placement.empty()) {
    SM_TRY(steps::ReadPlacement(options_.ctx_placement, &placement));
  }
  if (steps::Installed()) return Status::OK();  // another open database runs STEPS already
  SM_TRY(steps::ApplyPlacement(placement));
  steps::StepsOptions steps_options;
  steps_options.max_team_size = options_.steps_team_size;
  steps_options.max_pass_overs = options_.steps_max_pass_overs;
  steps_options.adaptive = options_.steps_adaptive;
  steps::Install(steps_options);
  installed_steps_ = true;
  return Status::OK();
}

Status DatabaseImpl::OpenParts(bool create) {
  SM_TRY(StartSteps());
  threads::RuntimeOptions runtime_options;
  runtime_options.workers = options_.workers;
  SM_TRY(threads::Runtime::Create(runtime_options, &runtime_));
  if (create) {
    SM_TRY(space::Volume::Create(fs_, VolumePath(options_.path), {}, &volume_));
  } else {
    SM_TRY(space::Volume::Open(fs_, VolumePath(options_.path), &volume_, options_.read_only));
  }
  log::LogOptions log_options;
  log_options.segment_bytes = options_.log_segment_bytes;
  log_options.buffer_bytes = options_.log_buffer_bytes;
  log_options.spare_bytes = options_.log_spare_bytes;
  log_options.commit_mode = static_cast<log::CommitMode>(options_.commit_mode);
  log_options.create_if_missing = create;
  log_options.direct_io = options_.direct_io;
  log_options.read_only = options_.read_only;
  SM_TRY(log::LogManager::Open(fs_, LogDir(options_.path), log_options, &log_));
  buffer::BufferPoolOptions pool_options;
  pool_options.pool_bytes = options_.buffer_pool_bytes;
  if (!options_.prefault_pool) pool_options.prefault_ahead_bytes = 0;
  pool_options.writer_interval_ms =
      static_cast<uint32_t>(options_.background_write_interval.count());
  pool_options.writer_log_lag_bytes = options_.background_write_log_lag_bytes;
  pool_options.writer_quiet_ms = static_cast<uint32_t>(options_.background_write_quiet.count());
  SM_TRY(buffer::BufferPool::Create(volume_.get(), pool_options, &pool_));
  lock::LockManagerOptions lock_options;
  lock_options.lock_wait_timeout = options_.lock_wait_timeout;
  locks_ = std::make_unique<lock::LockManager>(lock_options);
  txn::TxnManagerOptions txn_options;
  txn_options.commit_mode = log_options.commit_mode;
  txn_options.checkpoint_interval = options_.checkpoint_interval;
  txn_options.checkpoint_spread = options_.checkpoint_spread;
  txns_ = std::make_unique<txn::TxnManager>(log_.get(), locks_.get(), pool_.get(), volume_.get(),
                                            txn_options);
  wal_ = std::make_unique<index::BtreeWal>(txns_.get());
  // Read-only: no page is ever dirty, so there is nothing for a writer to write.
  if (!options_.read_only) pool_->StartWriter(nullptr);
  return Status::OK();
}

Status DatabaseImpl::CreateNew(OpenReport* report) {
  SM_TRY(OpenParts(/*create=*/true));
  index::BtreeOptions tree_options = TreeOptions();
  PageId root;
  SM_TRY(index::BTree::Create(pool_.get(), tree_options, &root, &catalog_));
  // Everything durable and checkpointed before the meta file makes the directory a database.
  SM_TRY(pool_->FlushAll());
  SM_TRY(txns_->Checkpoint());
  SM_ASSERT(pool_->DirtyPages().empty());
  SM_ASSERT(log_->durable_lsn() == log_->end_lsn());
  SM_TRY(WriteMeta(fs_, options_.path, MetaData{root}));
  report->created = true;
  txns_->StartCheckpointer();
  return Status::OK();
}

Status DatabaseImpl::OpenExisting(const MetaData& meta, OpenReport* report) {
  SM_TRY(OpenParts(/*create=*/false));
  SM_TRY(Restart(report));
  index::BtreeOptions tree_options = TreeOptions();
  SM_TRY(index::BTree::Open(pool_.get(), meta.catalog_root, tree_options, &catalog_));
  SM_TRY(LoadCatalog());
  report->tables = tables_.size();
  SM_TRY(RemarkTreePages(report));
  if (options_.read_only) {
    // Pending drops and pages in no tree stay as they are, for a read-write open to give back.
    SM_ASSERT(pool_->DirtyPages().empty());
    return Status::OK();
  }
  SM_TRY(ResumeDrops());            // no transaction has begun yet
  SM_TRY(FreeOrphanPages(report));  // after the drops: their pages are theirs to free
  txns_->StartCheckpointer();
  return Status::OK();
}

// Restart recovery; read-only, analysis alone, and a refusal if redo or undo would have work:
// the pages would then not hold what the log says was committed, or would hold what it says
// was rolled back, and recovery must write to set that right.
Status DatabaseImpl::Restart(OpenReport* report) {
  log::RecoveryReport recovery;
  log::RecoveryOptions recovery_options;
  recovery_options.analysis_only = options_.read_only;
  SM_TRY(txns_->Restart(recovery_options, &recovery));
  report->recovery_seconds =
      recovery.analysis_seconds + recovery.redo_seconds + recovery.undo_seconds;
  if (options_.read_only) {
    SM_ASSERT(recovery.redo_records == 0);  // analysis alone applies nothing
    if (recovery.analysis_clean() && log_->tail_bytes() == 0) return Status::OK();
    report->needs_recovery = true;
    std::string work;
    auto add = [&work](uint64_t n, const std::string& what) {
      if (n != 0) work += (work.empty() ? "" : ", ") + what;
    };
    const uint64_t losers = recovery.losers.size();
    SM_ASSERT(losers <= recovery.unfinished);  // losers are the unfinished not committed
    add(recovery.analysis_page_records + recovery.dirty_pages,
        Counted(recovery.dirty_pages, "page") + " to redo from the log (" +
            Counted(recovery.analysis_page_records, "page record") + " after the last checkpoint)");
    add(losers, Counted(losers, "transaction") + " to roll back");
    add(recovery.unfinished - losers,
        Counted(recovery.unfinished - losers, "committed transaction") + " to mark ended");
    add(log_->tail_bytes(), "a torn log tail to cut");
    return Status::InvalidArgument(
        options_.path + ": the database needs recovery (the last run did not close cleanly: " +
        work + "), and a read-only open does not recover; open it read-write once to recover it");
  }
  report->recovered = !recovery.nothing_to_do();
  report->recovery = recovery.ToString();
  report->redo_records = recovery.redo_records;
  report->redo_bytes = recovery.redo_bytes;
  report->losers = recovery.losers.size();
  report->torn_pages_repaired = txns_->torn_pages_repaired();
  return Status::OK();
}

// The volume keeps two copies of each allocation-map range and Open takes the valid one. If
// one was damaged, the survivor may be older than the other: after a crash, redo re-applies the
// allocations logged since the last checkpoint, but after a clean close nothing does, and a
// page missing from the map would later be handed out again while a tree still uses it. The map
// is derived data, so it is rebuilt from what it must cover: every page of every tree is marked
// allocated (a walk that also fails Open if a tree is damaged). Pages the old copy still marks
// but no tree uses are leaks, never harm.
Status DatabaseImpl::RemarkTreePages(OpenReport* report) {
  report->map_copies_rejected = volume_->map_copies_rejected();
  if (report->map_copies_rejected == 0) return Status::OK();
  std::string trees;
  std::vector<PageId> reachable;
  SM_TRY(VerifyTrees(&trees, &reachable));
  for (PageId id : reachable) {
    if (volume_->IsAllocated(id)) continue;
    SM_TRY(volume_->RedoAllocate(id));
    ++report->pages_remarked;
  }
  // Read-only: the map is put right in memory only, for this run's reads and Verify.
  return options_.read_only ? Status::OK() : volume_->Sync();
}

// Tables get handles; pending-drop entries become pending drops with no users (drop.cc). Their
// ids count for next_table_id_, so no table created while one is pending reuses its id.
Status DatabaseImpl::LoadCatalog() {
  index::Cursor cursor(catalog_.get());
  std::vector<PendingDrop> pending;
  std::vector<std::pair<uint32_t, std::unique_ptr<index::BTree>>> value_trees;  // by owner id
  {
    std::lock_guard<threads::Mutex> guard(tables_mu_);
    for (Status s = cursor.SeekToFirst(); cursor.Valid(); s = cursor.Next()) {
      SM_TRY(s);
      CatalogEntry entry;
      SM_TRY(DecodeCatalogEntry(cursor.key(), cursor.value(), &entry));
      next_table_id_ = std::max(next_table_id_, entry.id + 1);
      // (A table under a NUL-prefixed name, created before such names were reserved, is still
      // a table: the kind decides, and a pending-drop entry must sit under its own key.)
      if (entry.kind == TableKind::kDropped) {
        if (cursor.key() != PendingDropKey(entry.id)) {
          return Status::Corruption("pending-drop entry of table id " + std::to_string(entry.id) +
                                    " is under the wrong key");
        }
        PendingDrop drop;
        drop.table_id = entry.id;
        drop.root = entry.root;
        pending.push_back(std::move(drop));
        continue;
      }
      index::BtreeOptions tree_options = TreeOptions();
      std::unique_ptr<index::BTree> tree;
      SM_TRY(index::BTree::Open(pool_.get(), entry.root, tree_options, &tree));
      if (entry.kind == TableKind::kValues) {
        uint32_t owner = 0;
        if (!ParseValueTreeName(cursor.key(), &owner)) {
          return Status::Corruption("value tree of table id " + std::to_string(entry.id) +
                                    " is under the wrong key");
        }
        value_trees.emplace_back(owner, std::move(tree));
        continue;
      }
      std::string name(cursor.key());
      tables_[name] = std::make_unique<TableImpl>(this, name, entry, std::move(tree));
    }
    // Value trees sort before every table's name: each joins its table once all are loaded.
    for (auto& [owner, tree] : value_trees) {
      auto table = std::find_if(tables_.begin(), tables_.end(),
                                [owner](const auto& t) { return t.second->id() == owner; });
      if (table == tables_.end()) {
        return Status::Corruption("a value tree belongs to table id " + std::to_string(owner) +
                                  ", which the catalog does not hold");
      }
      SM_TRY(table->second->large_values().Attach(std::move(tree)));
    }
  }
  std::lock_guard<threads::Mutex> guard(reclaim_mu_);
  for (PendingDrop& drop : pending) pending_drops_.push_back(std::move(drop));
  return Status::OK();
}

// Runs `op` on the catalog in an internal transaction holding the name's key lock, then commits
// durably (DDL is rare and must not be lost), or aborts if op fails.
Status DatabaseImpl::CatalogOp(std::string_view name,
                               const std::function<Status(txn::Txn*, index::OpContext&)>& op) {
  SM_TRY(CheckOpen());
  if (name.empty()) return Status::InvalidArgument("a table name must not be empty");
  if (IsReservedName(name)) {
    return Status::InvalidArgument("table names beginning with a NUL byte are reserved");
  }
  SM_TRY(index::BTree::CheckKey(name));
  return CatalogTxn(op);
}

// CatalogOp's transaction, without its checks: reclamation removes pending-drop entries with it,
// also from Close, after the database stopped taking calls.
Status DatabaseImpl::CatalogTxn(const std::function<Status(txn::Txn*, index::OpContext&)>& op) {
  std::unique_ptr<txn::Txn> txn;
  SM_TRY(txns_->Begin(txn::Isolation::kSerializable, &txn));
  index::TxnKeyLocks key_locks(locks_.get(), txn->lock_owner(), txn->isolation(), kCatalogTableId);
  index::OpContext ctx{txn.get(), &key_locks};
  Status s = op(txn.get(), ctx);
  if (!s.ok()) {
    txns_->Abort(txn.get()).PermitUnchecked();
    return s;
  }
  return txns_->Commit(txn.get(), log::CommitMode::kDurable);
}

Status DatabaseImpl::RefuseReadOnly(const char* what) const {
  return Status::InvalidArgument(std::string(what) + ": the database " + options_.path +
                                 " is open read-only (Options::read_only)");
}

Status DatabaseImpl::Create(std::string_view name, TableKind kind, Table** table) {
  SM_TRY(CheckOpen());
  if (options_.read_only) {
    return RefuseReadOnly(kind == TableKind::kIndex ? "CreateIndex" : "CreateTable");
  }
  // Pages of dropped tables first, so that the new tree can reuse them (best effort: an error
  // is reported by the next Checkpoint or Close).
  if (CheckOpen().ok()) ReclaimDropped().PermitUnchecked();
  std::unique_ptr<index::BTree> tree;
  CatalogEntry entry;
  entry.kind = kind;
  SM_TRY(CatalogOp(name, [&](txn::Txn*, index::OpContext& ctx) -> Status {
    std::string existing;
    Status found = catalog_->Lookup(name, &existing, ctx);
    if (found.ok()) return Status::Duplicate("table '" + std::string(name) + "' exists");
    if (!found.IsNotFound()) return found;
    index::BtreeOptions tree_options = TreeOptions();
    tree_options.unique = kind == TableKind::kTable;
    PageId root;
    // The new tree's root is logged as a system record: if the transaction aborts, the page is
    // left allocated but unreachable (a leak, never an inconsistency).
    SM_TRY(index::BTree::Create(pool_.get(), tree_options, &root, &tree));
    {
      std::lock_guard<threads::Mutex> guard(tables_mu_);
      entry.id = next_table_id_++;
    }
    entry.root = root;
    return catalog_->Insert(name, EncodeCatalogEntry(entry), ctx);
  }));
  std::lock_guard<threads::Mutex> guard(tables_mu_);
  auto handle = std::make_unique<TableImpl>(this, std::string(name), entry, std::move(tree));
  *table = handle.get();
  tables_[std::string(name)] = std::move(handle);
  return Status::OK();
}

Status DatabaseImpl::CreateValueTree(TableImpl* table) {
  std::lock_guard<threads::Mutex> guard(value_trees_mu_);
  if (table->value_tree() != nullptr) return Status::OK();  // another writer made it meanwhile
  std::unique_ptr<index::BTree> tree;
  SM_TRY(CatalogTxn([&](txn::Txn*, index::OpContext& ctx) -> Status {
    // As in Create: an aborted transaction leaks the root page, which the next Open frees.
    PageId root;
    SM_TRY(index::BTree::Create(pool_.get(), TreeOptions(), &root, &tree));
    CatalogEntry entry;
    entry.kind = TableKind::kValues;
    {
      std::lock_guard<threads::Mutex> tables_guard(tables_mu_);
      entry.id = next_table_id_++;
    }
    entry.root = root;
    return catalog_->Insert(ValueTreeName(table->id()), EncodeCatalogEntry(entry), ctx);
  }));
  return table->large_values().Attach(std::move(tree));
}

Status DatabaseImpl::OpenTable(std::string_view name, Table** table) {
  SM_TRY(CheckOpen());
  std::lock_guard<threads::Mutex> guard(tables_mu_);
  auto it = tables_.find(name);
  if (it == tables_.end()) return Status::NotFound("no table '" + std::string(name) + "'");
  *table = it->second.get();
  return Status::OK();
}

std::vector<std::string> DatabaseImpl::TableNames() {
  std::lock_guard<threads::Mutex> guard(tables_mu_);
  std::vector<std::string> names;
  for (const auto& [name, table] : tables_) names.push_back(name);
  return names;
}

Status DatabaseImpl::Begin(std::unique_ptr<Transaction>* txn, Isolation isolation) {
  SM_TRY(CheckOpen());
  if (steps::Installed()) {
    steps::BeginOp(steps::KeyFor(steps::Op::kBegin, 0));  // the begin team takes turns too
  } else if (threads::Worker::CurrentFiber() != nullptr) {
    threads::Worker::Current()->YieldForTurn();
  }
  // A finished transaction of ours in *txn begins again in place (no allocation, and its
  // per-table key-lock hooks stay warm); anything else in *txn is replaced (and so destroyed,
  // which aborts it if it is still active) as before.
  if (*txn != nullptr && typeid(**txn) == typeid(TransactionImpl)) {
    auto* t = static_cast<TransactionImpl*>(txn->get());
    if (t->db() == this && !t->active()) return t->Restart(isolation);
  }
  std::unique_ptr<txn::Txn> inner;
  SM_TRY(txns_->Begin(static_cast<txn::Isolation>(isolation), &inner));
  auto impl = std::make_unique<TransactionImpl>(this, std::move(inner));
  bool admitted = false;
  {
    std::lock_guard<threads::Mutex> guard(live_txns_mu_);
    if (!txns_detached_) {
      live_txns_.push_back(*impl);
      admitted = true;
    }
  }
  if (!admitted) {
    impl->Detach();  // Close began meanwhile: aborts it
    return Status::Closed("the database is closed");
  }
  *txn = std::move(impl);  // destroys what *txn held: not under live_txns_mu_ (ForgetTxn)
  return Status::OK();
}

void DatabaseImpl::ForgetTxn(TransactionImpl* txn) {
  std::lock_guard<threads::Mutex> guard(live_txns_mu_);
  SM_ASSERT(txn->live_hook.is_linked());  // invariant 1: attached, so on the list
  live_txns_.erase(live_txns_.iterator_to(*txn));
}

void DatabaseImpl::DetachTxns() {
  TxnList detaching;
  {
    std::lock_guard<threads::Mutex> guard(live_txns_mu_);
    txns_detached_ = true;
    detaching.swap(live_txns_);
  }
  while (!detaching.empty()) {
    TransactionImpl& txn = detaching.front();
    detaching.pop_front();
    txn.Detach();
  }
  SM_ASSERT(txns_ == nullptr || txns_->stats().active == 0);
}

Status DatabaseImpl::Checkpoint() {
  SM_TRY(CheckOpen());
  if (options_.read_only) return RefuseReadOnly("Checkpoint");
  SM_TRY(ReclaimDropped());
  return txns_->Checkpoint();
}

Status DatabaseImpl::Prewarm(uint64_t* pages) {
  SM_TRY(CheckOpen());
  const uint64_t budget = pool_->frame_count() * 9 / 10;
  uint64_t read = 0;
  for (uint64_t id = 1; id < volume_->page_count() && read < budget; ++id) {
    if (space::AllocMap::IsMetadataPage(id) || !volume_->IsAllocated(PageId(id))) continue;
    buffer::PageHandle page;
    Status s = pool_->Fix(PageId(id), threads::LatchMode::kShared, &page);
    if (s.IsInvalidArgument()) {  // freed since the check
      s.PermitUnchecked();
      continue;
    }
    SM_TRY(s);
    ++read;
  }
  if (pages != nullptr) *pages = read;
  return Status::OK();
}

Status DatabaseImpl::Verify() {
  std::string report;
  return VerifyWithReport(&report);
}

namespace {
std::string TreeLine(const std::string& name, const index::BtreeStats& st) {
  return name + ": height " + std::to_string(st.height) + ", " + std::to_string(st.pages()) +
         " pages, " + std::to_string(st.records) + " records, " +
         std::to_string(st.key_bytes + st.value_bytes) + " bytes of keys and values, " +
         std::to_string(st.empty_leaves) + " empty leaves\n";
}
}  // namespace

// Three passes: the trees (catalog and tables), the pages, the log.
Status DatabaseImpl::VerifyWithReport(std::string* report) {
  SM_TRY(CheckOpen());
  report->clear();
  std::vector<PageId> reachable;
  SM_TRY(VerifyTrees(report, &reachable));
  SM_TRY(VerifyPages(reachable, report));
  return VerifyLog(report);
}

Status DatabaseImpl::VerifyTrees(std::string* report, std::vector<PageId>* reachable) {
  index::VerifyOptions verify;
  verify.max_page_lsn = log_->end_lsn();
  verify.pages = reachable;
  index::BtreeStats stats;
  Status s = catalog_->Verify(&stats, verify);
  if (!s.ok()) return Status::Corruption("catalog: " + s.ToString());
  *report += TreeLine("(catalog)", stats);
  std::lock_guard<threads::Mutex> guard(tables_mu_);
  // Stubs and chunks are compared only when no transaction is changing them (LargeValues::Check
  // reads without locks).
  const bool quiet = txns_->ActiveTxnIds().empty();
  for (const auto& [name, table] : tables_) {
    s = table->tree()->Verify(&stats, verify);
    if (!s.ok()) return Status::Corruption("table '" + name + "': " + s.ToString());
    *report += TreeLine(name, stats);
    const index::BTree* values = table->value_tree();
    if (values == nullptr) continue;
    s = values->Verify(&stats, verify);
    if (!s.ok()) return Status::Corruption("large values of table '" + name + "': " + s.ToString());
    *report += TreeLine(name + " (large values)", stats);
    if (!quiet) continue;
    uint64_t count = 0;
    s = table->large_values().Check(*table->tree(), &count);
    if (!s.ok()) return Status::Corruption("table '" + name + "': " + s.ToString());
  }
  return Status::OK();
}

// Every page of a tree must be allocated (else the next allocation would hand out a live page),
// and every allocated page outside the trees - left by a dropped table or an aborted create,
// never reused - must still read back intact: the tree walk never reads those, so without this
// pass damage to them would go unreported. They are read from the volume, not through the
// pool: caching a page that FixNew is about to claim would break the pool. An all-zero page
// outside the trees is one allocated but not yet written (a create in progress, or one a crash
// interrupted): counted, not damage. A page that fails is read once more, since on a live
// database a concurrent write of a page allocated after the walk could be seen half done.
Status DatabaseImpl::VerifyPages(const std::vector<PageId>& reachable, std::string* report) {
  std::vector<bool> in_tree(volume_->page_count(), false);
  for (PageId id : reachable) {
    if (!volume_->IsAllocated(id)) {
      return Status::Corruption("page " + std::to_string(id.value()) +
                                ": in a tree, but free in the allocation map");
    }
    if (id.value() < in_tree.size()) in_tree[id.value()] = true;
  }
  io::AlignedBuffer buf(kPageBytes);
  uint64_t allocated = 0, outside = 0, unwritten = 0;  // unwritten: all zero on disk
  for (uint64_t id = 1; id < volume_->page_count(); ++id) {
    if (space::AllocMap::IsMetadataPage(id) || !volume_->IsAllocated(PageId(id))) continue;
    ++allocated;
    if (id < in_tree.size() && in_tree[id]) continue;
    ++outside;
    Status s = volume_->ReadPage(PageId(id), buf.data());
    if (s.IsCorruption() && IsZeroPage(buf.data())) {
      s.PermitUnchecked();
      ++unwritten;
      continue;
    }
    if (s.IsCorruption()) s = volume_->ReadPage(PageId(id), buf.data());
    if (s.IsCorruption()) {
      return Status::Corruption("page " + std::to_string(id) + " (in no tree): " + s.ToString());
    }
    SM_TRY(s);  // an I/O error stays one
  }
  *report += "(pages): " + std::to_string(allocated) + " allocated, " +
             std::to_string(reachable.size()) + " in trees, " + std::to_string(outside) +
             " in none (dropped tables, aborted creates, retired leaves; " +
             std::to_string(unwritten) + " not yet on disk), all intact";
  if (uint64_t rejected = volume_->map_copies_rejected(); rejected != 0) {
    // Not an error (one copy may be torn by a crash, the other serves), but after a clean
    // close it is damage the operator should know about.
    *report += "; " + std::to_string(rejected) +
               " allocation-map copies were invalid at open (the other copy of each was used)";
  }
  *report += "\n";
  return Status::OK();
}

Status DatabaseImpl::VerifyLog(std::string* report) {
  log::LogVerifyReport log_report;
  Status s = log_->Verify(&log_report);
  if (s.IsCorruption()) return Status::Corruption("log: " + s.ToString());
  SM_TRY(s);  // e.g. the log's fatal state, or an I/O error: not damage
  *report += log_report.ToString() + "\n";
  return Status::OK();
}

DatabaseStats DatabaseImpl::stats() {
  DatabaseStats out;
  if (txns_ == nullptr) return out;
  txn::TxnStats t = txns_->stats();
  out.txn_begun = t.begun;
  out.txn_committed = t.committed;
  out.txn_aborted = t.aborted;
  out.txn_failed = t.failed;
  out.checkpoints = t.checkpoints;
  lock::LockStats l = locks_->stats();
  out.lock_requests = l.requests;
  out.lock_waits = l.waits;
  out.deadlocks = l.deadlocks;
  out.lock_timeouts = l.timeouts;
  log::LogStats g = log_->stats();
  out.log_bytes = g.bytes;
  out.log_syncs = g.syncs;
  out.log_space_waits = g.space_waits;
  out.commits_per_sync = g.CommitsPerSync();
  buffer::BufferPoolStats b = pool_->stats();
  out.pool_hits = b.hits;
  out.pool_hinted_hits = b.hinted_hits;
  out.pool_misses = b.misses;
  out.pool_writes = b.writes;
  out.pool_dirty_pages = b.dirty_pages;
  out.volume_pages = volume_->page_count();
  out.volume_pages_allocated = volume_->allocated_pages();
  return out;
}

Status DatabaseImpl::Spawn(std::function<void()> fn, int worker, WaitGroup* group) {
  SM_TRY(CheckOpen());
  if (group != nullptr) group->impl_->Add(1);
  threads::Fiber* fiber = nullptr;
  Status s = runtime_->TrySpawn(
      [fn = std::move(fn), group] {
        fn();
        steps::Detach();  // a fiber that joined teams leaves them before it ends
        if (group != nullptr) group->impl_->Done();  // last: Wait may return, the group go
      },
      worker, &fiber);
  if (!s.ok() && group != nullptr) group->impl_->Done();  // fn will not run
  SM_ASSERT(s.ok() == (fiber != nullptr));
  return s;
}

unsigned DatabaseImpl::workers() const { return runtime_->worker_count(); }

bool DatabaseImpl::OnOwnWorker() const {
  threads::Worker* current = threads::Worker::Current();
  if (current == nullptr || runtime_ == nullptr) return false;
  for (unsigned i = 0; i < runtime_->worker_count(); ++i) {
    if (&runtime_->worker(i) == current) return true;
  }
  return false;
}

Status DatabaseImpl::Close() {
  if (txns_ == nullptr) return Status::Closed("the database is closed");
  if (OnOwnWorker()) {
    return Status::InvalidArgument(
        "Close from a fiber of the database's runtime: Close waits for those fibers");
  }
  uint64_t active = txns_->stats().active;
  if (active != 0) {
    return Status::InvalidArgument(std::to_string(active) +
                                   " transactions are still active: finish them before Close");
  }
  if (closed_.exchange(true, std::memory_order_acq_rel)) {
    return Status::Closed("the database is closed");
  }
  runtime_->Shutdown();  // every spawned fiber finishes first
  // The user's transaction and cursor objects may outlive the database: from here on their
  // calls return Closed, and their locks leave the lock manager now.
  DetachTxns();
  txns_->StopCheckpointer();
  pool_->StopWriter();
  if (options_.read_only) return CloseReadOnly();
  // No transaction is active: every dropped table's pages, and every page a tree retired, can
  // go back to the volume.
  Status s = ReclaimDropped();
  if (s.ok()) s = FreeRetiredPages();
  // A clean shutdown: every page written, then a checkpoint with an empty dirty page table, so
  // the next Open has nothing to redo.
  if (s.ok()) s = pool_->FlushAll();
  if (s.ok()) s = txns_->Checkpoint();
  if (s.ok()) {
    // Nothing runs any more (the runtime, the checkpointer and the writer are stopped): no
    // page is dirty or being written, and the pool and the lock table are at rest, so their
    // whole-structure checks apply.
    SM_ASSERT(pool_->DirtyPages().empty());
    SM_PARANOID(pool_->CheckInvariants());
    SM_PARANOID(locks_->CheckInvariants());
  }
  Status log_closed = log_->Close();
  if (s.ok()) s = log_closed;
  log_closed.PermitUnchecked();
  // Everything logged is durable (LogManager::Close checks the same on its side).
  SM_ASSERT(!s.ok() || log_->durable_lsn() == log_->end_lsn());
  Status volume_closed = volume_->Close();
  if (s.ok()) s = volume_closed;
  volume_closed.PermitUnchecked();
  dir_lock_.reset();  // the files are closed: another Open may start
  return s;
}

// Close of a read-only database: nothing was changed, so nothing is written; the log and the
// volume close without a sync or a control-file update.
Status DatabaseImpl::CloseReadOnly() {
  SM_ASSERT(options_.read_only);
  // No change was admitted (RefuseReadOnly), so none was logged either.
  SM_ASSERT(pool_->DirtyPages().empty());
  SM_ASSERT(log_->end_lsn() == log_->durable_lsn());
  Status s = log_->Close();
  Status volume_closed = volume_->Close();
  if (s.ok()) s = volume_closed;
  volume_closed.PermitUnchecked();
  dir_lock_.reset();  // the files are closed: another Open may start
  return s;
}

// As a process that died at the failure would: no Close, which would write every page and a
// checkpoint saying the database is whole when recovery (or a creation) stopped half way; the
// next Open does again what this one did not finish.
void DatabaseImpl::AbandonFailedStart() {
  closed_.store(true, std::memory_order_release);
  if (log_ != nullptr) log_->Abandon(Status::Aborted("the database's Open failed"));
  if (runtime_ != nullptr) runtime_->Shutdown();
  if (txns_ != nullptr) txns_->StopCheckpointer();
  if (pool_ != nullptr) pool_->StopWriter();
}

void DatabaseImpl::TEST_Crash() {
  closed_.store(true, std::memory_order_release);
  log_->TEST_Kill();
  runtime_->Shutdown();
  txns_->StopCheckpointer();
  pool_->StopWriter();
  dir_lock_.reset();  // a dead process holds no lock
}

void DatabaseImpl::Teardown() {
  if (runtime_ != nullptr) runtime_->Shutdown();
  DetachTxns();  // after TEST_Crash (after Close there are none left)
  if (installed_steps_) {
    steps::Uninstall();
    installed_steps_ = false;
  }
  if (txns_ != nullptr) txns_->StopCheckpointer();
  if (pool_ != nullptr) pool_->StopWriter();
  tables_.clear();
  dropped_.clear();
  catalog_.reset();
  wal_.reset();
  txns_.reset();
  locks_.reset();
  pool_.reset();
  log_.reset();
  volume_.reset();
  runtime_.reset();
  dir_lock_.reset();
}

}  // namespace api
}  // namespace sm
