// TableImpl, TransactionImpl and CursorImpl: public calls mapped onto the B-tree with the
// transaction's logging and key-lock context.
#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <typeinfo>

#include "index/btree_locks.h"
#include "sm/api/api_internal.h"
#include "sm/common/key_encoding.h"
#include "steps/steps.h"

namespace sm::api {

// ---- TransactionImpl -------------------------------------------------------------------------

TransactionImpl::TransactionImpl(DatabaseImpl* db, std::unique_ptr<txn::Txn> txn)
    : db_(db), txn_(std::move(txn)) {}

TransactionImpl::~TransactionImpl() {
  DetachCursors(Status::TxnFinished("the cursor's transaction object was destroyed"));
  if (db_ == nullptr) return;  // detached: nothing of the database is left to give back
  db_->ForgetTxn(this);
  if (txn_->active()) db_->txns()->Abort(txn_.get()).PermitUnchecked();
  db_->txns()->Recycle(std::move(txn_));
}

void TransactionImpl::Detach() {
  SM_ASSERT(db_ != nullptr);
  SM_ASSERT(!live_hook.is_linked());  // DetachTxns took it off the list
  DetachCursors(Status::Closed("the database is closed"));
  // Only when the database is destroyed without Close (which refuses while one is active).
  if (txn_->active()) db_->txns()->Abort(txn_.get()).PermitUnchecked();
  SM_ASSERT(!txn_->active());
  detached_id_ = txn_->id().value();
  detached_isolation_ = static_cast<Isolation>(txn_->isolation());
  DropKeyLocks();
  txn_.reset();  // its lock owner leaves the lock manager, which is still there
  ended_by_ = Status::OK();
  db_ = nullptr;
}

void TransactionImpl::DetachCursors(const Status& why) {
  why.PermitUnchecked();  // a reason handed to the cursors, not a result to check
  while (!cursors_.empty()) {
    TxnCursor& cursor = cursors_.front();
    cursors_.pop_front();
    cursor.Detach(why);
  }
}

void TransactionImpl::DropKeyLocks() {
  for (auto& locks : key_locks_) locks.reset();
  inline_in_use_ = 0;
  overflow_locks_.clear();
}

Status TransactionImpl::Restart(Isolation isolation) {
  SM_ASSERT(!txn_->active());
  const txn::Txn* before = txn_.get();
  SM_TRY(db_->txns()->Begin(static_cast<txn::Isolation>(isolation), &txn_));
  ended_by_ = Status::OK();
  if (txn_.get() != before) {  // another Txn, another lock owner: the hooks are of the old one
    DropKeyLocks();
    return Status::OK();
  }
  ForEachKeyLocks([this](index::TxnKeyLocks& locks) { locks.Reset(txn_->isolation()); });
  return Status::OK();
}

template <typename Fn>
void TransactionImpl::ForEachKeyLocks(Fn fn) {
  for (uint32_t in_use = inline_in_use_; in_use != 0; in_use &= in_use - 1) {
    fn(*key_locks_[std::countr_zero(in_use)]);
  }
  for (auto& locks : overflow_locks_) fn(*locks);
}

index::TxnKeyLocks* TransactionImpl::KeyLocks(uint32_t table_id) {
  if (table_id < kInlineTableIds && key_locks_[table_id].has_value()) [[likely]] {
    return &*key_locks_[table_id];
  }
  return NewKeyLocks(table_id);
}

index::TxnKeyLocks* TransactionImpl::NewKeyLocks(uint32_t table_id) {
  if (table_id < kInlineTableIds) {
    inline_in_use_ |= uint32_t{1} << table_id;
    return &key_locks_[table_id].emplace(db_->locks(), txn_->lock_owner(), txn_->isolation(),
                                         table_id, txn_.get());
  }
  for (auto& held : overflow_locks_) {
    if (held->table() == table_id) return held.get();
  }
  overflow_locks_.push_back(std::make_unique<index::TxnKeyLocks>(
      db_->locks(), txn_->lock_owner(), txn_->isolation(), table_id, txn_.get()));
  return overflow_locks_.back().get();
}

Status TransactionImpl::NotActive() const {
  if (txn_ == nullptr) return Status::Closed("the transaction's database is closed");
  SM_ASSERT(!txn_->active());
  if (!ended_by_.ok()) return ended_by_;
  return Status::TxnFinished("transaction " + std::to_string(id()) + " already finished (" +
                             txn::TxnStateName(txn_->state()) + ")");
}

Isolation TransactionImpl::isolation() const {
  return txn_ != nullptr ? static_cast<Isolation>(txn_->isolation()) : detached_isolation_;
}

// Commit and abort are the STEPS "commit" operation (the paper's transaction end).
Status TransactionImpl::Commit() {
  if (!active()) return NotActive();
  steps::BeginOp(steps::KeyFor(steps::Op::kCommit, 0));
  return db_->txns()->Commit(txn_.get());
}

Status TransactionImpl::Commit(CommitMode mode) {
  if (!active()) return NotActive();
  steps::BeginOp(steps::KeyFor(steps::Op::kCommit, 0));
  return db_->txns()->Commit(txn_.get(), static_cast<log::CommitMode>(mode));
}

Status TransactionImpl::Abort() {
  if (!active()) {
    // The engine rolled it back (RollBackVictim): what the caller asks for has happened, and
    // the usual reaction to a retryable error, abort and retry, must not fail.
    if (txn_ != nullptr &&
        (ended_by_.IsRetryable() || ended_by_.code() == Status::Code::kAborted)) {
      return Status::OK();
    }
    return NotActive();
  }
  steps::BeginOp(steps::KeyFor(steps::Op::kCommit, 0));
  return db_->txns()->Abort(txn_.get());
}

// A deadlock victim or a lock timeout is rolled back at once, as InnoDB and PostgreSQL do,
// not left active for the caller to abort: a caller that went on (or did not look) would
// commit the writes made before the failed call, half a transaction, and until it aborted it
// would hold the locks the other members of the deadlock wait for.
Status TransactionImpl::RollBackVictim(Status cause) {
  SM_ASSERT(cause.IsRetryable());
  const std::string why =
      std::string(cause.message()) + "; transaction " + std::to_string(id()) + " was rolled back";
  return EndWith(cause.IsDeadlock() ? Status::Deadlock(why) : Status::LockTimeout(why));
}

Status TransactionImpl::RollBackAfter(Status cause) {
  SM_ASSERT(!cause.ok());
  if (!active()) return cause;  // the failure itself ended it (a fatal log error)
  cause.PermitUnchecked();      // reported inside the Aborted status below
  const std::string why =
      std::string(cause.message()) + "; transaction " + std::to_string(id()) + " was rolled back";
  return EndWith(Status::Aborted(why));
}

Status TransactionImpl::EndWith(Status cause) {
  SM_ASSERT(txn_->active());  // every operation resolves an active transaction first
  cause.PermitUnchecked();    // a record: kept in ended_by_, or replaced by the abort's failure
  steps::BeginOp(steps::KeyFor(steps::Op::kCommit, 0));  // a transaction end, as Abort is
  Status rolled_back = db_->txns()->Abort(txn_.get());
  SM_ASSERT(!txn_->active());  // rolled back, or failed: either way finished
  if (rolled_back.ok()) {
    ended_by_ = std::move(cause);
  } else {
    ended_by_ = std::move(rolled_back);  // the database latched its failed state (Fatal)
  }
  ended_by_.PermitUnchecked();  // a record, handed out as copies
  return ended_by_;
}

// ---- CursorImpl ------------------------------------------------------------------------------

namespace {

class CursorImpl final : public TxnCursor {
 public:
  // The cursor locks through the transaction's hook for the table, like every other operation
  // on it: a hook's pin (index/btree_locks.h) is then never released under another hook's
  // lock on the same key.
  CursorImpl(TransactionImpl* txn, const index::BTree* tree, LargeValues* large, uint32_t table_id,
             const ScanOptions& options)
      : cursor_(tree) {
    Reuse(txn, tree, large, table_id, options);
  }
  ~CursorImpl() override {
    if (txn_ != nullptr) txn_->ForgetCursor(this);
  }

