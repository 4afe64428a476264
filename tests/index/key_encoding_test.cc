// Key encoding: byte layouts, order at the boundaries, strings with embedded zeros and
// prefixes, round trips, successors, a seeded test that the memcmp order of encodings equals
// the typed tuple order, and malformed input that the decoder must reject without crashing.
#include "sm/common/key_encoding.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "tests/test_util.h"

using sm::Status;
using sm::KeyDecoder;
using sm::KeyEncoder;
using sm::KeySuccessor;
using sm::PrefixSuccessor;

namespace {

using namespace std::string_literals;

// memcmp order of two byte strings, shorter first on a common prefix: the B-tree's order.
int ByteCompare(std::string_view a, std::string_view b) {
  int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c < 0 ? -1 : 1;
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

std::string EncodeString(std::string_view s) { return KeyEncoder().AppendString(s).Release(); }

// ---- A tiny typed-tuple model for the random tests ----

enum class Type { kU8, kU16, kU32, kU64, kI32, kI64, kString, kFixed };
struct Column {
  Type type;
  size_t width = 0;  // kFixed only
};
using Value = std::variant<uint64_t, int64_t, std::string>;
using Tuple = std::vector<Value>;

template <typename T>
int Cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Lexicographic over the columns, each by its type. Fixed columns compare padded to width.
int CompareTuples(const std::vector<Column>& schema, const Tuple& a, const Tuple& b) {
  for (size_t i = 0; i < schema.size(); ++i) {
    int c = 0;
    switch (schema[i].type) {
      case Type::kI32:
      case Type::kI64:
        c = Cmp3(std::get<int64_t>(a[i]), std::get<int64_t>(b[i]));
        break;
      case Type::kString:
        c = ByteCompare(std::get<std::string>(a[i]), std::get<std::string>(b[i]));
        break;
      case Type::kFixed: {
        std::string pa = std::get<std::string>(a[i]), pb = std::get<std::string>(b[i]);
        pa.resize(schema[i].width, '\0');
        pb.resize(schema[i].width, '\0');
        c = ByteCompare(pa, pb);
        break;
      }
      default:
        c = Cmp3(std::get<uint64_t>(a[i]), std::get<uint64_t>(b[i]));
    }
    if (c != 0) return c;
  }
  return 0;
}

std::string Encode(const std::vector<Column>& schema, const Tuple& t) {
  KeyEncoder enc;
  for (size_t i = 0; i < schema.size(); ++i) {
    switch (schema[i].type) {
      case Type::kU8:
        enc.AppendU8(static_cast<uint8_t>(std::get<uint64_t>(t[i])));
        break;
      case Type::kU16:
        enc.AppendU16(static_cast<uint16_t>(std::get<uint64_t>(t[i])));
        break;
      case Type::kU32:
        enc.AppendU32(static_cast<uint32_t>(std::get<uint64_t>(t[i])));
        break;
      case Type::kU64:
        enc.AppendU64(std::get<uint64_t>(t[i]));
        break;
      case Type::kI32:
        enc.AppendI32(static_cast<int32_t>(std::get<int64_t>(t[i])));
        break;
      case Type::kI64:
        enc.AppendI64(std::get<int64_t>(t[i]));
        break;
      case Type::kString:
        enc.AppendString(std::get<std::string>(t[i]));
        break;
      case Type::kFixed:
        enc.AppendFixed(std::get<std::string>(t[i]), schema[i].width);
        break;
    }
  }
  return enc.Release();
}

// Reads a T with `read` and stores it in *out as the model's wider type W.
template <typename W, typename T>
Status ReadAs(KeyDecoder& dec, Status (KeyDecoder::*read)(T*), Value* out) {
  T v{};
  Status s = (dec.*read)(&v);
  *out = W(v);
  return s;
}

// Reads one column of type `col` into *out; returns the decoder's Status.
Status DecodeColumn(KeyDecoder& dec, const Column& col, Value* out) {
  switch (col.type) {
    case Type::kU8:
      return ReadAs<uint64_t>(dec, &KeyDecoder::ReadU8, out);
    case Type::kU16:
      return ReadAs<uint64_t>(dec, &KeyDecoder::ReadU16, out);
    case Type::kU32:
      return ReadAs<uint64_t>(dec, &KeyDecoder::ReadU32, out);
    case Type::kU64:
      return ReadAs<uint64_t>(dec, &KeyDecoder::ReadU64, out);
    case Type::kI32:
      return ReadAs<int64_t>(dec, &KeyDecoder::ReadI32, out);
    case Type::kI64:
      return ReadAs<int64_t>(dec, &KeyDecoder::ReadI64, out);
    case Type::kString:
      return ReadAs<std::string>(dec, &KeyDecoder::ReadString, out);
    case Type::kFixed: {
      std::string_view v;
      Status s = dec.ReadFixed(col.width, &v);
      *out = std::string(v);
      return s;
    }
  }
  return Status::InvalidArgument("unknown column type");
}

// Decodes a whole tuple; OK only if every column decoded and no byte is left over. A failed
// read must be Corruption and must not move the decoder.
Status DecodeTuple(const std::vector<Column>& schema, std::string_view key, Tuple* out) {
  KeyDecoder dec(key);
  out->clear();
  for (const Column& col : schema) {
    std::string_view before = dec.remaining();
    Value v;
    Status s = DecodeColumn(dec, col, &v);
    if (!s.ok()) {
      REQUIRE(s.IsCorruption());
      REQUIRE(dec.remaining().data() == before.data());
      REQUIRE(dec.remaining().size() == before.size());
      return s;
    }
    out->push_back(std::move(v));
  }
  if (!dec.done()) return Status::Corruption("trailing bytes");
  return Status::OK();
}

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}

  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  uint64_t Bits() { return rng_(); }

