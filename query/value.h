// Values of the query layer: the logical types, the 16-byte Value a tuple is made of, and the
// conversions between them and text (dates, money, the canonical CSV form).
//
// Owns: Type, Value, the calendar arithmetic on timestamps, and formatting.
//
// A tuple is an array of Values whose types the operator's RowSchema (query/schema.h) gives;
// a Value carries no type of its own, so every operation on it is chosen when a plan is bound,
// never per tuple.
//
// Invariants:
//   1. A NULL Value has null == true; its other fields mean nothing.
//   2. A string Value points at `len` bytes it does not own. They belong to the tuple's
//      producer and stay valid as long as the tuple does (query/operator.h, "Tuple lifetime").
//   3. kMoney is an exact int64 count of cents; kDate an int64 count of microseconds since
//      1970-01-01 00:00:00 UTC; kBool is 0 or 1 in `i`.
//   4. A Value that is not a string has len == 0, so code that copies a tuple's string bytes
//      without its schema (TupleRing::Own) finds them by len.
//
// Thread/fiber safety: values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sm::query {

enum class Type : uint8_t {
  kBool,    // i: 0 or 1
  kInt,     // i: int64
  kDouble,  // d
  kMoney,   // i: cents
  kDate,    // i: microseconds since the Unix epoch (a timestamp; "date" in SQL terms)
  kString,  // s, len
};
const char* TypeName(Type type);
// Types whose values are int64 in `i` (all but kDouble and kString).
inline bool IsIntegral(Type t) { return t != Type::kDouble && t != Type::kString; }
inline bool IsNumeric(Type t) { return t == Type::kInt || t == Type::kDouble || t == Type::kMoney; }

struct Value {
  union {
    int64_t i;
    double d;
    const char* s;
  };
  uint32_t len = 0;  // string bytes
  bool null = false;

  Value() : i(0) {}
  static Value Int(int64_t v) {
    Value x;
    x.i = v;
    return x;
  }
  static Value Double(double v) {
    Value x;
    x.d = v;
    return x;
  }
  static Value String(std::string_view v) {
    Value x;
    x.s = v.data();
    x.len = static_cast<uint32_t>(v.size());
    return x;
  }
  static Value Null() {
    Value x;
    x.null = true;
    return x;
  }
  std::string_view str() const { return std::string_view(s, len); }
};
static_assert(sizeof(Value) == 16, "a tuple's Values are packed two to a 32-byte half line");

inline constexpr int64_t kMicrosPerSecond = 1000000;
inline constexpr int64_t kMicrosPerDay = 86400 * kMicrosPerSecond;

// Calendar fields of a timestamp (proleptic Gregorian, UTC).
struct CivilTime {
  int year, month, day, hour, minute, second, micros;
};
CivilTime ToCivil(int64_t micros);
int64_t FromCivil(const CivilTime& t);
// "YYYY-MM-DD", "YYYY-MM-DD HH:MM:SS" or "YYYY-MM-DD HH:MM:SS.ffffff"; false if malformed.
bool ParseTimestamp(std::string_view text, int64_t* micros);
// "YYYY-MM-DD HH:MM:SS.ffffff" (ISO 8601 with a space, as SQL writes it).
std::string FormatTimestamp(int64_t micros);
// Adds whole months (the day clamped to the month's end, as SQL's interval arithmetic does).
int64_t AddMonths(int64_t micros, int months);
// "-12.34" for -1234 cents.
std::string FormatMoney(int64_t cents);
// The shortest text that reads back to the same double ("0.1", "1e+100", "3").
std::string FormatDouble(double v);

// The canonical text of a value of `type`: what CSV output and result checksums use. NULL is
// the empty string; strings are written as they are (CSV quoting is the writer's concern).
std::string FormatValue(const Value& v, Type type);

}  // namespace sm::query
