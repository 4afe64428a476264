// Keys of the TPC-C tables: memcmp-comparable byte strings.
//
// Owns: the key format of every table and index of the schema (tpcc/rows.h lists them).
//
// Byte format (the same rules as sm/common/key_encoding.h):
//   unsigned integers   fixed width, big-endian, so memcmp orders them numerically;
//   strings             the bytes with every 0x00 escaped as 0x00 0xFF, then the terminator
//                       0x00 0x01, so a string that is a prefix of another sorts first and the
//                       columns after it compare only when the strings are equal.
// A key is the concatenation of its columns, with no tag or header; an index entry's key is the
// secondary key followed by the base row's primary key (sm::IndexKey), and since every
// secondary key here is itself prefix-free, a prefix scan for it finds exactly its entries.
//
// Column widths: warehouse id 2 bytes (at most 65,535 warehouses), district id 1, customer,
// order and item ids 4, order-line number 1, dates 8.
//
// Thread/fiber safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sm::tpcc {

// Most keys are at most 15 bytes, which std::string holds without allocating, so nothing is
// reserved up front and fixed-width columns are appended whole rather than byte by byte.
class KeyBuilder {
 public:
  KeyBuilder& U8(uint8_t v) {
    key_.push_back(static_cast<char>(v));
    return *this;
  }
  KeyBuilder& U16(uint16_t v) { return BigEndian(v, 2); }
  KeyBuilder& U32(uint32_t v) { return BigEndian(v, 4); }
  KeyBuilder& U64(uint64_t v) { return BigEndian(v, 8); }
  KeyBuilder& String(std::string_view s) {
    key_.reserve(key_.size() + s.size() + 2);
    for (size_t zero; (zero = s.find('\0')) != std::string_view::npos; s.remove_prefix(zero + 1)) {
      key_.append(s.data(), zero + 1);
      key_.push_back('\xFF');
    }
    key_.append(s);
    key_.append("\0\x01", 2);
    return *this;
  }
  KeyBuilder& Raw(std::string_view bytes) {
    key_.append(bytes);
    return *this;
  }
  const std::string& key() const { return key_; }
  std::string Release() { return std::move(key_); }

 private:
  KeyBuilder& BigEndian(uint64_t v, int bytes) {
    char buf[8];
    for (int i = 0; i < bytes; ++i) buf[i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
    key_.append(buf, bytes);
    return *this;
  }
  std::string key_;
};

// Reads fixed-width big-endian columns back (for keys this file built; no validation beyond
// the length, which callers check with size()).
class KeyReader {
 public:
  explicit KeyReader(std::string_view key) : rest_(key) {}
  bool U8(uint8_t* v) { return Read(v, 1); }
  bool U16(uint16_t* v) { return Read(v, 2); }
  bool U32(uint32_t* v) { return Read(v, 4); }
  bool U64(uint64_t* v) { return Read(v, 8); }
  // Skips an escaped, terminated string.
  bool SkipString() {
    for (size_t i = 0; i + 1 < rest_.size(); ++i) {
      if (rest_[i] != '\0') continue;
      if (rest_[i + 1] == '\x01') {
        rest_.remove_prefix(i + 2);
        return true;
      }
      ++i;  // an escaped zero
    }
    return false;
  }
  std::string_view rest() const { return rest_; }
  size_t size() const { return rest_.size(); }

 private:
  template <typename T>
  bool Read(T* v, int bytes) {
    if (rest_.size() < static_cast<size_t>(bytes)) return false;
    uint64_t x = 0;
    for (int i = 0; i < bytes; ++i) x = (x << 8) | static_cast<uint8_t>(rest_[i]);
    *v = static_cast<T>(x);
    rest_.remove_prefix(bytes);
    return true;
  }
  std::string_view rest_;
};

// ---- the keys of the schema ---------------------------------------------------------------------

inline std::string WarehouseKey(uint16_t w) { return KeyBuilder().U16(w).Release(); }
inline std::string DistrictKey(uint16_t w, uint8_t d) { return KeyBuilder().U16(w).U8(d).Release(); }
inline std::string CustomerKey(uint16_t w, uint8_t d, uint32_t c) {
  return KeyBuilder().U16(w).U8(d).U32(c).Release();
}
// The secondary key of CUSTOMER by name; the entry is this + CustomerKey.
inline std::string CustomerNamePrefix(uint16_t w, uint8_t d, std::string_view last) {
  return KeyBuilder().U16(w).U8(d).String(last).Release();
}
inline std::string CustomerNameKey(uint16_t w, uint8_t d, std::string_view last,
                                   std::string_view first, uint32_t c) {
  return KeyBuilder().U16(w).U8(d).String(last).String(first).U16(w).U8(d).U32(c).Release();
}
// HISTORY has no primary key in the specification: (w, d) of the paying district, the date in
// microseconds and a sequence number that tells payments of the same microsecond apart.
inline std::string HistoryKey(uint16_t w, uint8_t d, uint64_t date_us, uint32_t seq) {
  return KeyBuilder().U16(w).U8(d).U64(date_us).U32(seq).Release();
}
inline std::string NewOrderKey(uint16_t w, uint8_t d, uint32_t o) {
  return KeyBuilder().U16(w).U8(d).U32(o).Release();
}
inline std::string OrderKey(uint16_t w, uint8_t d, uint32_t o) {
  return KeyBuilder().U16(w).U8(d).U32(o).Release();
}
// The secondary key of ORDER by customer is (w, d, c); the entry is that + OrderKey.
inline std::string OrderByCustomerPrefix(uint16_t w, uint8_t d, uint32_t c) {
  return KeyBuilder().U16(w).U8(d).U32(c).Release();
}
inline std::string OrderByCustomerKey(uint16_t w, uint8_t d, uint32_t c, uint32_t o) {
  return KeyBuilder().U16(w).U8(d).U32(c).U16(w).U8(d).U32(o).Release();
}
inline std::string OrderLineKey(uint16_t w, uint8_t d, uint32_t o, uint8_t number) {
  return KeyBuilder().U16(w).U8(d).U32(o).U8(number).Release();
}
inline std::string ItemKey(uint32_t i) { return KeyBuilder().U32(i).Release(); }
inline std::string StockKey(uint16_t w, uint32_t i) { return KeyBuilder().U16(w).U32(i).Release(); }

// The exclusive upper bound of a prefix scan: the prefix with its last byte incremented
// (dropping trailing 0xFF bytes); "" (no bound) if the prefix is all 0xFF.
inline std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<uint8_t>(end.back()) == 0xFF) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
  return end;
}

}  // namespace sm::tpcc
