// Log file formats: segment geometry, header and control blocks, file names.
#include "log/log_format.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "sm/common/crc32c.h"
#include "log/log_record.h"

namespace sm::log {
namespace {

constexpr uint64_t kSegmentMagic = 0x474553474f4c4d53ull;  // "SMLOGSEG" as bytes
constexpr uint64_t kControlMagic = 0x4c5443474f4c4d53ull;  // "SMLOGCTL" as bytes
constexpr size_t kMetaPrefixBytes = 16;                    // magic, version, word count

// A metadata block: magic, version, word count, the words, and a CRC32C of all of that.
void EncodeMeta(uint64_t magic, const uint64_t* words, uint32_t count, char* block) {
  std::memset(block, 0, kLogBlockBytes);
  uint32_t version = kLogFormatVersion;
  std::memcpy(block, &magic, 8);
  std::memcpy(block + 8, &version, 4);
  std::memcpy(block + 12, &count, 4);
  std::memcpy(block + kMetaPrefixBytes, words, 8 * count);
  size_t covered = kMetaPrefixBytes + 8 * count;
  uint32_t crc = Crc32c(block, covered);
  std::memcpy(block + covered, &crc, 4);
}

Status DecodeMeta(const char* block, uint64_t magic, uint64_t* words, uint32_t count,
                  const std::string& what) {
  uint64_t found_magic;
  uint32_t version, found_count, crc;
  std::memcpy(&found_magic, block, 8);
  std::memcpy(&version, block + 8, 4);
  std::memcpy(&found_count, block + 12, 4);
  if (found_magic != magic) return Status::Corruption(what + ": bad magic number");
  if (found_count != count) return Status::Corruption(what + ": bad word count");
  size_t covered = kMetaPrefixBytes + 8 * count;
  std::memcpy(&crc, block + covered, 4);
  if (crc != Crc32c(block, covered)) return Status::Corruption(what + ": checksum mismatch");
  if (version != kLogFormatVersion) {
    return Status::NotSupported(what + ": log format version " + std::to_string(version) +
                                ", this build reads version " + std::to_string(kLogFormatVersion));
  }
  std::memcpy(words, block + kMetaPrefixBytes, 8 * count);
  return Status::OK();
}

bool ParseHexName(const std::string& name, const char* prefix, uint64_t* value) {
  size_t n = std::strlen(prefix);
  if (name.size() != n + 16 || name.compare(0, n, prefix) != 0) return false;
  uint64_t v = 0;
  for (size_t i = n; i < name.size(); ++i) {
    char c = name[i];
    int digit = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
    if (digit < 0) return false;
    v = v << 4 | static_cast<uint64_t>(digit);
  }
  *value = v;
  return true;
}

std::string HexName(const char* prefix, uint64_t value) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%s%016" PRIx64, prefix, value);
  return buf;
}

}  // namespace

Status SegmentGeometry::Validate(uint64_t segment_bytes) {
  if (segment_bytes < kMinSegmentBytes || segment_bytes > kMaxSegmentBytes ||
      segment_bytes % kLogBlockBytes != 0) {
    return Status::InvalidArgument("log segment size " + std::to_string(segment_bytes) +
                                   " must be a multiple of 4096 between " +
                                   std::to_string(kMinSegmentBytes) + " and 2^40");
  }
  return Status::OK();
}

std::string SegmentFileName(uint64_t segment_start) { return HexName("log.", segment_start); }

bool ParseSegmentFileName(const std::string& name, uint64_t* segment_start) {
  return ParseHexName(name, "log.", segment_start);
}

std::string SpareFileName(uint64_t old_start) { return HexName("spare.", old_start); }

bool ParseSpareFileName(const std::string& name, uint64_t* old_start) {
  return ParseHexName(name, "spare.", old_start);
}

void EncodeSegmentHeader(const SegmentHeader& header, char* block) {
  const uint64_t words[2] = {header.segment_bytes, header.start_lsn};
  EncodeMeta(kSegmentMagic, words, 2, block);
}

Status DecodeSegmentHeader(const char* block, const std::string& what, SegmentHeader* header) {
  uint64_t words[2];
  SM_TRY(DecodeMeta(block, kSegmentMagic, words, 2, what));
  header->segment_bytes = words[0];
  header->start_lsn = words[1];
  return Status::OK();
}

void EncodeControl(const ControlBlock& control, char* block) {
  const uint64_t words[4] = {control.segment_bytes, control.start_lsn, control.checkpoint_lsn,
                             control.durable_hint};
  EncodeMeta(kControlMagic, words, 4, block);
}

Status DecodeControl(const char* block, const std::string& what, ControlBlock* control) {
  uint64_t words[4];
  SM_TRY(DecodeMeta(block, kControlMagic, words, 4, what));
  control->segment_bytes = words[0];
  control->start_lsn = words[1];
  control->checkpoint_lsn = words[2];
  control->durable_hint = words[3];
  return Status::OK();
}

}  // namespace sm::log