  std::vector<Column> Schema() {
    std::vector<Column> schema(1 + Uniform(4));
    for (Column& c : schema) {
      c.type = static_cast<Type>(Uniform(8));
      c.width = c.type == Type::kFixed ? 1 + Uniform(4) : 0;
    }
    return schema;
  }

  // Values crowd around the boundaries and small domains, so that ties (which make later
  // columns decide) and sign/prefix edge cases are frequent.
  uint64_t Unsigned(int bits) {
    uint64_t max = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    switch (Uniform(5)) {
      case 0:
        return Uniform(3);
      case 1:
        return max - Uniform(2);
      case 2:
        return (uint64_t{1} << (bits - 1)) - 1 + Uniform(3);  // around the top bit
      default:
        return Bits() & max;
    }
  }

  int64_t Signed(int bits) {
    int64_t min = bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits - 1));
    int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    switch (Uniform(5)) {
      case 0:
        return static_cast<int64_t>(Uniform(5)) - 2;
      case 1:
        return min + static_cast<int64_t>(Uniform(2));
      case 2:
        return max - static_cast<int64_t>(Uniform(2));
      default:
        return bits == 64 ? static_cast<int64_t>(Bits())
                          : static_cast<int64_t>(static_cast<int32_t>(Bits()));
    }
  }

  std::string Bytes(size_t max_len) {
    static constexpr char kAlphabet[] = {'\x00', '\x01', '\x02', 'a', '\xFE', '\xFF'};
    std::string s(Uniform(max_len + 1), '\0');
    for (char& c : s) {
      c = Uniform(4) == 0 ? static_cast<char>(Bits()) : kAlphabet[Uniform(sizeof(kAlphabet))];
    }
    return s;
  }

  Value MakeValue(const Column& c) {
    static constexpr int kBits[] = {8, 16, 32, 64, 32, 64};  // by Type, integers only
    switch (c.type) {
      case Type::kString:
        return Bytes(5);
      case Type::kFixed:
        return Bytes(c.width);
      case Type::kI32:
      case Type::kI64:
        return Signed(kBits[static_cast<int>(c.type)]);
      default:
        return Unsigned(kBits[static_cast<int>(c.type)]);
    }
  }

  Tuple MakeTuple(const std::vector<Column>& schema) {
    Tuple t;
    for (const Column& c : schema) t.push_back(MakeValue(c));
    return t;
  }

 private:
  std::mt19937_64 rng_;
};

std::string Padded(std::string s, size_t width) {
  s.resize(width, '\0');
  return s;
}

}  // namespace

