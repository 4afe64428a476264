// Value formatting and calendar arithmetic (contract in value.h).
#include "query/value.h"

#include <charconv>
#include <cstdio>

#include "sm/common/assert.h"

namespace sm::query {

const char* TypeName(Type type) {
  switch (type) {
    case Type::kBool:
      return "bool";
    case Type::kInt:
      return "int";
    case Type::kDouble:
      return "double";
    case Type::kMoney:
      return "money";
    case Type::kDate:
      return "date";
    case Type::kString:
      return "string";
  }
  return "?";
}

namespace {

// Days since 1970-01-01 of a civil date, and back: the era-based conversion of the proleptic
// Gregorian calendar (400-year eras of 146,097 days, years starting in March so that the leap
// day falls last).
int64_t DaysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t year_of_era = y - era * 400;
  int64_t day_of_year = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
  return era * 146097 + day_of_era - 719468;
}

void CivilFromDays(int64_t z, int* year, int* month, int* day) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t day_of_era = z - era * 146097;
  int64_t year_of_era =
      (day_of_era - day_of_era / 1460 + day_of_era / 36524 - day_of_era / 146096) / 365;
  int64_t day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
  int64_t mp = (5 * day_of_year + 2) / 153;
  *day = static_cast<int>(day_of_year - (153 * mp + 2) / 5 + 1);
  *month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  *year = static_cast<int>(year_of_era + era * 400 + (*month <= 2));
}

int DaysInMonth(int year, int month) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : kDays[month - 1];
}

bool ParseDigits(std::string_view text, size_t at, size_t count, int* out) {
  if (at + count > text.size()) return false;
  int v = 0;
  for (size_t i = at; i < at + count; ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    v = v * 10 + (text[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

CivilTime ToCivil(int64_t micros) {
  int64_t days = micros >= 0 ? micros / kMicrosPerDay : -((-micros - 1) / kMicrosPerDay) - 1;
  int64_t rest = micros - days * kMicrosPerDay;
  SM_ASSERT(rest >= 0 && rest < kMicrosPerDay);
  CivilTime t{};
  CivilFromDays(days, &t.year, &t.month, &t.day);
  t.hour = static_cast<int>(rest / (3600 * kMicrosPerSecond));
  t.minute = static_cast<int>(rest / (60 * kMicrosPerSecond) % 60);
  t.second = static_cast<int>(rest / kMicrosPerSecond % 60);
  t.micros = static_cast<int>(rest % kMicrosPerSecond);
  return t;
}

int64_t FromCivil(const CivilTime& t) {
  int64_t days = DaysFromCivil(t.year, t.month, t.day);
  return days * kMicrosPerDay +
         ((t.hour * 60 + t.minute) * 60 + static_cast<int64_t>(t.second)) * kMicrosPerSecond +
         t.micros;
}

bool ParseTimestamp(std::string_view text, int64_t* micros) {
  CivilTime t{};
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return false;
  if (!ParseDigits(text, 0, 4, &t.year) || !ParseDigits(text, 5, 2, &t.month) ||
      !ParseDigits(text, 8, 2, &t.day)) {
    return false;
  }
  if (t.month < 1 || t.month > 12 || t.day < 1 || t.day > DaysInMonth(t.year, t.month)) {
    return false;
  }
  if (text.size() > 10) {
    if (text.size() < 19 || (text[10] != ' ' && text[10] != 'T') || text[13] != ':' ||
        text[16] != ':') {
      return false;
    }
    if (!ParseDigits(text, 11, 2, &t.hour) || !ParseDigits(text, 14, 2, &t.minute) ||
        !ParseDigits(text, 17, 2, &t.second) || t.hour > 23 || t.minute > 59 || t.second > 59) {
      return false;
    }
    if (text.size() > 19) {
      size_t digits = text.size() - 20;
      if (text[19] != '.' || digits == 0 || digits > 6) return false;
      if (!ParseDigits(text, 20, digits, &t.micros)) return false;
      for (size_t i = digits; i < 6; ++i) t.micros *= 10;
    }
  }
  *micros = FromCivil(t);
  return true;
}

std::string FormatTimestamp(int64_t micros) {
  CivilTime t = ToCivil(micros);
  char buf[40];
  int n = std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06d", t.year, t.month,
                        t.day, t.hour, t.minute, t.second, t.micros);
  return std::string(buf, static_cast<size_t>(n));
}

int64_t AddMonths(int64_t micros, int months) {
  CivilTime t = ToCivil(micros);
  int64_t month_index = static_cast<int64_t>(t.year) * 12 + (t.month - 1) + months;
  t.year = static_cast<int>(month_index >= 0 ? month_index / 12 : -((-month_index - 1) / 12) - 1);
  t.month = static_cast<int>(month_index - static_cast<int64_t>(t.year) * 12) + 1;
  int last = DaysInMonth(t.year, t.month);
  if (t.day > last) t.day = last;
  return FromCivil(t);
}

std::string FormatMoney(int64_t cents) {
  // Work in unsigned so that INT64_MIN has a magnitude.
  uint64_t magnitude = cents < 0 ? 0 - static_cast<uint64_t>(cents) : static_cast<uint64_t>(cents);
  char buf[32];
  int n = std::snprintf(buf, sizeof(buf), "%s%llu.%02llu", cents < 0 ? "-" : "",
                        static_cast<unsigned long long>(magnitude / 100),
                        static_cast<unsigned long long>(magnitude % 100));
  return std::string(buf, static_cast<size_t>(n));
}

std::string FormatDouble(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  SM_ASSERT(ec == std::errc());
  return std::string(buf, end);
}

std::string FormatValue(const Value& v, Type type) {
  if (v.null) return std::string();
  switch (type) {
    case Type::kBool:
      return v.i ? "true" : "false";
    case Type::kInt:
      return std::to_string(v.i);
    case Type::kDouble:
      return FormatDouble(v.d);
    case Type::kMoney:
      return FormatMoney(v.i);
    case Type::kDate:
      return FormatTimestamp(v.i);
    case Type::kString:
      return std::string(v.str());
  }
  return std::string();
}

}  // namespace sm::query
