// Key encoding: the encoder, the decoder and the successor helpers (format in key_encoding.h).
#include "sm/common/key_encoding.h"

#include <type_traits>

#include "sm/common/assert.h"

namespace sm {

namespace {
constexpr uint64_t kSignBit32 = uint64_t{1} << 31;
constexpr uint64_t kSignBit64 = uint64_t{1} << 63;

// Reads a big-endian UInt off the front of *input; Corruption (input untouched) if short.
template <typename UInt>
Status ReadUnsigned(std::string_view* input, const char* what, UInt* value) {
  static_assert(std::is_unsigned_v<UInt>);
  if (input->size() < sizeof(UInt)) {
    return Status::Corruption(std::string("key truncated in ") + what + " column");
  }
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(UInt); ++i) v = (v << 8) | static_cast<uint8_t>((*input)[i]);
  input->remove_prefix(sizeof(UInt));
  *value = static_cast<UInt>(v);
  return Status::OK();
}

// The inverse of the encoder's sign-bit flip (see AppendI32).
template <typename Int>
Status ReadSigned(std::string_view* input, const char* what, Int* value) {
  using UInt = std::make_unsigned_t<Int>;
  UInt bits;
  SM_TRY(ReadUnsigned(input, what, &bits));
  *value = static_cast<Int>(static_cast<UInt>(bits ^ (UInt{1} << (8 * sizeof(UInt) - 1))));
  return Status::OK();
}
}  // namespace

// ---- KeyEncoder ----

KeyEncoder& KeyEncoder::AppendBigEndian(uint64_t value, size_t bytes) {
  SM_DASSERT(bytes >= 1);
  SM_DASSERT(bytes <= 8);
  SM_DASSERT(bytes == 8 || (value >> (8 * bytes)) == 0);
  for (size_t i = bytes; i-- > 0;) {
    key_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }
  return *this;
}

void KeyEncoder::AppendEscaped(std::string_view value) {
  key_.reserve(key_.size() + value.size() + 2);
  for (char c : value) {
    key_.push_back(c);
    if (c == kKeyEscapeByte) key_.push_back(kKeyEscapedZero);
  }
}

KeyEncoder& KeyEncoder::AppendU8(uint8_t value) { return AppendBigEndian(value, 1); }
KeyEncoder& KeyEncoder::AppendU16(uint16_t value) { return AppendBigEndian(value, 2); }
KeyEncoder& KeyEncoder::AppendU32(uint32_t value) { return AppendBigEndian(value, 4); }
KeyEncoder& KeyEncoder::AppendU64(uint64_t value) { return AppendBigEndian(value, 8); }

KeyEncoder& KeyEncoder::AppendI32(int32_t value) {
  // Two's complement bits with the sign flipped: INT32_MIN -> 0, -1 -> 0x7FFFFFFF, 0 ->
  // 0x80000000. The cast through uint32_t keeps the 32-bit pattern of negative values.
  return AppendBigEndian(static_cast<uint32_t>(value) ^ kSignBit32, 4);
}

KeyEncoder& KeyEncoder::AppendI64(int64_t value) {
  return AppendBigEndian(static_cast<uint64_t>(value) ^ kSignBit64, 8);  // as AppendI32
}

KeyEncoder& KeyEncoder::AppendString(std::string_view value) {
  AppendEscaped(value);
  key_.push_back(kKeyEscapeByte);
  key_.push_back(kKeyTerminator);
  return *this;
}

KeyEncoder& KeyEncoder::AppendStringPrefix(std::string_view value) {
  AppendEscaped(value);
  return *this;
}

KeyEncoder& KeyEncoder::AppendFixed(std::string_view value, size_t width) {
  SM_ASSERT(value.size() <= width);
  key_.append(value);
  key_.append(width - value.size(), '\0');
  return *this;
}

KeyEncoder& KeyEncoder::AppendEncoded(std::string_view encoded) {
  key_.append(encoded);
  return *this;
}

// ---- KeyDecoder ----

Status KeyDecoder::ReadU8(uint8_t* value) { return ReadUnsigned(&input_, "u8", value); }
Status KeyDecoder::ReadU16(uint16_t* value) { return ReadUnsigned(&input_, "u16", value); }
Status KeyDecoder::ReadU32(uint32_t* value) { return ReadUnsigned(&input_, "u32", value); }
Status KeyDecoder::ReadU64(uint64_t* value) { return ReadUnsigned(&input_, "u64", value); }
Status KeyDecoder::ReadI32(int32_t* value) { return ReadSigned(&input_, "i32", value); }
Status KeyDecoder::ReadI64(int64_t* value) { return ReadSigned(&input_, "i64", value); }

Status KeyDecoder::ReadString(std::string* value) {
  // Scan first and build the result only once the terminator is found, so a failed read
  // leaves both the decoder and *value untouched.
  std::string out;
  for (size_t i = 0; i < input_.size(); ++i) {
    char c = input_[i];
    if (c != kKeyEscapeByte) {
      out.push_back(c);
      continue;
    }
    if (i + 1 == input_.size()) break;  // a lone 0x00 at the end: truncated
    char next = input_[i + 1];
    if (next == kKeyTerminator) {
      input_.remove_prefix(i + 2);
      *value = std::move(out);
      return Status::OK();
    }
    if (next != kKeyEscapedZero) {
      return Status::Corruption("key string column has 0x00 followed by an invalid byte");
    }
    out.push_back('\0');
    ++i;
  }
  return Status::Corruption("key string column has no terminator");
}

Status KeyDecoder::ReadFixed(size_t width, std::string_view* value) {
  if (input_.size() < width) return Status::Corruption("key truncated in fixed column");
  *value = input_.substr(0, width);
  input_.remove_prefix(width);
  return Status::OK();
}

// ---- Successors ----

std::string KeySuccessor(std::string_view key) {
  std::string next(key);
  next.push_back('\0');
  return next;
}

std::optional<std::string> PrefixSuccessor(std::string_view prefix) {
  std::string next(prefix);
  while (!next.empty() && static_cast<uint8_t>(next.back()) == 0xFF) next.pop_back();
  if (next.empty()) return std::nullopt;
  next.back() = static_cast<char>(static_cast<uint8_t>(next.back()) + 1);
  return next;
}

}  // namespace sm