TEST_CASE("integers encode big-endian, signed ones with the sign bit flipped", "[unit][key]") {
  REQUIRE(KeyEncoder().AppendU8(0xAB).key() == "\xAB"s);
  REQUIRE(KeyEncoder().AppendU16(0x0102).key() == "\x01\x02"s);
  REQUIRE(KeyEncoder().AppendU32(0x01020304).key() == "\x01\x02\x03\x04"s);
  REQUIRE(KeyEncoder().AppendU64(0x0102030405060708).key() == "\x01\x02\x03\x04\x05\x06\x07\x08"s);
  REQUIRE(KeyEncoder().AppendI32(0).key() == "\x80\x00\x00\x00"s);
  REQUIRE(KeyEncoder().AppendI32(-1).key() == "\x7F\xFF\xFF\xFF"s);
  REQUIRE(KeyEncoder().AppendI64(std::numeric_limits<int64_t>::min()).key() ==
          std::string(8, '\0'));
  REQUIRE(KeyEncoder().AppendI64(std::numeric_limits<int64_t>::max()).key() ==
          std::string(8, '\xFF'));
}

TEST_CASE("signed integers sort numerically across zero and at the limits", "[unit][key]") {
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::min() + 1,
                                    -4294967296LL,
                                    -2,
                                    -1,
                                    0,
                                    1,
                                    255,
                                    256,
                                    4294967296LL,
                                    std::numeric_limits<int64_t>::max() - 1,
                                    std::numeric_limits<int64_t>::max()};
  for (size_t i = 0; i + 1 < i64.size(); ++i) {
    CAPTURE(i64[i], i64[i + 1]);
    REQUIRE(ByteCompare(KeyEncoder().AppendI64(i64[i]).key(),
                        KeyEncoder().AppendI64(i64[i + 1]).key()) < 0);
  }
  const std::vector<int32_t> i32 = {std::numeric_limits<int32_t>::min(), -65536, -1, 0, 1, 65536,
                                    std::numeric_limits<int32_t>::max()};
  for (size_t i = 0; i + 1 < i32.size(); ++i) {
    REQUIRE(ByteCompare(KeyEncoder().AppendI32(i32[i]).key(),
                        KeyEncoder().AppendI32(i32[i + 1]).key()) < 0);
  }
  for (int64_t v : i64) {
    std::string key = KeyEncoder().AppendI64(v).Release();
    KeyDecoder dec(key);
    int64_t back = 0;
    REQUIRE(dec.ReadI64(&back).ok());
    REQUIRE(back == v);
    REQUIRE(dec.done());
  }
}

TEST_CASE("strings: prefixes first, embedded zeros escaped, round trip", "[unit][key]") {
  REQUIRE(EncodeString("") == "\x00\x01"s);
  REQUIRE(EncodeString("a\0b"s) ==
          "a\x00\xFF"
          "b\x00\x01"s);
  // Strictly increasing in byte order of the raw strings.
  const std::vector<std::string> sorted = {
      ""s,      "\0"s, "\0\0"s, "\0\x01"s, "\x01"s, "a"s,    "a\0"s,    "a\0\0"s,   "a\0b"s,
      "a\x01"s, "ab"s, "ab\0"s, "abc"s,    "b"s,    "\xFF"s, "\xFF\0"s, "\xFF\xFF"s};
  for (size_t i = 0; i + 1 < sorted.size(); ++i) {
    CAPTURE(i);
    REQUIRE(ByteCompare(EncodeString(sorted[i]), EncodeString(sorted[i + 1])) < 0);
  }
  for (const std::string& s : sorted) {
    std::string key = EncodeString(s);
    KeyDecoder dec(key);
    std::string back = "garbage";
    REQUIRE(dec.ReadString(&back).ok());
    REQUIRE(back == s);
    REQUIRE(dec.done());
  }
}

TEST_CASE("a string column ends before the next column compares", "[unit][key]") {
  auto key = [](std::string_view s, uint32_t n) {
    return KeyEncoder().AppendString(s).AppendU32(n).Release();
  };
  REQUIRE(ByteCompare(key("a", 0xFFFFFFFF), key("a\0"s, 0)) < 0);
  REQUIRE(ByteCompare(key("a", 0xFFFFFFFF), key("ab", 0)) < 0);
  REQUIRE(ByteCompare(key("ab", 1), key("ab", 2)) < 0);
  REQUIRE(ByteCompare(key("", 7), key("\0"s, 0)) < 0);
}

