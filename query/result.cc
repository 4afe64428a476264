// ResultCursor and the output formats (contract in result.h).
#include "query/result.h"

#include <algorithm>
#include <string>

#include "sm/common/assert.h"

namespace sm::query {

ResultCursor::~ResultCursor() {
  if (open_) Close().PermitUnchecked();
  // A stored failure was returned by the call that met it (and by every Next since).
  error_.PermitUnchecked();
}

Status ResultCursor::Open(const Catalog& catalog, const Plan& plan, const QueryOptions& options,
                          std::unique_ptr<ResultCursor>* out) {
  out->reset();
  SM_TRY(plan.status());
  if (options.threads < 1 || options.threads > kMaxQueryThreads) {
    return Status::InvalidArgument("a query runs on 1 to " + std::to_string(kMaxQueryThreads) +
                                   " threads, not " + std::to_string(options.threads));
  }
  std::unique_ptr<ResultCursor> cursor(new ResultCursor());
  cursor->db_ = catalog.db();
  SM_TRY(plan.node()->Instantiate(&cursor->root_));
  SM_TRY(PlaceBuffers(options.buffers, cursor->root_.get()));
  if (options.profile_operators) {
    uint32_t next_slot = 0;
    cursor->root_->AssignProfileSlots(&next_slot);
  }
  Transaction* txn = options.txn;
  if (txn == nullptr) {
    SM_TRY(cursor->db_->Begin(&cursor->own_txn_, options.isolation));
    txn = cursor->own_txn_.get();
  }
  cursor->ctx_.db = cursor->db_;
  cursor->ctx_.txn = txn;
  cursor->ctx_.analyze = options.analyze;
  cursor->ctx_.hash_join_batch_bytes = options.hash_join_batch_bytes;
  cursor->ctx_.index_or_radix = options.index_or_radix;
  const bool own_read_committed =
      options.txn == nullptr && options.isolation == Isolation::kReadCommitted;
  cursor->ctx_.threads = own_read_committed ? options.threads : 1;
  cursor->ctx_.shared_scans =
      own_read_committed && options.share_scans ? catalog.shared_scans() : nullptr;
  // A query without a sort at its root promises no order (SQL's), so the root's is free.
  if (cursor->ctx_.shared_scans != nullptr) cursor->root_->MarkOrderFree(true);
  cursor->open_ = true;
  if (Status s = cursor->root_->Open(&cursor->ctx_); !s.ok()) {
    cursor->Fail(s);
    return s;
  }
  *out = std::move(cursor);
  return Status::OK();
}

void ResultCursor::Fail(const Status& s) {
  SM_ASSERT(!s.ok());
  if (error_.ok()) error_ = s;
  if (!open_) return;
  open_ = false;
  root_->Close();
  if (own_txn_ != nullptr && own_txn_->active()) own_txn_->Abort().PermitUnchecked();
}

Status ResultCursor::Next(const Value** row) {
  *row = nullptr;
  if (!error_.ok()) return error_;
  if (!open_) return Status::InvalidArgument("the query is closed");
  Status s = root_->Next(row);
  if (!s.ok()) {
    *row = nullptr;
    Fail(s);
  }
  return s;
}

Status ResultCursor::Close() {
  if (!open_) return error_;
  open_ = false;
  root_->Close();
  if (own_txn_ != nullptr && own_txn_->active()) SM_TRY(own_txn_->Commit());
  return Status::OK();
}

std::string ResultCursor::ExplainAnalyze() const { return ExplainOperators(*root_, ctx_.analyze); }

Status ExplainOperatorTree(const Plan& plan, const QueryOptions& options, std::string* out) {
  out->clear();
  SM_TRY(plan.status());
  std::unique_ptr<Operator> root;
  SM_TRY(plan.node()->Instantiate(&root));
  SM_TRY(PlaceBuffers(options.buffers, root.get()));
  *out = ExplainOperators(*root, /*analyzed=*/false);
  return Status::OK();
}

Status RunToRows(const Catalog& catalog, const Plan& plan, const QueryOptions& options,
                 ResultRows* out) {
  out->rows.clear();
  out->nulls.clear();
  std::unique_ptr<ResultCursor> cursor;
  SM_TRY(ResultCursor::Open(catalog, plan, options, &cursor));
  out->schema = cursor->schema();
  size_t width = out->schema.size();
  for (;;) {
    const Value* row = nullptr;
    SM_TRY(cursor->Next(&row));
    if (row == nullptr) break;
    std::vector<std::string> fields(width);
    std::vector<bool> nulls(width);
    for (size_t i = 0; i < width; ++i) {
      fields[i] = FormatValue(row[i], out->schema[i].type);
      nulls[i] = row[i].null;
    }
    out->rows.push_back(std::move(fields));
    out->nulls.push_back(std::move(nulls));
  }
  return cursor->Close();
}

std::string CsvLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    const std::string& f = fields[i];
    if (f.find_first_of(",\"\n\r") == std::string::npos) {
      out += f;
      continue;
    }
    out += '"';
    for (char c : f) {
      if (c == '"') out += '"';
      out += c;
    }
    out += '"';
  }
  return out + "\n";
}

std::string FormatCsv(const ResultRows& rows) {
  std::vector<std::string> header;
  for (const OutputColumn& c : rows.schema.columns()) header.push_back(c.name);
  std::string out = CsvLine(header);
  for (const auto& r : rows.rows) out += CsvLine(r);
  return out;
}

std::string FormatTable(const ResultRows& rows) {
  size_t width = rows.schema.size();
  std::vector<size_t> widths(width);
  for (size_t i = 0; i < width; ++i) widths[i] = rows.schema[i].name.size();
  for (const auto& r : rows.rows) {
    for (size_t i = 0; i < width; ++i) widths[i] = std::max(widths[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& fields, bool numeric_right) {
    std::string out;
    for (size_t i = 0; i < width; ++i) {
      if (i > 0) out += "  ";
      Type t = rows.schema[i].type;
      bool right = numeric_right && (IsNumeric(t) || t == Type::kInt);
      std::string pad(widths[i] - fields[i].size(), ' ');
      out += right ? pad + fields[i] : fields[i] + (i + 1 < width ? pad : "");
    }
    return out + "\n";
  };
  std::vector<std::string> header;
  for (const OutputColumn& c : rows.schema.columns()) header.push_back(c.name);
  std::string out = line(header, false);
  std::string rule;
  for (size_t i = 0; i < width; ++i) rule += (i ? "  " : "") + std::string(widths[i], '-');
  out += rule + "\n";
  for (const auto& r : rows.rows) out += line(r, true);
  return out;
}

}  // namespace sm::query