  // Becomes a new cursor for these arguments, in place (Table::NewCursor).
  void Reuse(TransactionImpl* txn, const index::BTree* tree, LargeValues* large, uint32_t table_id,
             const ScanOptions& options) {
    if (txn_ != txn) {  // joins the cursor list of its new transaction object (invariant 2)
      if (txn_ != nullptr) txn_->ForgetCursor(this);
      txn->AdoptCursor(this);
    }
    txn_ = txn;
    txn_id_ = txn->id();
    cursor_.Reuse(tree,
                  index::OpContext{txn->txn(), txn->KeyLocks(table_id), nullptr, large, nullptr});
    if (options.has_lower) cursor_.SetLower(options.lower, options.lower_inclusive);
    if (options.has_upper) cursor_.SetUpper(options.upper, options.upper_inclusive);
    reverse_ = options.reverse;
  }

  Status Start() { return reverse_ ? cursor_.SeekToLast() : cursor_.SeekToFirst(); }
  bool Valid() const override { return cursor_.Valid() && TxnActive(); }
  Status status() const override { return CheckTxn(); }
  void Detach(const Status& why) override {
    SM_ASSERT(txn_ != nullptr);
    SM_ASSERT(!why.ok());
    txn_ = nullptr;
    detached_by_ = why;
    detached_by_.PermitUnchecked();  // a record, handed out as copies
  }
  std::string_view key() const override { return cursor_.key(); }
  std::string_view value() const override { return cursor_.value(); }
  Status Next() override {
    SM_TRY(CheckTxn());
    if (!cursor_.Valid()) return Status::InvalidArgument("Next on an exhausted cursor");
    return txn_->Settle(reverse_ ? cursor_.Prev() : cursor_.Next());
  }
  Status Prev() override {
    SM_TRY(CheckTxn());
    if (!cursor_.Valid()) return Status::InvalidArgument("Prev on an exhausted cursor");
    return txn_->Settle(reverse_ ? cursor_.Next() : cursor_.Prev());
  }
  Status SeekToFirst() override {
    SM_TRY(CheckTxn());
    return txn_->Settle(cursor_.SeekToFirst());
  }
  Status SeekToLast() override {
    SM_TRY(CheckTxn());
    return txn_->Settle(cursor_.SeekToLast());
  }
  Status Seek(std::string_view key) override {
    SM_TRY(CheckTxn());
    return txn_->Settle(cursor_.Seek(key));
  }
  Status SeekForPrev(std::string_view key) override {
    SM_TRY(CheckTxn());
    return txn_->Settle(cursor_.SeekForPrev(key));
  }
  Status NextBatch(size_t max_rows, const RowVisitor& row, size_t* visited) override {
    *visited = 0;
    SM_TRY(CheckTxn());
    if (reverse_) return Status::InvalidArgument("NextBatch on a reverse cursor");
    if (!cursor_.Valid()) return Status::InvalidArgument("NextBatch on an exhausted cursor");
    return txn_->Settle(cursor_.NextBatch(max_rows, row, visited));
  }

