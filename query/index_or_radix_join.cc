// IndexOrRadixJoin: a point semi or anti join into a table that chooses, once its outer rows
// are all read, between an index probe per outer row and a hash join of the outer rows' keys
// with a scan of the table's keys, radix-clustered when the cost model says that pays
// (Manegold, Boncz and Kersten; radix_join.h, radix_model.h).
//
// Owns: IndexOrRadixJoinOperator, its copy of the outer rows and their encoded keys, and (on
// the hash path) the table's keys.
//
// The choice. Both ways need every outer row, so the operator reads them all before it
// chooses, and knows their count n exactly. It probes the first kSampleProbes rows as they
// arrive, timing all but the first few (their answers are kept), and, if more rows come, the scan
// of the table's first kSampleScan keys (kept too), and then compares
//   index: (n - probed) x (ns per probe)
//   hash:  (m - scanned) x (ns per scanned key) + the model's price of the hash join of
//          max(n, m) tuples a side (CheapestHashJoin: plain or radix-clustered),
// where m is the table's row estimate (the scan's count once it has reached the end). The
// model runs on the caches and TLB ReadMachine reads at run time, with the default costs of
// CostParams: Calibrate belongs to a benchmark's start, not to a query. A table without a row
// estimate is probed.
//
// Semantics: IndexJoin's for a point semi or anti join: each outer row is returned, in outer
// order, when some table row has its key (semi) or none has (anti); a key with a NULL or a value
// its column cannot hold matches nothing. On the hash path a pair of equal 32-bit key hashes is
// a match only when the encoded keys are equal. The scan reads the rows the transaction may
// read, with a scan's locks, as the probes read theirs with a point read's.
//
// Tuple lifetime: returned tuples are the operator's copies of the outer rows, valid until it
// is closed or reopened, so any window holds.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "query/expr_eval.h"
#include "query/hash.h"
#include "query/index_join.h"
#include "query/nodes.h"
#include "query/radix_join.h"
#include "query/radix_model.h"
#include "query/row_store.h"
#include "sm/common/assert.h"