TEST_CASE("AppendEncoded appends a finished key unchanged", "[unit][key]") {
  // A secondary index key: (last name, first name) followed by the encoded primary key.
  std::string primary = KeyEncoder().AppendU32(3).AppendU32(1042).Release();
  std::string key =
      KeyEncoder().AppendString("SMITH").AppendString("ANN").AppendEncoded(primary).Release();
  REQUIRE(key == EncodeString("SMITH") + EncodeString("ANN") + primary);
  KeyDecoder dec(key);
  std::string last, first;
  uint32_t w_id = 0, c_id = 0;
  REQUIRE(dec.ReadString(&last).ok());
  REQUIRE(dec.ReadString(&first).ok());
  REQUIRE(dec.remaining() == primary);
  REQUIRE(dec.ReadU32(&w_id).ok());
  REQUIRE(dec.ReadU32(&c_id).ok());
  REQUIRE(last == "SMITH");
  REQUIRE(first == "ANN");
  REQUIRE(w_id == 3);
  REQUIRE(c_id == 1042);
  REQUIRE(dec.done());
}

TEST_CASE("fixed-width columns pad with zeros and decode to the padded bytes", "[unit][key]") {
  std::string key = KeyEncoder().AppendFixed("ab", 4).AppendU8(9).Release();
  REQUIRE(key == "ab\0\0\x09"s);
  REQUIRE(KeyEncoder().AppendFixed("", 0).key().empty());
  REQUIRE(ByteCompare(KeyEncoder().AppendFixed("a", 3).key(),
                      KeyEncoder().AppendFixed("a\x01", 3).key()) < 0);
  KeyDecoder dec(key);
  std::string_view fixed;
  uint8_t tail = 0;
  REQUIRE(dec.ReadFixed(4, &fixed).ok());
  REQUIRE(fixed == "ab\0\0"s);
  REQUIRE(dec.ReadU8(&tail).ok());
  REQUIRE(tail == 9);
  REQUIRE(dec.done());
}

TEST_CASE("KeySuccessor and PrefixSuccessor bound range scans", "[unit][key]") {
  REQUIRE(KeySuccessor("ab") == "ab\0"s);
  REQUIRE(KeySuccessor("") == "\0"s);
  REQUIRE(PrefixSuccessor("ab") == "ac");
  REQUIRE(PrefixSuccessor("a\xFF\xFF"s) == "b");
  REQUIRE(PrefixSuccessor("\x01\xFE"s) == "\x01\xFF"s);
  REQUIRE_FALSE(PrefixSuccessor("").has_value());
  REQUIRE_FALSE(PrefixSuccessor("\xFF\xFF"s).has_value());

  // All customers of warehouse 3, district 7, whose last name starts with "BAR": the encoded
  // string prefix is a prefix of every full key in range and of no key outside it.
  std::string lo = KeyEncoder().AppendU32(3).AppendU8(7).AppendStringPrefix("BAR").Release();
  std::string hi = PrefixSuccessor(lo).value();
  auto in_range = [&](std::string_view last, uint32_t id) {
    std::string k =
        KeyEncoder().AppendU32(3).AppendU8(7).AppendString(last).AppendU32(id).Release();
    return ByteCompare(lo, k) <= 0 && ByteCompare(k, hi) < 0;
  };
  REQUIRE(in_range("BAR", 0));
  REQUIRE(in_range("BAR\0"s, 5));
  REQUIRE(in_range("BARBAR", 0xFFFFFFFF));
  REQUIRE(in_range("BAR\xFF\xFF"s, 1));
  REQUIRE_FALSE(in_range("BA", 0));
  REQUIRE_FALSE(in_range("BAS", 0));
  REQUIRE_FALSE(in_range("BAQ\xFF"s, 0));
}

