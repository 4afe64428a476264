// The buffer operator of Zhou & Ross (SIGMOD 2004, section 5): an iterator that, called with
// its buffer empty, pulls up to N tuples from its child in one go and then serves them one per
// call without running the child's code, so that parent and child code alternate once per N
// tuples instead of once per tuple (each keeps its instructions in the L1-I for N calls). It
// pulls with NextBatch, so that filling costs a call per batch of the child's (a scan's decoded
// page), not per tuple: what a buffer adds per tuple is little more than its own Next.
//
// It stores pointers, not copies: it asks its child for a window of N + W - 1 tuples, W being
// the window asked of the buffer (operator.h). When the buffer refills, the child returns N
// more tuples while the parent may still hold the W - 1 it was given before the call that
// triggered the refill; the N stored pointers are then the child's most recent tuples. Seen
// from the parent, a tuple the buffer returned stays valid until the child has returned its
// window's worth after it; the child runs at most N - 1 tuples ahead of what the buffer has
// returned, so the buffer's window is the child's less N - 1.
//
// Invariants: 0 <= next_ <= count_ <= capacity_; tuples_[next_, count_) are the child's tuples
// not yet returned, in the child's order; once the child has ended (child_done_) the buffer
// returns what it holds, then null until reopened.
#include <vector>

#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

class BufferOperator final : public Operator {
 public:
  BufferOperator(RowSchema schema, uint32_t capacity, std::string note)
      : Operator("Buffer", std::move(schema)), capacity_(capacity), note_(std::move(note)) {
    SM_ASSERT(capacity >= 1);
  }
  std::string detail() const override {
    return std::to_string(capacity_) + " tuples" + (note_.empty() ? "" : "; " + note_);
  }
  void OutputModules(std::vector<std::string>* out) const override { out->push_back("buffer"); }
  Operator* streamed_input() const override { return child(0); }
  InputOrder input_order(size_t) const override { return InputOrder::kPassedOn; }
  uint32_t window() const override {
    const uint32_t w = child(0)->window();
    if (w == kUnboundedWindow) return w;
    SM_ASSERT(w >= capacity_);  // the child keeps what it was asked to (operator.h, inv. 3)
    return w - (capacity_ - 1);
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    const uint64_t want = uint64_t{capacity_} + requested_window() - 1;
    child(0)->RequestWindow(want >= kUnboundedWindow ? kUnboundedWindow - 1
                                                     : static_cast<uint32_t>(want));
    tuples_.assign(capacity_, nullptr);
    next_ = count_ = 0;
    child_done_ = false;
    return OpenChildren(ctx);
  }

  Status NextImpl(const Value** row) override {
    if (next_ == count_) [[unlikely]]
      return NextAfterFill(row);
    *row = tuples_[next_++];
    return Status::OK();
  }

  void CloseImpl() override {
    tuples_.clear();
    tuples_.shrink_to_fit();
    next_ = count_ = 0;
  }

 private:
  // Pulls the child's next tuples into the empty buffer, up to capacity_ or the child's end.
  // NextImpl with the buffer empty. Not inlined, so that NextImpl's per-tuple path saves no
  // registers for it.
  [[gnu::noinline]] Status NextAfterFill(const Value** row) {
    *row = nullptr;
    if (child_done_) return Status::OK();
    SM_TRY(Fill());
    if (count_ != 0) *row = tuples_[next_++];
    return Status::OK();
  }

  Status Fill() {
    SM_DASSERT(next_ == count_);
    next_ = count_ = 0;
    Operator* input = child(0);
    while (count_ < capacity_) {
      uint32_t got = 0;
      SM_TRY(input->NextBatch(tuples_.data() + count_, capacity_ - count_, &got));
      if (got == 0) {
        child_done_ = true;
        break;
      }
      count_ += got;
    }
    return Status::OK();
  }

  const uint32_t capacity_;
  const std::string note_;
  std::vector<const Value*> tuples_;
  uint32_t next_ = 0;
  uint32_t count_ = 0;
  bool child_done_ = false;
};

class BufferNode final : public PlanNode {
 public:
  BufferNode(NodePtr child, uint32_t capacity)
      : PlanNode("Buffer", Status::OK()), capacity_(capacity) {
    set_schema(child->schema());
    set_estimated_rows(child->estimated_rows());
    AddChild(std::move(child));
  }
  std::string Detail() const override { return std::to_string(capacity_) + " tuples"; }

 private:
  Status MakeOperator(std::unique_ptr<Operator>* out) const override {
    std::unique_ptr<Operator> child;
    SM_TRY(children()[0]->Instantiate(&child));
    std::unique_ptr<Operator> op = MakeBufferOperator(schema(), capacity_);
    op->AddChild(std::move(child));
    *out = std::move(op);
    return Status::OK();
  }
  uint32_t capacity_;
};

}  // namespace

std::unique_ptr<Operator> MakeBufferOperator(RowSchema schema, uint32_t tuples, std::string note) {
  SM_ASSERT(tuples >= 1 && tuples <= kMaxBufferTuples);
  return std::make_unique<BufferOperator>(std::move(schema), tuples, std::move(note));
}

NodePtr MakeBufferNode(NodePtr child, uint32_t tuples) {
  if (tuples == 0 || tuples > kMaxBufferTuples) {
    return MakeErrorNode(Status::InvalidArgument("a buffer holds 1 to " +
                                                 std::to_string(kMaxBufferTuples) +
                                                 " tuples, not " + std::to_string(tuples)));
  }
  return std::make_shared<BufferNode>(std::move(child), tuples);
}

}  // namespace sm::query
