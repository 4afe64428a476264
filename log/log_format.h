// The log's files on disk: how LSNs map to segment files, the segment header block, the control
// file, and the file names in a log directory.
//
// Owns: SegmentGeometry, the byte formats of the segment header and the control block, and the
// naming scheme. Records themselves are in log_record.h.
//
// The log is one stream of bytes; an LSN is a byte offset in it. The stream is cut into fixed-size
// segment files; a record may span two (or more) segments. Every segment file is
//
//   [0, 4096)              the segment header block (below)
//   [4096, segment_bytes)  data_bytes = segment_bytes - 4096 bytes of the stream
//
// Segment k holds LSNs [kFirstLsn + k * data_bytes, kFirstLsn + (k + 1) * data_bytes) and is named
// by its first LSN ("log.%016x"). kFirstLsn = 4096, so LSN 0 is never a record (sm/common/ids.h)
// and, in the first segment, an LSN equals its file offset. data_bytes is a multiple of 4096, so
// a 4 KiB-aligned LSN is a 4 KiB-aligned file offset (direct I/O, sm/io/file.h rule 1).
//
// Segment header block (little-endian; the rest of the block is zero):
//   0  8  magic "SMLOGSEG"        12  4  word count (2)      24  8  start LSN (= the name)
//   8  4  format version          16  8  segment_bytes       32  4  CRC32C of bytes [0, 32)
//
// Control file "log.control" (one 4096-byte block, replaced atomically: written to
// "log.control.tmp", synced, renamed over, directory synced):
//   0  8  magic "SMLOGCTL"        16  8  segment_bytes         40  8  durable hint
//   8  4  format version          24  8  start LSN             48  4  CRC32C of bytes [0, 48)
//  12  4  word count (4)          32  8  checkpoint LSN
// start LSN is the oldest record still needed (Truncate moves it); checkpoint LSN is the last
// complete checkpoint's begin record (0: none); the durable hint is an LSN below which the log is
// known to have been synced (written at open, checkpoint hint and close): an invalid record
// below it is corruption, never a torn tail.
//
// Other names: "spare.%016x" is a segment file kept by Truncate for reuse (its contents are stale;
// the number is its old start). Anything else in the directory is left alone.
//
// Thread/fiber safety: pure functions and value types.
#pragma once

#include <cstdint>
#include <string>

#include "sm/common/status.h"

namespace sm::log {

inline constexpr uint64_t kLogBlockBytes = 4096;
inline constexpr uint64_t kSegmentHeaderBytes = kLogBlockBytes;
inline constexpr uint64_t kFirstLsn = kSegmentHeaderBytes;
inline constexpr uint64_t kMinSegmentBytes = 4 * kLogBlockBytes;
inline constexpr uint64_t kMaxSegmentBytes = uint64_t{1} << 40;

inline constexpr char kControlFileName[] = "log.control";
inline constexpr char kControlTempFileName[] = "log.control.tmp";

constexpr uint64_t BlockFloor(uint64_t x) { return x & ~(kLogBlockBytes - 1); }
constexpr uint64_t BlockCeil(uint64_t x) { return BlockFloor(x + kLogBlockBytes - 1); }

class SegmentGeometry {
 public:
  SegmentGeometry() = default;
  explicit SegmentGeometry(uint64_t segment_bytes) : segment_bytes_(segment_bytes) {}

  // InvalidArgument unless kMinSegmentBytes <= bytes <= kMaxSegmentBytes and 4 KiB-aligned.
  static Status Validate(uint64_t segment_bytes);

  uint64_t segment_bytes() const { return segment_bytes_; }
  uint64_t data_bytes() const { return segment_bytes_ - kSegmentHeaderBytes; }
  // The first LSN of the segment holding `lsn` (lsn >= kFirstLsn).
  uint64_t SegmentStart(uint64_t lsn) const { return lsn - (lsn - kFirstLsn) % data_bytes(); }
  uint64_t SegmentEnd(uint64_t segment_start) const { return segment_start + data_bytes(); }
  // Where `lsn` lives in the file of the segment that starts at `segment_start`.
  uint64_t FileOffset(uint64_t segment_start, uint64_t lsn) const {
    return kSegmentHeaderBytes + (lsn - segment_start);
  }
  bool IsSegmentStart(uint64_t lsn) const {
    return lsn >= kFirstLsn && (lsn - kFirstLsn) % data_bytes() == 0;
  }

 private:
  uint64_t segment_bytes_ = 0;
};

std::string SegmentFileName(uint64_t segment_start);
bool ParseSegmentFileName(const std::string& name, uint64_t* segment_start);
std::string SpareFileName(uint64_t old_start);
bool ParseSpareFileName(const std::string& name, uint64_t* old_start);

struct SegmentHeader {
  uint64_t segment_bytes = 0;
  uint64_t start_lsn = 0;
};
// block: kLogBlockBytes bytes.
void EncodeSegmentHeader(const SegmentHeader& header, char* block);
// Corruption (naming `what`) unless the block holds a segment header of this format version.
Status DecodeSegmentHeader(const char* block, const std::string& what, SegmentHeader* header);

struct ControlBlock {
  uint64_t segment_bytes = 0;
  uint64_t start_lsn = kFirstLsn;
  uint64_t checkpoint_lsn = 0;
  uint64_t durable_hint = 0;
};
void EncodeControl(const ControlBlock& control, char* block);
Status DecodeControl(const char* block, const std::string& what, ControlBlock* control);

}  // namespace sm::log