TEST_CASE("successors agree with prefix membership on random strings", "[random][key]") {
  Gen gen(sm::test::TestSeed("key_successors"));
  for (int iter = 0; iter < 20000; ++iter) {
    std::string p = gen.Bytes(3), s = gen.Bytes(5);
    CAPTURE(iter, p, s);
    bool has_prefix = s.compare(0, p.size(), p) == 0 && s.size() >= p.size();
    std::optional<std::string> hi = PrefixSuccessor(p);
    bool in_range = ByteCompare(p, s) <= 0 && (!hi || ByteCompare(s, *hi) < 0);
    REQUIRE(has_prefix == in_range);
    // Nothing lies strictly between a key and its successor.
    std::string next = KeySuccessor(p);
    REQUIRE(ByteCompare(p, next) < 0);
    if (ByteCompare(s, p) > 0) REQUIRE(ByteCompare(s, next) >= 0);
  }
}

TEST_CASE("memcmp order of encodings equals typed tuple order, and decoding round-trips",
          "[random][key]") {
  Gen gen(sm::test::TestSeed("key_tuple_order"));
  for (int round = 0; round < 200; ++round) {
    std::vector<Column> schema = gen.Schema();
    std::vector<Tuple> tuples;
    std::vector<std::string> keys;
    for (int i = 0; i < 40; ++i) {
      tuples.push_back(gen.MakeTuple(schema));
      keys.push_back(Encode(schema, tuples.back()));
    }
    for (size_t i = 0; i < tuples.size(); ++i) {
      Tuple back;
      REQUIRE(DecodeTuple(schema, keys[i], &back).ok());
      for (size_t c = 0; c < schema.size(); ++c) {
        if (schema[c].type == Type::kFixed) {
          REQUIRE(std::get<std::string>(back[c]) ==
                  Padded(std::get<std::string>(tuples[i][c]), schema[c].width));
        } else {
          REQUIRE(back[c] == tuples[i][c]);
        }
      }
      for (size_t j = 0; j < tuples.size(); ++j) {
        CAPTURE(round, i, j);
        REQUIRE(ByteCompare(keys[i], keys[j]) == CompareTuples(schema, tuples[i], tuples[j]));
      }
    }
  }
}

TEST_CASE("the decoder rejects truncated and invalid input with Corruption", "[unit][key]") {
  uint32_t u32 = 0;
  uint64_t u64 = 0;
  std::string s;
  std::string_view fixed;
  REQUIRE(KeyDecoder("").ReadU32(&u32).IsCorruption());
  REQUIRE(KeyDecoder("\x01\x02\x03").ReadU32(&u32).IsCorruption());
  REQUIRE(KeyDecoder("1234567").ReadU64(&u64).IsCorruption());
  REQUIRE(KeyDecoder("abc").ReadString(&s).IsCorruption());       // no terminator
  REQUIRE(KeyDecoder("abc\0"s).ReadString(&s).IsCorruption());    // lone 0x00 at the end
  REQUIRE(KeyDecoder("a\0\x02"s).ReadString(&s).IsCorruption());  // bad escape
  REQUIRE(KeyDecoder("a\0\xFF"s).ReadString(&s).IsCorruption());  // escaped zero, no end
  REQUIRE(KeyDecoder("ab").ReadFixed(3, &fixed).IsCorruption());
  REQUIRE(s.empty());  // failed reads leave the output alone

  // A failed read does not advance: the same bytes can be read as another type.
  std::string key = "\0\x02\0\x01"s;
  KeyDecoder dec(key);
  REQUIRE(dec.ReadString(&s).IsCorruption());
  REQUIRE(dec.remaining().size() == 4);
  REQUIRE(dec.ReadU32(&u32).ok());
  REQUIRE(u32 == 0x00020001);
}

TEST_CASE("random bytes and truncated keys never crash the decoder", "[random][key]") {
  Gen gen(sm::test::TestSeed("key_malformed"));
  for (int round = 0; round < 3000; ++round) {
    std::vector<Column> schema = gen.Schema();
    Tuple back;
    // Arbitrary bytes: any outcome but a crash or a code other than Corruption (checked in
    // DecodeTuple).
    DecodeTuple(schema, gen.Bytes(24), &back).PermitUnchecked();
    // Every strict prefix of a valid key fails to decode as the whole tuple.
    std::string key = Encode(schema, gen.MakeTuple(schema));
    for (size_t len = 0; len < key.size(); ++len) {
      CAPTURE(round, len);
      REQUIRE(DecodeTuple(schema, std::string_view(key).substr(0, len), &back).IsCorruption());
    }
  }
}
