// sm_admin dump and load (format and invariants in dump.h).
#include "tools/admin/dump.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sm/api/large_values.h"
#include "sm/common/crc32c.h"

namespace sm::admin {
namespace {

constexpr std::string_view kMagic("sm-dump\n", 8);
constexpr size_t kRowsPerTxn = 1000;  // rows loaded per transaction
// The largest name, key or value the engine stores (a value: sm/api/large_values.h): a larger
// length is damage, refused before it is allocated.
constexpr uint32_t kFieldBytesMax = api::kMaxValueBytes;

struct FileCloser {
  void operator()(FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<FILE, FileCloser>;

// Appends to a file, keeping the CRC32C of everything written.
class Writer {
 public:
  explicit Writer(FILE* f) : f_(f) {}
  void Bytes(std::string_view b) {
    ok_ = ok_ && std::fwrite(b.data(), 1, b.size(), f_) == b.size();
    crc_ = Crc32c(b.data(), b.size(), crc_);
  }
  void U8(uint8_t v) { Bytes(std::string_view(reinterpret_cast<const char*>(&v), 1)); }
  void U32(uint32_t v) { Le(v, 4); }
  void U64(uint64_t v) { Le(v, 8); }
  void Sized(std::string_view b) {
    U32(static_cast<uint32_t>(b.size()));
    Bytes(b);
  }
  uint32_t crc() const { return crc_; }
  bool ok() const { return ok_; }

 private:
  void Le(uint64_t v, size_t n) {
    char b[8];
    for (size_t i = 0; i < n; ++i) b[i] = static_cast<char>(v >> (8 * i));
    Bytes(std::string_view(b, n));
  }
  FILE* f_;
  uint32_t crc_ = 0;
  bool ok_ = true;
};

// Reads a dump, keeping the CRC32C of everything read; every short read is Corruption.
class Reader {
 public:
  explicit Reader(FILE* f) : f_(f) {}
  Status Bytes(size_t n, std::string* out) {
    out->resize(n);
    if (n > 0 && std::fread(out->data(), 1, n, f_) != n) {
      return Status::Corruption("dump truncated");
    }
    crc_ = Crc32c(out->data(), n, crc_);
    return Status::OK();
  }
  Status U8(uint8_t* v) {
    uint64_t x = 0;
    SM_TRY(Le(1, &x));
    *v = static_cast<uint8_t>(x);
    return Status::OK();
  }
  Status U32(uint32_t* v) {
    uint64_t x = 0;
    SM_TRY(Le(4, &x));
    *v = static_cast<uint32_t>(x);
    return Status::OK();
  }
  Status U64(uint64_t* v) { return Le(8, v); }
  Status Sized(std::string* out) {
    uint32_t n = 0;
    SM_TRY(U32(&n));
    if (n > kFieldBytesMax) return Status::Corruption("dump: a field of " + std::to_string(n));
    return Bytes(n, out);
  }
  uint32_t crc() const { return crc_; }
  bool AtEnd() { return std::fgetc(f_) == EOF; }

 private:
  Status Le(size_t n, uint64_t* v) {
    SM_TRY(Bytes(n, &scratch_));
    *v = 0;
    for (size_t i = 0; i < n; ++i) *v |= uint64_t{static_cast<uint8_t>(scratch_[i])} << (8 * i);
    return Status::OK();
  }
  FILE* f_;
  std::string scratch_;
  uint32_t crc_ = 0;
};

// Receives what Parse reads; Parse with no sink only checks the file.
class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status Table(const std::string& name, bool unique) = 0;
  virtual Status Row(const std::string& key, const std::string& value) = 0;
};

Status Parse(FILE* f, Sink* sink, uint64_t* tables_out, uint64_t* rows_out) {
  Reader r(f);
  std::string magic, name, key, value;
  uint32_t version = 0;
  SM_TRY(r.Bytes(kMagic.size(), &magic));
  if (magic != kMagic) return Status::InvalidArgument("not a dump (no sm-dump header)");
  SM_TRY(r.U32(&version));
  if (version != kDumpFormatVersion) {
    return Status::NotSupported("dump format version " + std::to_string(version) +
                                ", this build reads version " +
                                std::to_string(kDumpFormatVersion));
  }
  uint64_t tables = 0, rows = 0;
  for (uint8_t tag = 0;;) {
    SM_TRY(r.U8(&tag));
    if (tag == 'Z') break;
    uint8_t kind = 0;
    if (tag != 'T') return Status::Corruption("dump: a table expected");
    SM_TRY(r.U8(&kind));
    SM_TRY(r.Sized(&name));
    if (kind > 1) return Status::Corruption("dump: table " + name + " of unknown kind");
    if (sink) SM_TRY(sink->Table(name, kind == 1));
    uint64_t table_rows = 0, written = 0;
    SM_TRY(r.U8(&tag));
    while (tag == 'R') {
      SM_TRY(r.Sized(&key));
      SM_TRY(r.Sized(&value));
      if (sink) SM_TRY(sink->Row(key, value));
      ++table_rows;
      SM_TRY(r.U8(&tag));
    }
    if (tag != 'E') return Status::Corruption("dump: table " + name + " not ended");
    SM_TRY(r.U64(&written));
    if (written != table_rows) return Status::Corruption("dump: table " + name + " row count");
    ++tables;
    rows += table_rows;
  }
  uint32_t written_tables = 0, crc = 0;
  SM_TRY(r.U32(&written_tables));
  uint32_t computed = r.crc();
  SM_TRY(r.U32(&crc));
  if (written_tables != tables) return Status::Corruption("dump: table count");
  if (crc != computed) return Status::Corruption("dump: checksum mismatch");
  if (!r.AtEnd()) return Status::Corruption("dump: bytes after the trailer");
  if (tables_out) *tables_out = tables;
  if (rows_out) *rows_out = rows;
  return Status::OK();
}

// Creates the tables and inserts the rows, kRowsPerTxn rows per transaction.
class LoadSink : public Sink {
 public:
  explicit LoadSink(Database* db) : db_(db) {}
  Status Table(const std::string& name, bool unique) override {
    SM_TRY(Commit());
    return unique ? db_->CreateTable(name, &table_) : db_->CreateIndex(name, &table_);
  }
  Status Row(const std::string& key, const std::string& value) override {
    if (!txn_active_) {
      SM_TRY(db_->Begin(&txn_));
      txn_active_ = true;
    }
    SM_TRY(table_->Insert(txn_.get(), key, value));
    if (++txn_rows_ == kRowsPerTxn) return Commit();
    return Status::OK();
  }
  // Aborts the transaction in progress, if any, so that the database can close.
  void Abandon() {
    txn_.reset();
    txn_active_ = false;
  }
  Status Commit() {
    if (!txn_active_) return Status::OK();
    txn_active_ = false;
    txn_rows_ = 0;
    return txn_->Commit();
  }

