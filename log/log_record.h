// Log records: the record types (from log_record_types.def), their kinds, the on-disk record
// header, and the codec every writer and reader of the log shares.
//
// Owns: RecordType / RecordKind and their names, the 64-byte header layout, the checksum rule,
// and the checks that tell a valid record from anything else found at a log position.
//
// Byte-level format of one record at LSN p (little-endian, 8-byte aligned; LSN = byte offset
// in the log stream, see log_format.h):
//
//   off size field
//     0   4  crc            CRC32C (sm/common/crc32c.h) of bytes [64, length) followed by [4, 64):
//                           the payload (with padding) first, so it can be summed before the
//                           record's LSN is known, then the rest of the header
//     4   4  length         total bytes: 64 + payload_bytes rounded up to 8; the next record
//                           starts at p + length
//     8   8  lsn            p itself. A record found at a position it was not written for (a
//                           stale record in a recycled segment, a torn remnant) is not valid
//    16   1  type           RecordType; 0 is never valid
//    17   1  subtype        owned by the layer that registered it (kPage*, kCompensation); 0
//                           for the other types
//    18   2  flags          RecordFlags; undefined bits must be zero
//    20   4  payload_bytes  exact payload length
//    24   8  txn_id         the transaction (0: none / system work)
//    32   8  prev_lsn       the previous record of the same transaction (0: none); < lsn
//    40   8  page_id        the page a page operation changes (0: none)
//    48   8  undo_next_lsn  compensation records: the next record of the transaction to undo;
//                           0 otherwise; < lsn
//    56   8  durable_hint   the log's durable LSN when the record was inserted: every byte below
//                           it had been synced before this record was written. Open uses it to
//                           tell a torn tail from corruption in the middle (log_manager.h)
//    64   .  payload, then zero padding to a multiple of 8
//
// Invariants of a valid record: 64 <= length <= kMaxRecordBytes; length % 8 == 0;
// length == RecordBytes(payload_bytes); lsn == its position; type is in the table; undefined
// flag bits are zero; prev_lsn < lsn; undo_next_lsn < lsn; durable_hint <= lsn; crc matches.
//
// Thread/fiber safety: pure functions and value types.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "sm/common/ids.h"

namespace sm::log {

static_assert(std::endian::native == std::endian::little, "the log format is little-endian");

// What recovery does with a record of a kind.
enum class RecordKind : uint8_t {
  kRedoOnly,      // redo, never undone (structure changes by system transactions)
  kUndoRedo,      // redo; undone logically by the registering layer on rollback
  kCompensation,  // a CLR: redo only; undo continues at undo_next_lsn
  kCheckpoint,    // fuzzy checkpoint bracket; analysis reads the end record's tables
  kTxnControl,    // transaction state changes (begin, commit, abort, end)
  kInfo,          // ignored by recovery
};

enum class RecordType : uint8_t {
  kInvalid = 0,
#define SM_LOG_FORMAT(version, fingerprint)
#define SM_LOG_RECORD_TYPE(name, value, kind, text) name = value,
#include "log/log_record_types.def"
#undef SM_LOG_RECORD_TYPE
#undef SM_LOG_FORMAT
};

// Header flag bits.
enum RecordFlags : uint16_t {
  kFlagSystemTxn = 1u << 0,  // part of a system transaction (nested top action)
  kFlagsDefined = kFlagSystemTxn,
};

namespace detail {
constexpr uint64_t Fnv1a(const char* s, uint64_t h = 0xcbf29ce484222325ull) {
  for (; *s != '\0'; ++s) h = (h ^ static_cast<uint8_t>(*s)) * 0x100000001b3ull;
  return h;
}
#define SM_LOG_FORMAT(version, fingerprint)             \
  inline constexpr uint32_t kDeclaredVersion = version; \
  inline constexpr uint64_t kDeclaredFingerprint = fingerprint;
#define SM_LOG_RECORD_TYPE(name, value, kind, text)
#include "log/log_record_types.def"
#undef SM_LOG_RECORD_TYPE
#undef SM_LOG_FORMAT
}  // namespace detail

inline constexpr uint32_t kLogFormatVersion = detail::kDeclaredVersion;

// The hash of the table and the header layout as compiled (see log_record_types.def).
inline constexpr uint64_t kLogTableFingerprint = detail::Fnv1a(
    "header:crc32,length32,lsn64,type8,subtype8,flags16,payload32,txn64,prev64,page64,"
    "undonext64,durablehint64;flags:system=1;"
#define SM_LOG_FORMAT(version, fingerprint)
#define SM_LOG_RECORD_TYPE(name, value, kind, text) #name "=" #value "," #kind "," text ";"
#include "log/log_record_types.def"
#undef SM_LOG_RECORD_TYPE
#undef SM_LOG_FORMAT
);

template <uint64_t kActual, uint64_t kDeclared>
constexpr bool FingerprintMatches() {
  static_assert(kActual == kDeclared,
                "log_record_types.def or the record header changed: bump the format version "
                "and set the fingerprint to kActual (shown in this message)");
  return kActual == kDeclared;
}
static_assert(FingerprintMatches<kLogTableFingerprint, detail::kDeclaredFingerprint>());

struct RecordHeader {
  uint32_t crc;
  uint32_t length;
  uint64_t lsn;
  uint8_t type;
  uint8_t subtype;
  uint16_t flags;
  uint32_t payload_bytes;
  uint64_t txn_id;
  uint64_t prev_lsn;
  uint64_t page_id;
  uint64_t undo_next_lsn;
  uint64_t durable_hint;
};
static_assert(sizeof(RecordHeader) == 64);
static_assert(offsetof(RecordHeader, length) == 4);
static_assert(offsetof(RecordHeader, lsn) == 8);
static_assert(offsetof(RecordHeader, type) == 16);
static_assert(offsetof(RecordHeader, payload_bytes) == 20);
static_assert(offsetof(RecordHeader, txn_id) == 24);
static_assert(offsetof(RecordHeader, durable_hint) == 56);

inline constexpr uint32_t kRecordHeaderBytes = sizeof(RecordHeader);
inline constexpr uint32_t kRecordAlignment = 8;
// The largest record the format allows (a larger length field is treated as garbage).
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;
inline constexpr uint32_t kMaxPayloadBytes = kMaxRecordBytes - kRecordHeaderBytes;

// Total bytes of a record with `payload_bytes` of payload (header and padding included).
constexpr uint64_t RecordBytes(uint64_t payload_bytes) {
  return (kRecordHeaderBytes + payload_bytes + kRecordAlignment - 1) &
         ~uint64_t{kRecordAlignment - 1};
}

const char* RecordTypeName(RecordType type);
const char* RecordKindName(RecordKind kind);
RecordKind KindOf(RecordType type);
bool IsKnownType(uint8_t raw_type);

// What a caller appends (LogManager::Insert). The payload is copied: `payload`, or, when
// `payload_parts` is not empty, the concatenation of its parts (and `payload` is empty). Parts
// let a payload made of large pieces (the page images of a structure change) go into the log
// buffer in one copy, instead of being assembled in a buffer of its own first.
struct LogRecord {
  RecordType type = RecordType::kComment;
  uint8_t subtype = 0;
  uint16_t flags = 0;
  TxnId txn;
  Lsn prev_lsn;
  PageId page;
  Lsn undo_next;
  std::string_view payload;
  std::span<const std::string_view> payload_parts;

