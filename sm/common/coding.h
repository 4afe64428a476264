// Little-endian fixed-width encoding for log payloads and other on-disk byte strings: appending
// writers and a bounds-checked reader.
//
// Owns: nothing but the byte order rule (little-endian, unaligned) and the reader's contract:
// every Get* checks the remaining length first and returns false (leaving the reader failed)
// instead of reading past the end, so a damaged payload is reported, never over-read.
//
// Thread/fiber safety: value types.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sm {

inline void PutFixed16(std::string* out, uint16_t v) { out->append(reinterpret_cast<const char*>(&v), 2); }
inline void PutFixed32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
inline void PutFixed64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }
// A u32 length, then the bytes.
inline void PutLengthPrefixed(std::string* out, std::string_view bytes) {
  PutFixed32(out, static_cast<uint32_t>(bytes.size()));
  out->append(bytes);
}

class ByteReader {
 public:
  explicit ByteReader(std::string_view bytes) : rest_(bytes) {}

  bool GetFixed8(uint8_t* v) { return GetRaw(v, 1); }
  bool GetFixed16(uint16_t* v) { return GetRaw(v, 2); }
  bool GetFixed32(uint32_t* v) { return GetRaw(v, 4); }
  bool GetFixed64(uint64_t* v) { return GetRaw(v, 8); }
  // A view of the next n bytes.
  bool GetBytes(size_t n, std::string_view* bytes) {
    if (failed_ || rest_.size() < n) return Fail();
    *bytes = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  bool GetLengthPrefixed(std::string_view* bytes) {
    uint32_t n = 0;
    return GetFixed32(&n) && GetBytes(n, bytes);
  }

  bool failed() const { return failed_; }
  bool done() const { return !failed_ && rest_.empty(); }  // everything consumed, no error
  size_t remaining() const { return rest_.size(); }

 private:
  bool GetRaw(void* v, size_t n) {
    if (failed_ || rest_.size() < n) return Fail();
    std::memcpy(v, rest_.data(), n);
    rest_.remove_prefix(n);
    return true;
  }
  bool Fail() {
    failed_ = true;
    return false;
  }

  std::string_view rest_;
  bool failed_ = false;
};

}  // namespace sm