namespace sm::query {

namespace {

// The outer rows probed while they are read: the first kWarmupProbes untimed (they bring the
// B-tree's upper levels into the CPU's caches, where the rest of a long run of probes finds
// them), the next kTimedProbes timed.
constexpr size_t kWarmupProbes = 64;
constexpr size_t kTimedProbes = 128;
constexpr size_t kSampleProbes = kWarmupProbes + kTimedProbes;
constexpr size_t kSampleScan = 4096;

double NowNs() {
  return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count());
}

uint32_t KeyHash(std::string_view key) {
  const uint64_t h = HashBytes(key);
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// The machine the model prices, read once per process (it does not change while it runs).
const CostParams& ModelParams() {
  static const CostParams params = [] {
    CostParams p;
    p.machine = ReadMachine();
    p.huge_pages = p.machine.HugePagesAvailable();
    return p;
  }();
  return params;
}

class IndexOrRadixJoinOperator final : public Operator {
 public:
  IndexOrRadixJoinOperator(RowSchema schema, const IndexJoinSpec& spec, std::string detail)
      : Operator("IndexOrRadixJoin", std::move(schema)),
        spec_(spec),
        detail_(std::move(detail)),
        key_bytes_(spec.table_schema->fixed_key_bytes()) {
    SM_ASSERT(spec_.point && !spec_.residual.valid());
    SM_ASSERT(spec_.type == JoinType::kSemi || spec_.type == JoinType::kAnti);
  }
  std::string detail() const override {
    return choice_.empty() ? detail_ : detail_ + "; " + choice_;
  }
  bool blocking() const override { return true; }
  // Each outer row is kept or dropped on its own key, so parts of the outer give the whole.
  Operator* streamed_input() const override { return outer(); }
  InputOrder input_order(size_t child) const override {
    (void)child;
    return InputOrder::kPassedOn;
  }

 protected:
  Status OpenImpl(ExecContext* ctx) override {
    txn_ = ctx->txn;
    if (txn_ == nullptr) return Status::InvalidArgument("an index join needs a transaction");
    threads_ = ctx->builds == nullptr ? std::max<uint32_t>(1, ctx->threads) : 1;
    force_ = ctx->index_or_radix;
    SM_TRY(BindAll(spec_.key_prefix, outer()->schema(), &keys_));
    for (auto& k : keys_) SM_TRY(k->Prepare(ctx));
    rows_.Reset(outer()->schema().size());
    outer_keys_.clear();
    has_key_.clear();
    matched_.clear();
    table_keys_.clear();
    cursor_.reset();
    scanned_ = 0;
    scan_done_ = false;
    probe_ns_ = 0;
    decided_ = false;
    next_ = 0;
    choice_.clear();
    return OpenChildren(ctx);
  }

  Status NextImpl(const Value** row) override {
    *row = nullptr;
    if (!decided_) {
      SM_TRY(ReadOuter());
      SM_TRY(Choose());
      decided_ = true;
    }
    const bool want = spec_.type == JoinType::kSemi;
    while (next_ < rows_.size()) {
      const size_t i = next_++;
      if ((matched_[i] != 0) == want) {
        *row = rows_.row(i);
        return Status::OK();
      }
    }
    return Status::OK();
  }

  void CloseImpl() override { cursor_.reset(); }

 private:
  Operator* outer() const { return child(0); }

  // Copies every outer row and its key, probing the first kSampleProbes by index.
  Status ReadOuter() {
    std::string key;
    double probe_ns = 0;
    for (;;) {
      const Value* in = nullptr;
      SM_TRY(outer()->Next(&in));
      if (in == nullptr) break;
      rows_.Append(in);
      const bool valid = EncodeProbeKey(keys_, spec_.key_columns, in, &key);
      SM_ASSERT(!valid || key.size() == key_bytes_);
      has_key_.push_back(valid ? 1 : 0);
      if (valid) {
        outer_keys_.append(key);
      } else {
        outer_keys_.append(key_bytes_, '\0');
      }
      matched_.push_back(0);
      const size_t i = rows_.size() - 1;
      if (i < kWarmupProbes) {
        SM_TRY(Probe(i));
      } else if (i < kSampleProbes) {
        const double start = NowNs();
        SM_TRY(Probe(i));
        probe_ns += NowNs() - start;
      }
    }
    probed_ = std::min(rows_.size(), kSampleProbes);
    probe_ns_ = probed_ <= kWarmupProbes
                    ? 0
                    : probe_ns / static_cast<double>(probed_ - kWarmupProbes);
    return Status::OK();
  }

  std::string_view OuterKey(size_t i) const { return {&outer_keys_[i * key_bytes_], key_bytes_}; }
  std::string_view TableKey(size_t j) const { return {&table_keys_[j * key_bytes_], key_bytes_}; }

  Status Probe(size_t i) {
    if (has_key_[i] == 0) return Status::OK();
    Status s = spec_.table->Get(txn_, OuterKey(i), &value_);
    if (s.IsNotFound()) return Status::OK();
    SM_TRY(s);
    CountRowRead();
    matched_[i] = 1;
    return Status::OK();
  }

  // Reads the table's keys, up to `limit` more (all when 0), into table_keys_.
  Status ScanKeys(size_t limit) {
    if (scan_done_) return Status::OK();
    size_t taken = 0;
    auto take = [&](std::string_view key, std::string_view) {
      CountRowRead();
      ++scanned_;
      // A key of another length cannot equal a whole key of this table's fixed width.
      if (key.size() == key_bytes_) table_keys_.append(key);
      return limit == 0 || ++taken < limit;
    };
    if (cursor_ == nullptr) {
      SM_TRY(spec_.table->NewCursor(txn_, ScanOptions::All(), &cursor_));
      if (!cursor_->Valid()) {
        scan_done_ = true;
        return cursor_->status();
      }
      take(cursor_->key(), cursor_->value());
    }
    while (cursor_->Valid() && (limit == 0 || taken < limit)) {
      size_t visited = 0;
      SM_TRY(cursor_->NextBatch(limit == 0 ? 64 * 1024 : limit - taken, take, &visited));
    }
    scan_done_ = !cursor_->Valid();
    if (scan_done_) SM_TRY(cursor_->status());
    return Status::OK();
  }

  Status Choose() {
    const size_t n = rows_.size();
    char text[256];
    if (n <= probed_ && force_ != JoinChoice::kHash) {
      std::snprintf(text, sizeof text, "index: %zu outer rows, all probed in the sample", n);
      choice_ = text;
      return Status::OK();
    }
    const double start = NowNs();
    SM_TRY(ScanKeys(kSampleScan));
    const double scan_ns = scanned_ == 0 ? 0 : (NowNs() - start) / static_cast<double>(scanned_);
    const uint64_t estimate = spec_.table_schema->row_estimate();
    const double m = scan_done_ ? static_cast<double>(scanned_)
                                : std::max<double>(static_cast<double>(estimate), scanned_);
    const double index_ns = static_cast<double>(n - probed_) * probe_ns_;
    const HashJoinChoice join = CheapestHashJoin(ModelParams(), std::max(static_cast<double>(n), m));
    const double hash_ns = (m - static_cast<double>(scanned_)) * scan_ns + join.predicted_ns;
    const bool by_cost = (scan_done_ || estimate > 0) && hash_ns < index_ns;
    const bool hash = force_ == JoinChoice::kCost ? by_cost : force_ == JoinChoice::kHash;
    std::snprintf(text, sizeof text,
                  "%s%s: %zu outer rows x %.2f us a probe = %.1f ms %s %.0f table rows x %.3f "
                  "us scanned + %s join (B=%d, P=%d) %.1f ms = %.1f ms",
                  hash ? "hash" : "index", force_ == JoinChoice::kCost ? "" : " (forced)", n,
                  probe_ns_ / 1e3, index_ns / 1e6, by_cost ? ">" : "<=", m, scan_ns / 1e3,
                  join.algorithm == JoinAlgorithm::kPlainHash ? "plain" : "radix-clustered",
                  join.bits, join.passes, join.predicted_ns / 1e6, hash_ns / 1e6);
    choice_ = text;
    if (!hash) {
      cursor_.reset();
      table_keys_.clear();
      for (size_t i = probed_; i < n; ++i) SM_TRY(Probe(i));
      return Status::OK();
    }
    SM_TRY(ScanKeys(0));
    cursor_.reset();
    return HashJoinKeys(join);
  }

  // Marks the outer rows whose key the table holds, by a hash join of the key hashes (the
  // outer rows on the left, the table's keys on the right) and a comparison of the keys.
  Status HashJoinKeys(const HashJoinChoice& choice) {
    const size_t n = rows_.size(), m = table_keys_.size() / key_bytes_;
    if (n >= (uint64_t{1} << 32) || m >= (uint64_t{1} << 32)) {
      return Status::InvalidArgument("a hash join of 2^32 keys or more");
    }
    std::vector<Bun> left, right(m);
    left.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (has_key_[i] != 0) left.push_back({KeyHash(OuterKey(i)), static_cast<uint32_t>(i)});
    }
    for (size_t j = 0; j < m; ++j) right[j] = {KeyHash(TableKey(j)), static_cast<uint32_t>(j)};
    JoinOptions options;
    options.bits = choice.bits;
    options.passes = choice.passes;
    options.threads = static_cast<int>(std::min<uint32_t>(threads_, kMaxThreads));
    options.huge_pages = ModelParams().huge_pages;
    JoinIndex index;
    SM_TRY(Join(choice.algorithm, left, right, options, &index));
    std::fill(matched_.begin(), matched_.end(), 0);
    for (const std::vector<OidPair>& part : index.parts) {
      for (const OidPair& pair : part) {
        if (OuterKey(pair.left) == TableKey(pair.right)) matched_[pair.left] = 1;
      }
    }
    return Status::OK();
  }

  IndexJoinSpec spec_;
  std::string detail_;
  const size_t key_bytes_;
  Transaction* txn_ = nullptr;
  uint32_t threads_ = 1;
  JoinChoice force_ = JoinChoice::kCost;
  std::vector<std::unique_ptr<BoundExpr>> keys_;
  RowStore rows_;
  std::string outer_keys_;        // rows_.size() keys of key_bytes_ (zeros where no key)
  std::vector<uint8_t> has_key_;  // per outer row: whether its key can match
  std::vector<uint8_t> matched_;  // per outer row: whether the table holds its key
  size_t probed_ = 0;             // outer rows probed in the sample
  std::string table_keys_;        // the scanned keys of key_bytes_
  std::unique_ptr<Cursor> cursor_;
  size_t scanned_ = 0;
  bool scan_done_ = false;
  double probe_ns_ = 0;  // per timed probe of the sample
  std::string value_;
  bool decided_ = false;
  size_t next_ = 0;
  std::string choice_;  // what was chosen and why, once chosen
};

}  // namespace

std::unique_ptr<Operator> MakeIndexOrRadixJoinOperator(RowSchema schema, const IndexJoinSpec& spec,
                                                       std::string detail) {
  return std::make_unique<IndexOrRadixJoinOperator>(std::move(schema), spec, std::move(detail));
}

}  // namespace sm::query