  // The payload as a list of parts (a whole payload is one part).
  std::span<const std::string_view> parts() const {
    return payload_parts.empty() ? std::span<const std::string_view>(&payload, 1) : payload_parts;
  }
  size_t payload_bytes() const {
    if (payload_parts.empty()) return payload.size();
    size_t bytes = 0;
    for (std::string_view part : payload_parts) bytes += part.size();
    return bytes;
  }
};

// A record as read back: the fields it was appended with, plus where it lies. The payload view
// points into the reader's buffer (valid until the reader's next call) or into a LogRecordBuf.
struct LogRecordView : LogRecord {
  Lsn lsn;
  Lsn durable_hint;
  uint32_t length = 0;  // total bytes on disk

  Lsn end_lsn() const { return Lsn(lsn.value() + length); }
  RecordKind kind() const { return KindOf(type); }
  std::string ToString() const;
};

// An owned copy of a record. Copies and moves re-point the view at the new owner's bytes (a
// short payload lives inside the std::string object itself).
class LogRecordBuf {
 public:
  LogRecordBuf() = default;
  LogRecordBuf(const LogRecordBuf& other) { Assign(other.view_); }
  LogRecordBuf& operator=(const LogRecordBuf& other) {
    if (this != &other) Assign(other.view_);
    return *this;
  }
  LogRecordBuf(LogRecordBuf&& other) noexcept { *this = std::move(other); }
  LogRecordBuf& operator=(LogRecordBuf&& other) noexcept {
    payload_ = std::move(other.payload_);
    view_ = other.view_;
    view_.payload = payload_;
    return *this;
  }

  void Assign(const LogRecordView& view);
  const LogRecordView& view() const { return view_; }

 private:
  LogRecordView view_;
  std::string payload_;
};

// --- Codec ---------------------------------------------------------------------------------

// The CRC of a payload and its zero padding: the first part of a record's checksum.
uint32_t PayloadCrc(std::string_view payload);
// The same for a record's payload, whole or in parts.
uint32_t PayloadCrc(const LogRecord& record);

// Fills *header for `record` placed at `lsn`, given PayloadCrc(record).
void EncodeHeader(const LogRecord& record, uint64_t lsn, uint64_t durable_hint,
                  uint32_t payload_crc, RecordHeader* header);

// The outcome of checking the bytes found at a log position.
enum class RecordCheck : uint8_t {
  kValid,
  kBadHeader,    // length, lsn, type or flags impossible: no record starts here
  kTruncated,    // the header is plausible but the record runs past the readable bytes
  kBadChecksum,  // the header is plausible, the checksum does not match
  kBadLinks,     // checksum matches but prev/undo-next/hint are not below lsn: corruption
};
const char* RecordCheckName(RecordCheck check);

// Checks the 64 header bytes at `header` as a record written at position `pos`.
RecordCheck CheckHeader(const RecordHeader& header, uint64_t pos);
// Checks a whole record (header.length bytes at `bytes`) whose header passed CheckHeader.
RecordCheck CheckRecord(const char* bytes);
// Decodes a checked record; the payload view points into `bytes`.
void DecodeRecord(const char* bytes, LogRecordView* view);

}  // namespace sm::log