 private:
  // OK while the transaction the cursor was made in is active. The transaction object may
  // have begun another transaction since (Database::Begin): that one is not the cursor's.
  bool TxnActive() const { return txn_ != nullptr && txn_->id() == txn_id_ && txn_->active(); }
  Status CheckTxn() const {
    if (TxnActive()) [[likely]] return Status::OK();
    if (txn_ == nullptr) return detached_by_;
    if (txn_->id() != txn_id_) {
      return Status::TxnFinished("the cursor's transaction " + std::to_string(txn_id_) +
                                 " has finished");
    }
    return txn_->NotActive();
  }

  TransactionImpl* txn_ = nullptr;  // null once detached
  Status detached_by_;              // what the calls return once detached
  uint64_t txn_id_ = 0;
  index::Cursor cursor_;
  bool reverse_ = false;
};

}  // namespace

// ---- TableImpl -------------------------------------------------------------------------------

TableImpl::TableImpl(DatabaseImpl* db, std::string name, const CatalogEntry& entry,
                     std::unique_ptr<index::BTree> tree)
    : db_(db), name_(std::move(name)), id_(entry.id), kind_(entry.kind), tree_(std::move(tree)) {
  steps::SetIndexName(id_, name_);  // team reports say "index fetch (name)"
}

Status TableImpl::ResolveSlow(Transaction* txn, TransactionImpl** impl) const {
  SM_TRY(db_->CheckOpen());
  if (txn == nullptr) return Status::InvalidArgument("no transaction");
  if (typeid(*txn) != typeid(TransactionImpl)) {
    return Status::InvalidArgument("not a transaction of this library");
  }
  auto* t = static_cast<TransactionImpl*>(txn);
  if (t->db() == nullptr) return t->NotActive();  // detached: its database has closed
  if (t->db() != db_) {
    return Status::InvalidArgument("the transaction belongs to another database");
  }
  if (!t->active()) return t->NotActive();
  if (dropped_.load(std::memory_order_acquire)) {
    return Status::NotFound("table '" + name_ + "' was dropped");
  }
  *impl = t;
  return Status::OK();
}

Status TableImpl::Get(Transaction* txn, std::string_view key, std::string* value) {
  return Fetch(txn, key, value, /*for_update=*/false);
}

Status TableImpl::GetForUpdate(Transaction* txn, std::string_view key, std::string* value) {
  return Fetch(txn, key, value, /*for_update=*/true);
}

Status TableImpl::Fetch(Transaction* txn, std::string_view key, std::string* value,
                        bool for_update) {
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  steps::BeginOp(steps::KeyFor(steps::Op::kIndexFetch, id_));
  return t->Settle(tree_->Lookup(
      key, value, index::OpContext{t->txn(), t->KeyLocks(id_), t->Hint(id_), &large_, nullptr},
      for_update));
}

Status TableImpl::GetMany(Transaction* txn, const std::vector<std::string_view>& keys,
                          bool for_update, const RowFn& row) {
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  // Key i's leaf is asked for when key i - kLeavesAhead is read: enough reads in between to
  // cover a miss to memory, few enough that the lines are still in the cache when read.
  constexpr size_t kLeavesAhead = 4;
  index::LeafHint hints[kLeavesAhead];
  const size_t n = keys.size();
  // Many keys in order share their leaves' parents: the descents start there. A short or
  // unordered batch rarely does, and would pay for the test at every key.
  constexpr size_t kSharedParentKeys = 16;
  index::ParentHint parent;
  index::ParentHint* const shared_parent =
      n >= kSharedParentKeys && std::is_sorted(keys.begin(), keys.end()) ? &parent : nullptr;
  // Only a hint: whatever fails here (a key too long, a damaged node) fails again, in key
  // order, in that key's read.
  auto ask_ahead = [&](size_t j) {
    index::LeafHint& hint = hints[j % kLeavesAhead];
    if (!tree_->PrefetchLeaf(keys[j], &hint, shared_parent).ok()) hint.Clear();
  };
  for (size_t i = 0; i < n && i < kLeavesAhead; ++i) ask_ahead(i);
  std::string value;  // keeps its capacity from one row to the next
  for (size_t i = 0; i < n; ++i) {
    // `row` may have ended the transaction, closed the database or dropped the table.
    if (i > 0) SM_TRY(Resolve(txn, &t));
    steps::BeginOp(steps::KeyFor(steps::Op::kIndexFetch, id_));
    index::LeafHint& hint = hints[i % kLeavesAhead];
    Status found = tree_->Lookup(
        keys[i], &value, index::OpContext{t->txn(), t->KeyLocks(id_), &hint, &large_, nullptr},
        for_update);
    if (!found.ok() && !found.IsNotFound()) return t->Settle(std::move(found));
    // The update that follows a read for update finds the leaf through the table's hint.
    if (for_update && !hint.ahead) t->Hint(id_)->TakeLeafFrom(hint);
    if (i + kLeavesAhead < n) ask_ahead(i + kLeavesAhead);
    if (found.IsNotFound()) value.clear();
    if (!row(i, found, value)) break;
  }
  return Status::OK();
}

Status TableImpl::Write(Op op, Transaction* txn, std::string_view key, std::string_view value) {
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  if (db_->read_only()) [[unlikely]] {
    constexpr const char* kNames[] = {"Insert", "Update", "Upsert", "Delete"};
    static_assert(static_cast<int>(Op::kDelete) == 3);
    return db_->RefuseReadOnly(kNames[static_cast<int>(op)]);
  }
  steps::BeginOp(StepsKey(op));
  // Every write learns whether it replaced a stub, whose chunks it then frees.
  index::ExternalWrite external{false, false, t->stub_buffer()};
  const index::OpContext ctx{t->txn(), t->KeyLocks(id_), t->Hint(id_), &large_, &external};
  if (op != Op::kDelete && IsLargeRecord(key, value)) [[unlikely]] {
    return t->Settle(WriteLarge(op, t, key, value, ctx));
  }
  Status s = WriteTree(op, key, value, ctx);
  if (s.ok() && external.replaced_stub) [[unlikely]] {
    s = large_.Free(t->txn(), *external.replaced);
    if (!s.ok()) return t->RollBackAfter(std::move(s));
  }
  return t->Settle(std::move(s));
}

Status TableImpl::WriteLarge(Op op, TransactionImpl* t, std::string_view key,
                             std::string_view value, const index::OpContext& ctx) {
  SM_TRY(index::BTree::CheckKey(key));
  if (value.size() > kMaxValueBytes) {
    return Status::InvalidArgument("a value of " + std::to_string(value.size()) +
                                   " bytes exceeds the largest, " + std::to_string(kMaxValueBytes) +
                                   " bytes");
  }
  if (large_.tree() == nullptr) SM_TRY(db_->CreateValueTree(this));
  const StubInfo stub = large_.NewStub(value);
  ctx.external_write->value_is_stub = true;
  // The stub first: a Duplicate, a NotFound or a lock error then costs no chunk.
  SM_TRY(WriteTree(op, key, EncodeStub(stub), ctx));
  Status s = large_.WriteChunks(t->txn(), stub, value);
  if (s.ok() && ctx.external_write->replaced_stub) {
    s = large_.Free(t->txn(), *ctx.external_write->replaced);
  }
  if (!s.ok()) return t->RollBackAfter(std::move(s));
  return Status::OK();
}

Status TableImpl::WriteTree(Op op, std::string_view key, std::string_view value,
                            const index::OpContext& ctx) {
  switch (op) {
    case Op::kInsert:
      return tree_->Insert(key, value, ctx);
    case Op::kUpdate:
      return tree_->Update(key, value, ctx);
    case Op::kUpsert:
      return tree_->Upsert(key, value, ctx);
    case Op::kDelete:
      return tree_->Delete(key, ctx);
  }
  return Status::InvalidArgument("unknown operation");
}

// The STEPS operation of a write (paper Table 2: insert and delete per index, update not).
steps::TeamKey TableImpl::StepsKey(Op op) const {
  switch (op) {
    case Op::kInsert:
      return steps::KeyFor(steps::Op::kInsert, id_);
    case Op::kDelete:
      return steps::KeyFor(steps::Op::kDelete, id_);
    case Op::kUpdate:
    case Op::kUpsert:
      break;
  }
  return steps::KeyFor(steps::Op::kUpdate, id_);
}

Status TableImpl::Insert(Transaction* txn, std::string_view key, std::string_view value) {
  return Write(Op::kInsert, txn, key, value);
}
Status TableImpl::Update(Transaction* txn, std::string_view key, std::string_view value) {
  return Write(Op::kUpdate, txn, key, value);
}
Status TableImpl::Modify(Transaction* txn, std::string_view key, const ValueEdit& edit) {
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  if (db_->read_only()) [[unlikely]]
    return db_->RefuseReadOnly("Modify");
  if (!edit) return Status::InvalidArgument("Modify without an edit");
  steps::BeginOp(StepsKey(Op::kUpdate));
  // A plain value stays plain (its size does not change), so no stub is written or replaced.
  return t->Settle(tree_->Modify(key, edit,
                                 index::OpContext{t->txn(), t->KeyLocks(id_), t->Hint(id_)}));
}
Status TableImpl::Upsert(Transaction* txn, std::string_view key, std::string_view value) {
  return Write(Op::kUpsert, txn, key, value);
}
Status TableImpl::Delete(Transaction* txn, std::string_view key) {
  return Write(Op::kDelete, txn, key, {});
}

Status TableImpl::Add(Transaction* txn, std::string_view key, uint32_t offset, int64_t delta,
                      std::string* value) {
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  if (db_->read_only()) [[unlikely]]
    return db_->RefuseReadOnly("Add");
  steps::BeginOp(StepsKey(Op::kUpdate));  // an update of the row, for STEPS' teams
  return t->Settle(tree_->Add(key, offset, delta, value,
                              index::OpContext{t->txn(), t->KeyLocks(id_), t->Hint(id_)}));
}

Status TableImpl::NewCursor(Transaction* txn, const ScanOptions& options,
                            std::unique_ptr<Cursor>* cursor) {
  if (cursor == nullptr) return Status::InvalidArgument("no cursor to return");
  TransactionImpl* t = nullptr;
  Status s = Resolve(txn, &t);
  if (s.ok()) s = t->Settle(StartCursor(t, options, cursor));
  if (!s.ok()) cursor->reset();
  return s;
}

Status TableImpl::SplitRange(Transaction* txn, const ScanOptions& range, size_t parts,
                             std::vector<std::string>* cuts) {
  if (cuts == nullptr) return Status::InvalidArgument("no vector for the cuts");
  cuts->clear();
  if (parts == 0) return Status::InvalidArgument("a range splits into at least one part");
  if (range.reverse) return Status::InvalidArgument("a reverse range is not split");
  TransactionImpl* t = nullptr;
  SM_TRY(Resolve(txn, &t));
  index::ScanRange tree_range;
  if (range.has_lower) tree_range.lower.Set(range.lower, range.lower_inclusive);
  if (range.has_upper) tree_range.upper.Set(range.upper, range.upper_inclusive);
  return t->Settle(tree_->SplitRange(tree_range, parts, cuts));
}

Status TableImpl::StartCursor(TransactionImpl* t, const ScanOptions& options,
                              std::unique_ptr<Cursor>* cursor) {
  steps::BeginOp(steps::KeyFor(steps::Op::kScan, id_));
  if (*cursor != nullptr && typeid(**cursor) == typeid(CursorImpl)) {
    auto* impl = static_cast<CursorImpl*>(cursor->get());
    impl->Reuse(t, tree_.get(), &large_, id_, options);
    return impl->Start();
  }
  auto impl = std::make_unique<CursorImpl>(t, tree_.get(), &large_, id_, options);
  SM_TRY(impl->Start());
  *cursor = std::move(impl);
  return Status::OK();
}

}  // namespace sm::api

namespace sm {

// The generic batch: Next, then the row, one at a time (a cursor of another implementation).
Status Cursor::NextBatch(size_t max_rows, const RowVisitor& row, size_t* visited) {
  *visited = 0;
  while (*visited < max_rows) {
    SM_TRY(Next());
    if (!Valid()) break;
    ++*visited;
    if (!row(key(), value())) break;
  }
  return Status::OK();
}

ScanOptions ScanOptions::Prefix(std::string_view prefix) {
  ScanOptions o;
  o.lower = prefix;
  o.has_lower = true;
  if (std::optional<std::string> upper = PrefixSuccessor(prefix)) {
    o.upper = std::move(*upper);
    o.has_upper = true;
  }
  return o;
}

}  // namespace sm
