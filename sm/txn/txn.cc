// Txn: construction, destruction and the names of its enums.
#include "sm/txn/txn.h"

#include "sm/common/assert.h"
#include "sm/txn/txn_manager.h"

namespace sm::txn {

const char* IsolationName(Isolation isolation) {
  switch (isolation) {
    case Isolation::kSerializable:
      return "serializable";
    case Isolation::kReadCommitted:
      return "read-committed";
  }
  return "?";
}

const char* TxnStateName(TxnState state) {
  switch (state) {
    case TxnState::kActive:
      return "active";
    case TxnState::kCommitted:
      return "committed";
    case TxnState::kAborted:
      return "aborted";
    case TxnState::kFailed:
      return "failed";
  }
  return "?";
}

Txn::Txn(TxnManager* manager, TxnId id, Isolation isolation)
    : manager_(manager), id_(id), isolation_(isolation), lock_owner_(manager->locks(), id) {}

void Txn::Restart(TxnId id, Isolation isolation) {
  SM_ASSERT(!active() && !active_hook_.is_linked());
  SM_ASSERT(lock_owner_.lock_count() == 0);
  id_ = id;
  isolation_ = isolation;
  state_ = TxnState::kActive;
  first_lsn_ = Lsn();
  last_lsn_ = Lsn();
  undo_next_ = Lsn();
  commit_logged_ = false;
  abort_logged_ = false;
  records_logged_ = 0;
  compensating_ = false;
  compensation_undo_next_ = Lsn();
  read_committed_bound_ = Lsn();
  read_committed_bound_fresh_ = false;
  lock_owner_.Reset(id);
}

bool Txn::HoldsOnlyCommitted(Lsn page_lsn) {
  if (!read_committed_bound_.valid()) read_committed_bound_ = manager_->PublishedUncommittedBound();
  if (page_lsn < read_committed_bound_) return true;
  if (read_committed_bound_fresh_) return false;
  read_committed_bound_fresh_ = true;
  read_committed_bound_ = manager_->UncommittedBound();
  SM_DASSERT(read_committed_bound_.valid());
  return page_lsn < read_committed_bound_;
}

Txn::~Txn() {
  // A transaction dropped while active is rolled back, as SQLite and LevelDB-style handles do:
  // destroying the handle must never leave its changes or locks behind.
  if (state_ == TxnState::kActive && manager_ != nullptr) {
    manager_->Abort(this).PermitUnchecked();
  }
  SM_ASSERT(!active_hook_.is_linked());
}

}  // namespace sm::txn