 private:
  Database* db_;
  sm::Table* table_ = nullptr;
  std::unique_ptr<Transaction> txn_;
  bool txn_active_ = false;
  size_t txn_rows_ = 0;
};

Status DumpTable(Database* db, Transaction* txn, const std::string& name, Writer* w,
                 uint64_t* rows) {
  sm::Table* table = nullptr;
  SM_TRY(db->OpenTable(name, &table));
  w->U8('T');
  w->U8(table->unique() ? 1 : 0);
  w->Sized(name);
  std::unique_ptr<Cursor> cursor;
  uint64_t count = 0;
  SM_TRY(table->NewCursor(txn, ScanOptions::All(), &cursor));
  while (cursor->Valid()) {
    w->U8('R');
    w->Sized(cursor->key());
    w->Sized(cursor->value());
    ++count;
    SM_TRY(cursor->Next());
  }
  w->U8('E');
  w->U64(count);
  *rows += count;
  return Status::OK();
}

}  // namespace

Status DumpDatabase(Database* db, const std::string& path, uint64_t* tables, uint64_t* rows) {
  std::string tmp = path + ".tmp";
  File f(std::fopen(tmp.c_str(), "wb"));
  if (!f) return Status::IOError("cannot create " + tmp, errno);
  Writer w(f.get());
  w.Bytes(kMagic);
  w.U32(kDumpFormatVersion);
  std::vector<std::string> names = db->TableNames();
  uint64_t row_count = 0;
  {
    // The dump holds the database alone (one Database per directory): nothing else writes.
    std::unique_ptr<Transaction> txn;
    SM_TRY(db->Begin(&txn, Isolation::kReadCommitted));
    for (const std::string& name : names) SM_TRY(DumpTable(db, txn.get(), name, &w, &row_count));
    SM_TRY(txn->Commit());
  }
  w.U8('Z');
  w.U32(static_cast<uint32_t>(names.size()));
  w.U32(w.crc());
  if (!w.ok() || std::fflush(f.get()) != 0 || fsync(fileno(f.get())) != 0) {
    return Status::IOError("cannot write " + tmp, errno);
  }
  f.reset();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot rename " + tmp, errno);
  }
  if (tables) *tables = names.size();
  if (rows) *rows = row_count;
  return Status::OK();
}

Status LoadDatabase(const std::string& path, const std::string& dir, uint64_t* tables,
                    uint64_t* rows) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return Status::IOError("cannot open " + path, errno);
  SM_TRY(Parse(f.get(), nullptr, nullptr, nullptr));  // invariant 1: check it all first
  std::rewind(f.get());
  Options options;
  options.path = dir;
  options.error_if_exists = true;
  options.commit_mode = CommitMode::kAsync;  // Close makes the whole load durable
  std::unique_ptr<Database> db;
  SM_TRY(Database::Open(options, &db));
  LoadSink sink(db.get());
  Status s = Parse(f.get(), &sink, tables, rows);
  if (s.ok()) s = sink.Commit();
  sink.Abandon();
  Status closed = db->Close();
  SM_TRY(s);
  return closed;
}

}  // namespace sm::admin
