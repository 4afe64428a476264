// Buffer placement (contract in refine.h).
#include "query/refine.h"

#include <unistd.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "query/nodes.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

bool IsBuffer(const Operator& op) { return op.name() == "Buffer"; }

// Puts a buffer of `tuples` above op's child i; it expects the child's rows.
void BufferChild(Operator* op, size_t i, uint32_t tuples, std::string note = std::string()) {
  const Operator& child = *op->children()[i];
  std::unique_ptr<Operator> buffer = MakeBufferOperator(child.schema(), tuples, std::move(note));
  buffer->set_estimated_rows(child.estimated_rows());
  op->InsertAboveChild(i, std::move(buffer));
}

// kOn: a buffer above every child that is neither blocking nor a buffer, all the way down.
void BufferEveryChild(Operator* op, uint32_t tuples) {
  for (size_t i = 0; i < op->children().size(); ++i) {
    Operator* child = op->children()[i].get();
    BufferEveryChild(child, tuples);
    if (!child->blocking() && !IsBuffer(*child) && !IsBuffer(*op)) {
      BufferChild(op, i, tuples);
    }
  }
}

std::string Thousands(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<std::string> Union(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// kAuto: the bottom-up pass of refine.h.
class Refiner {
 public:
  Refiner(const BufferOptions& options, const FootprintTable& footprints, uint64_t l1i)
      : options_(options),
        footprints_(footprints),
        l1i_(l1i),
        threshold_rows_(options.threshold_rows >= 0        ? options.threshold_rows
                        : footprints.threshold_rows() >= 0 ? footprints.threshold_rows()
                                                           : kDefaultBufferThreshold) {}

  // Refines the subtree at `op`; *group: the modules of the open group `op` ends, empty if
  // `op` joins no group.
  void Refine(Operator* op, std::vector<std::string>* group) {
    group->clear();
    const bool joins = Eligible(*op);
    std::vector<std::string> output;
    op->OutputModules(&output);
    if (joins) *group = output;
    for (size_t i = 0; i < op->children().size(); ++i) {
      std::vector<std::string> below;
      Refine(op->children()[i].get(), &below);
      if (below.empty()) continue;
      std::vector<std::string> input;
      op->InputModules(i, &input);
      // An input taken in while the operator returns tuples runs with the operator's group;
      // one taken in another phase (a build, a blocking operator's input) runs alone.
      const bool same_phase = joins && input == output;
      const std::vector<std::string> together =
          Union(same_phase ? Union(*group, below) : below, input);
      const uint64_t bytes = footprints_.Bytes(together);
      if (bytes <= l1i_) {
        if (same_phase) *group = Union(*group, below);
        continue;  // fits: no buffer, and a consumer outside groups needs none either
      }
      const uint64_t below_bytes = footprints_.Bytes(below);
      BufferChild(op, i, options_.tuples,
                  "group below " + Thousands(below_bytes) + " B, with " + op->name() + " " +
                      Thousands(bytes) + " B > L1-I " + Thousands(l1i_) + " B");
    }
    op->set_refinement(joins ? "group " + Thousands(footprints_.Bytes(*group)) + " B"
                             : "no group: " + WhyNot(*op));
  }

 private:
  std::string WhyNot(const Operator& op) const {
    if (op.blocking()) return "blocking";
    if (IsBuffer(op)) return "a buffer";
    if (std::isinf(threshold_rows_)) return "calibrated: buffering does not pay";
    return "rows <= threshold " + Thousands(static_cast<uint64_t>(threshold_rows_));
  }

  bool Eligible(const Operator& op) const {
    if (op.blocking() || IsBuffer(op)) return false;
    if (std::isinf(threshold_rows_)) return false;
    const double rows = op.estimated_rows();
    return rows < 0 || rows > threshold_rows_;  // unknown: assume many
  }

  const BufferOptions& options_;
  const FootprintTable& footprints_;
  const uint64_t l1i_;
  const double threshold_rows_;  // +infinity: calibration found that buffering never pays
};

}  // namespace

uint64_t MachineL1iBytes() {
  const long bytes = sysconf(_SC_LEVEL1_ICACHE_SIZE);
  return bytes > 0 ? static_cast<uint64_t>(bytes) : 32u << 10;
}

Status PlaceBuffers(const BufferOptions& options, Operator* root) {
  SM_ASSERT(root != nullptr);
  if (options.tuples == 0 || options.tuples > kMaxBufferTuples) {
    return Status::InvalidArgument("a buffer holds 1 to " + std::to_string(kMaxBufferTuples) +
                                   " tuples, not " + std::to_string(options.tuples));
  }
  switch (options.mode) {
    case BufferMode::kOff:
      break;
    case BufferMode::kOn:
      BufferEveryChild(root, options.tuples);
      break;
    case BufferMode::kAuto: {
      const FootprintTable& footprints =
          options.footprints != nullptr ? *options.footprints : FootprintTable::Default();
      const uint64_t l1i = options.l1i_bytes != 0 ? options.l1i_bytes : MachineL1iBytes();
      std::vector<std::string> group;
      Refiner(options, footprints, l1i).Refine(root, &group);  // none above the root
      break;
    }
  }
  return Status::OK();
}

}  // namespace sm::query
