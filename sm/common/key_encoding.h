// Key encoding: memcmp-comparable byte strings for composite (multi-column) keys.
//
// Owns: the byte format of every B-tree key built from typed columns (KeyEncoder), its
// inverse (KeyDecoder), and the successor helpers that turn a key or key prefix into a bound
// for a range scan (KeySuccessor, PrefixSuccessor).
//
// Part of the public API: sm/sm.h includes it and it is installed with it. It is a leaf (it
// depends on Status only), so the B-tree and the TPC-C keys use the same rules.
//
// The B-tree compares keys with memcmp (shorter-is-smaller on a common prefix) and knows
// nothing of columns. This file makes that order equal the order of the typed tuples:
//
//   memcmp(Encode(a), Encode(b)) has the sign of Compare(a, b), where Compare is
//   lexicographic over the columns, each column compared by its own type.
//
// Byte format (per column, concatenated in column order, no tuple header or column tags):
//
//   U8/U16/U32/U64  1/2/4/8 bytes, big-endian. Big-endian puts the most significant byte
//                   first, so memcmp compares unsigned integers numerically.
//   I32/I64         4/8 bytes, big-endian of (value XOR sign bit). Flipping the sign bit maps
//                   INT_MIN..INT_MAX monotonically onto 0..UINT_MAX (two's complement), so
//                   negative numbers sort before positive ones.
//   String          the bytes of the string with every 0x00 escaped as 0x00 0xFF, then the
//                   terminator 0x00 0x01. Why this works:
//                     - a non-zero byte of one string against the terminator's 0x00 of a
//                       shorter one: the shorter (a proper prefix) sorts first;
//                     - an escaped zero (0x00 0xFF) against the terminator (0x00 0x01): the
//                       string that continues sorts after the one that ends, as it must
//                       ("a" < "a\0");
//                     - escaped zero against a non-zero byte: 0x00 < 0x01..0xFF, as the raw
//                       bytes compare.
//                   The encoding is self-delimiting (the first 0x00 0x01 ends it), so the
//                   columns after a string compare only when the strings are equal.
//   StringPrefix    escaped bytes without the terminator. Only useful as the last thing in a
//                   range-scan bound: every String column whose value starts with s encodes
//                   to bytes that start with StringPrefix(s).
//   Fixed(width)    the bytes of the value, right-padded with 0x00 to exactly `width` bytes
//                   (a CHAR(width) column). Trailing 0x00 bytes are indistinguishable from
//                   padding: "ab" and "ab\0" encode the same. The decoder returns the padded
//                   bytes.
//
// Invariants:
//   1. Order: for two tuples of the same column types, the memcmp order of their encodings
//      equals the tuple order (tested with random tuples in tests/index/key_encoding_test.cc).
//   2. Round trip: decoding an encoding with the same column types gives back the values
//      (Fixed columns give back the padded bytes).
//   3. The decoder never reads outside its input: malformed or truncated input yields
//      Status::Corruption, and the failed read does not advance the decoder.
//
// Thread/fiber safety: KeyEncoder and KeyDecoder are values with no shared state; distinct
// objects may be used concurrently. The helpers are pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sm/common/status.h"

namespace sm {

// String escape bytes (see the format above).
inline constexpr char kKeyEscapeByte = '\x00';
inline constexpr char kKeyEscapedZero = '\xFF';  // 0x00 0xFF is a zero byte of the value
inline constexpr char kKeyTerminator = '\x01';   // 0x00 0x01 ends the string

// Builds an encoded key column by column. The Append functions return *this for chaining:
//   KeyEncoder().AppendU32(w_id).AppendU8(d_id).AppendString(last_name).key()
class KeyEncoder {
 public:
  KeyEncoder() = default;

  KeyEncoder& AppendU8(uint8_t value);
  KeyEncoder& AppendU16(uint16_t value);
  KeyEncoder& AppendU32(uint32_t value);
  KeyEncoder& AppendU64(uint64_t value);
  KeyEncoder& AppendI32(int32_t value);
  KeyEncoder& AppendI64(int64_t value);
  KeyEncoder& AppendString(std::string_view value);
  // Escaped bytes of `value` with no terminator: the prefix shared by the encodings of all
  // strings that start with `value`. Must be the last append of a range-scan bound.
  KeyEncoder& AppendStringPrefix(std::string_view value);
  // `value` padded with 0x00 to `width` bytes. SM_ASSERTs value.size() <= width (a longer
  // value is a schema error of the caller, not an expected failure).
  KeyEncoder& AppendFixed(std::string_view value, size_t width);
  // Appends bytes that are already an encoded key (e.g. a primary key appended to a
  // secondary key), unchanged.
  KeyEncoder& AppendEncoded(std::string_view encoded);

  const std::string& key() const { return key_; }
  size_t size() const { return key_.size(); }
  void Clear() { key_.clear(); }
  // Moves the key out, leaving the encoder empty.
  std::string Release() { return std::move(key_); }

 private:
  KeyEncoder& AppendBigEndian(uint64_t value, size_t bytes);
  void AppendEscaped(std::string_view value);

  std::string key_;
};

// Reads columns back from an encoded key, in the order and with the types they were
// appended. The decoder views `encoded` and does not copy it: the bytes must outlive it.
// Every Read returns Corruption (and does not advance) if the input is truncated or not a
// valid encoding of the requested type.
class KeyDecoder {
 public:
  explicit KeyDecoder(std::string_view encoded) : input_(encoded) {}

  [[nodiscard]] Status ReadU8(uint8_t* value);
  [[nodiscard]] Status ReadU16(uint16_t* value);
  [[nodiscard]] Status ReadU32(uint32_t* value);
  [[nodiscard]] Status ReadU64(uint64_t* value);
  [[nodiscard]] Status ReadI32(int32_t* value);
  [[nodiscard]] Status ReadI64(int64_t* value);
  [[nodiscard]] Status ReadString(std::string* value);
  // The `width` padded bytes of a Fixed column, as a view into the input.
  [[nodiscard]] Status ReadFixed(size_t width, std::string_view* value);

  // True when every byte has been consumed; a caller that decoded all columns checks this to
  // reject trailing garbage.
  bool done() const { return input_.empty(); }
  std::string_view remaining() const { return input_; }

 private:
  std::string_view input_;
};

// The smallest byte string strictly greater than `key` (key + 0x00). An exclusive upper bound
// of KeySuccessor(k) makes a scan include k itself; a lower bound of it skips exactly k.
std::string KeySuccessor(std::string_view key);

// The smallest byte string greater than every string that starts with `prefix`: drop trailing
// 0xFF bytes and increment the last remaining byte. Scanning [prefix, PrefixSuccessor(prefix))
// visits exactly the keys with that prefix. std::nullopt when no such string exists (empty
// prefix, or all bytes 0xFF): the scan has no upper bound.
std::optional<std::string> PrefixSuccessor(std::string_view prefix);

}  // namespace sm
