// Log record codec: names, header encoding, checksums and validity checks.
#include "log/log_record.h"

#include <cstring>

#include "sm/common/crc32c.h"
#include "sm/common/assert.h"

namespace sm::log {
namespace {

struct TypeInfo {
  const char* name;
  RecordKind kind;
  bool known;
};

constexpr TypeInfo kUnknownType{"invalid", RecordKind::kInfo, false};

constexpr TypeInfo LookUp(uint8_t raw) {
  switch (raw) {
#define SM_LOG_FORMAT(version, fingerprint)
#define SM_LOG_RECORD_TYPE(name, value, kind, text) \
  case value:                                       \
    return TypeInfo{text, RecordKind::kind, true};
#include "log/log_record_types.def"
#undef SM_LOG_RECORD_TYPE
#undef SM_LOG_FORMAT
    default:
      return kUnknownType;
  }
}

constexpr uint8_t kZeros[kRecordAlignment] = {};

}  // namespace

const char* RecordTypeName(RecordType type) { return LookUp(static_cast<uint8_t>(type)).name; }

RecordKind KindOf(RecordType type) { return LookUp(static_cast<uint8_t>(type)).kind; }

bool IsKnownType(uint8_t raw_type) { return LookUp(raw_type).known; }

const char* RecordKindName(RecordKind kind) {
  switch (kind) {
    case RecordKind::kRedoOnly:
      return "redo-only";
    case RecordKind::kUndoRedo:
      return "undo-redo";
    case RecordKind::kCompensation:
      return "compensation";
    case RecordKind::kCheckpoint:
      return "checkpoint";
    case RecordKind::kTxnControl:
      return "txn-control";
    case RecordKind::kInfo:
      return "info";
  }
  return "?";
}

const char* RecordCheckName(RecordCheck check) {
  switch (check) {
    case RecordCheck::kValid:
      return "valid";
    case RecordCheck::kBadHeader:
      return "no record header";
    case RecordCheck::kTruncated:
      return "record runs past the readable log";
    case RecordCheck::kBadChecksum:
      return "checksum mismatch";
    case RecordCheck::kBadLinks:
      return "checksum matches but LSN links point forward";
  }
  return "?";
}

std::string LogRecordView::ToString() const {
  std::string s = "lsn=" + std::to_string(lsn.value()) + " " + RecordTypeName(type);
  if (subtype != 0) s += "/" + std::to_string(subtype);
  s += " txn=" + std::to_string(txn.value()) + " prev=" + std::to_string(prev_lsn.value());
  if (page.valid()) s += " page=" + std::to_string(page.value());
  if (undo_next.valid()) s += " undo_next=" + std::to_string(undo_next.value());
  s += " len=" + std::to_string(length) + " payload=" + std::to_string(payload.size());
  return s;
}

void LogRecordBuf::Assign(const LogRecordView& view) {
  payload_.assign(view.payload.data(), view.payload.size());
  view_ = view;
  view_.payload = payload_;
}

uint32_t PayloadCrc(std::string_view payload) {
  LogRecord record;
  record.payload = payload;
  return PayloadCrc(record);
}

uint32_t PayloadCrc(const LogRecord& record) {
  uint32_t crc = 0;
  size_t bytes = 0;
  for (std::string_view part : record.parts()) {
    crc = Crc32c(part.data(), part.size(), crc);
    bytes += part.size();
  }
  size_t padding = RecordBytes(bytes) - kRecordHeaderBytes - bytes;
  return Crc32c(kZeros, padding, crc);
}

void EncodeHeader(const LogRecord& record, uint64_t lsn, uint64_t durable_hint,
                  uint32_t payload_crc, RecordHeader* header) {
  const size_t payload_bytes = record.payload_bytes();
  SM_DASSERT(payload_bytes <= kMaxPayloadBytes);
  SM_DASSERT(lsn % kRecordAlignment == 0);
  header->length = static_cast<uint32_t>(RecordBytes(payload_bytes));
  header->lsn = lsn;
  header->type = static_cast<uint8_t>(record.type);
  header->subtype = record.subtype;
  header->flags = record.flags;
  header->payload_bytes = static_cast<uint32_t>(payload_bytes);
  header->txn_id = record.txn.value();
  header->prev_lsn = record.prev_lsn.value();
  header->page_id = record.page.value();
  header->undo_next_lsn = record.undo_next.value();
  header->durable_hint = durable_hint;
  const char* bytes = reinterpret_cast<const char*>(header);
  header->crc = Crc32c(bytes + 4, kRecordHeaderBytes - 4, payload_crc);
}

RecordCheck CheckHeader(const RecordHeader& h, uint64_t pos) {
  if (h.length < kRecordHeaderBytes || h.length > kMaxRecordBytes) return RecordCheck::kBadHeader;
  if (h.length % kRecordAlignment != 0) return RecordCheck::kBadHeader;
  if (h.lsn != pos) return RecordCheck::kBadHeader;
  if (RecordBytes(h.payload_bytes) != h.length) return RecordCheck::kBadHeader;
  if (!IsKnownType(h.type)) return RecordCheck::kBadHeader;
  if ((h.flags & ~kFlagsDefined) != 0) return RecordCheck::kBadHeader;
  return RecordCheck::kValid;
}

RecordCheck CheckRecord(const char* bytes) {
  RecordHeader h;
  std::memcpy(&h, bytes, sizeof(h));
  uint32_t crc = Crc32c(bytes + kRecordHeaderBytes, h.length - kRecordHeaderBytes);
  crc = Crc32c(bytes + 4, kRecordHeaderBytes - 4, crc);
  if (crc != h.crc) return RecordCheck::kBadChecksum;
  // A checksummed record was written as it is: links that do not point backwards mean the
  // writer was wrong (or the bytes were forged), which no crash can produce.
  if (h.prev_lsn >= h.lsn || h.undo_next_lsn >= h.lsn || h.durable_hint > h.lsn) {
    return RecordCheck::kBadLinks;
  }
  return RecordCheck::kValid;
}

void DecodeRecord(const char* bytes, LogRecordView* view) {
  RecordHeader h;
  std::memcpy(&h, bytes, sizeof(h));
  view->lsn = Lsn(h.lsn);
  view->type = static_cast<RecordType>(h.type);
  view->subtype = h.subtype;
  view->flags = h.flags;
  view->txn = TxnId(h.txn_id);
  view->prev_lsn = Lsn(h.prev_lsn);
  view->page = PageId(h.page_id);
  view->undo_next = Lsn(h.undo_next_lsn);
  view->durable_hint = Lsn(h.durable_hint);
  view->length = h.length;
  view->payload = std::string_view(bytes + kRecordHeaderBytes, h.payload_bytes);
}

}  // namespace sm::log
