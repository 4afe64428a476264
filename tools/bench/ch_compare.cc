// The file of CH-benCHmark queries in SQL and the comparison of two results (contract in
// ch_sqlite.h).
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "sm/common/assert.h"
#include "tools/bench/ch_sqlite.h"

namespace sm::bench {

namespace {

using query::ResultRows;
using query::Type;

// ---- the query file -----------------------------------------------------------------------------

std::string_view Trim(std::string_view s) {
  size_t begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  size_t end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// n of a line "-- Q<n>", else 0.
int QueryMarker(std::string_view line) {
  line = Trim(line);
  if (line.substr(0, 2) != "--") return 0;
  line = Trim(line.substr(2));
  if (line.size() < 2 || line[0] != 'Q') return 0;
  int n = 0;
  for (char c : line.substr(1)) {
    if (c < '0' || c > '9' || n > 1000) return 0;
    n = n * 10 + (c - '0');
  }
  return n;
}

// True for a line "-- order by: ..."; *rest is what follows the colon.
bool OrderByLine(std::string_view line, std::string_view* rest) {
  line = Trim(line);
  if (line.substr(0, 2) != "--") return false;
  line = Trim(line.substr(2));
  constexpr std::string_view kTag = "order by:";
  if (Lower(line.substr(0, kTag.size())) != kTag) return false;
  *rest = Trim(line.substr(kTag.size()));
  return true;
}

Status ParseOrderKeys(std::string_view text, std::vector<OrderKey>* keys) {
  keys->clear();
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    OrderKey key;
    size_t space = item.find_first_of(" \t");
    key.column = std::string(item.substr(0, space));
    std::string direction = Lower(space == std::string_view::npos ? "" : Trim(item.substr(space)));
    if (key.column.empty() || (direction != "" && direction != "asc" && direction != "desc")) {
      return Status::InvalidArgument("'" + std::string(item) + "' is not '<column> [asc|desc]'");
    }
    key.descending = direction == "desc";
    keys->push_back(std::move(key));
  }
  return Status::OK();
}

// Checks a query just read: its order-by line came, its text is there, and ORDER BY appears in
// the SQL exactly when keys were listed.
Status FinishQuery(const ChSql& q, bool has_order_line, std::set<int>* seen) {
  std::string where = "Q" + std::to_string(q.number);
  if (!has_order_line) return Status::InvalidArgument(where + " has no '-- order by:' line");
  if (!seen->insert(q.number).second) return Status::InvalidArgument(where + " appears twice");
  if (Trim(q.sql).empty()) return Status::InvalidArgument(where + " has no SQL");
  bool sorts = Lower(q.sql).find("order by") != std::string::npos;
  if (sorts != !q.order_by.empty()) {
    return Status::InvalidArgument(where + (sorts ? " sorts but lists no order-by columns"
                                                  : " lists order-by columns but does not sort"));
  }
  return Status::OK();
}

// ---- comparing results --------------------------------------------------------------------------

std::string Unqualified(const std::string& name) {
  size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

double ToDouble(const std::string& text) { return std::strtod(text.c_str(), nullptr); }

bool SameValue(Type type, const std::string& a, bool a_null, const std::string& b, bool b_null) {
  if (a_null || b_null) return a_null == b_null;
  if (type != Type::kDouble) return a == b;
  double x = ToDouble(a), y = ToDouble(b);
  if (x == y || (std::isnan(x) && std::isnan(y))) return true;
  double diff = std::fabs(x - y);
  return diff <= 1e-9 || diff <= 1e-9 * std::max(std::fabs(x), std::fabs(y));
}

// One side of a comparison.
struct Side {
  const ResultRows& r;
  const std::string& Text(size_t row, size_t col) const { return r.rows[row][col]; }
  bool Null(size_t row, size_t col) const { return r.nulls[row][col]; }
  std::string Row(size_t row) const {
    std::string out = "(";
    for (size_t c = 0; c < r.rows[row].size(); ++c) {
      out += (c ? ", " : "") + (Null(row, c) ? std::string("NULL") : "'" + Text(row, c) + "'");
    }
    return out + ")";
  }
};

bool SameCell(const Side& a, size_t ra, const Side& b, size_t rb, size_t col) {
  return SameValue(a.r.schema[col].type, a.Text(ra, col), a.Null(ra, col), b.Text(rb, col),
                   b.Null(rb, col));
}

// A total order of a side's rows for multiset comparison: the exact columns first (as text),
// then the doubles by value, so that rows equal up to rounding line up on both sides.
int CompareRowsCanonically(const Side& a, size_t ra, const Side& b, size_t rb) {
  size_t width = a.r.schema.size();
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t c = 0; c < width; ++c) {
      bool is_double = a.r.schema[c].type == Type::kDouble;
      if (is_double != (pass == 1)) continue;
      if (a.Null(ra, c) != b.Null(rb, c)) return a.Null(ra, c) ? -1 : 1;
      if (a.Null(ra, c) || SameCell(a, ra, b, rb, c)) continue;
      if (!is_double) return a.Text(ra, c) < b.Text(rb, c) ? -1 : 1;
      return ToDouble(a.Text(ra, c)) < ToDouble(b.Text(rb, c)) ? -1 : 1;
    }
  }
  return 0;
}

std::vector<size_t> SortedRange(const Side& s, size_t begin, size_t end) {
  std::vector<size_t> rows;
  for (size_t i = begin; i < end; ++i) rows.push_back(i);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](size_t x, size_t y) { return CompareRowsCanonically(s, x, s, y) < 0; });
  return rows;
}

std::string Cell(const Side& s, size_t row, size_t col) {
  return s.Null(row, col) ? "NULL" : "'" + s.Text(row, col) + "'";
}

// The first row that one side has more often than the other, for results of different sizes.
std::string FirstUnmatched(const Side& ours, const Side& theirs) {
  std::vector<size_t> a = SortedRange(ours, 0, ours.r.rows.size());
  std::vector<size_t> b = SortedRange(theirs, 0, theirs.r.rows.size());
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int order = CompareRowsCanonically(ours, a[i], theirs, b[j]);
    if (order < 0) return "; only ours has " + ours.Row(a[i]);
    if (order > 0) return "; only theirs has " + theirs.Row(b[j]);
    ++i;
    ++j;
  }
  if (i < a.size()) return "; only ours has " + ours.Row(a[i]);
  if (j < b.size()) return "; only theirs has " + theirs.Row(b[j]);
  return "";
}

// Compares rows [begin, end) of both sides as multisets.
bool SameMultiset(const std::string& label, const Side& ours, const Side& theirs, size_t begin,
                  size_t end, bool tied, std::string* difference) {
  std::vector<size_t> a = SortedRange(ours, begin, end);
  std::vector<size_t> b = SortedRange(theirs, begin, end);
  for (size_t k = 0; k < a.size(); ++k) {
    for (size_t c = 0; c < ours.r.schema.size(); ++c) {
      if (SameCell(ours, a[k], theirs, b[k], c)) continue;
      std::string scope;
      if (tied) {
        scope = " (rows " + std::to_string(begin + 1) + ".." + std::to_string(end) +
                " tie on the ORDER BY keys and are compared as a multiset)";
      } else if (end - begin > 1) {
        scope = " (the rows are compared as a multiset, in a canonical order)";
      }
      *difference = label + ": row " + std::to_string(begin + k + 1) + scope + ", column " +
                    ours.r.schema[c].name + ": ours " + Cell(ours, a[k], c) + " vs theirs " +
                    Cell(theirs, b[k], c) + "; ours " + ours.Row(a[k]) + ", theirs " +
                    theirs.Row(b[k]);
      return false;
    }
  }
  return true;
}

bool SameColumns(const std::string& label, const ResultRows& ours, const ResultRows& theirs,
                 std::string* difference) {
  if (ours.schema.size() != theirs.schema.size()) {
    *difference = label + ": ours has columns (" + ours.schema.ToString() + "), theirs (" +
                  theirs.schema.ToString() + ")";
    return false;
  }
  for (size_t c = 0; c < ours.schema.size(); ++c) {
    if (Unqualified(ours.schema[c].name) == Unqualified(theirs.schema[c].name) &&
        ours.schema[c].type == theirs.schema[c].type) {
      continue;
    }
    *difference = label + ": column " + std::to_string(c + 1) + " is " + ours.schema[c].name + ":" +
                  query::TypeName(ours.schema[c].type) + " in ours, " + theirs.schema[c].name +
                  ":" + query::TypeName(theirs.schema[c].type) + " in theirs";
    return false;
  }
  return true;
}

// -1, 0 or 1 as value a sorts before, with or after b in an ORDER BY of its type (NULLs first).
int SortOrder(Type type, const std::string& a, bool a_null, const std::string& b, bool b_null) {
  if (a_null || b_null) return a_null == b_null ? 0 : (a_null ? -1 : 1);
  switch (type) {
    case Type::kInt:
    case Type::kMoney: {
      int64_t x = 0, y = 0;
      if (type == Type::kMoney) {
        bool parsed = ParseCents(a, &x) && ParseCents(b, &y);
        SM_ASSERT(parsed);  // FormatMoney's text
      } else {
        x = std::strtoll(a.c_str(), nullptr, 10);
        y = std::strtoll(b.c_str(), nullptr, 10);
      }
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case Type::kDouble: {
      double x = ToDouble(a), y = ToDouble(b);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    default:  // strings bytewise; dates and bools as their text sorts
      return a < b ? -1 : (a > b ? 1 : 0);
  }
}

// The first row of ours (1-based) that sorts before its predecessor, or 0.
size_t FirstUnsorted(const Side& s, const std::vector<size_t>& keys,
                     const std::vector<OrderKey>& order_by) {
  for (size_t row = 1; row < s.r.rows.size(); ++row) {
    for (size_t k = 0; k < keys.size(); ++k) {
      size_t c = keys[k];
      int order = SortOrder(s.r.schema[c].type, s.Text(row - 1, c), s.Null(row - 1, c),
                            s.Text(row, c), s.Null(row, c));
      if (order_by[k].descending) order = -order;
      if (order < 0) break;
      if (order > 0) return row + 1;
    }
  }
  return 0;
}

Status ResolveKeys(const ResultRows& rows, const std::vector<OrderKey>& order_by,
                   std::vector<size_t>* columns) {
  for (const OrderKey& key : order_by) {
    size_t found = rows.schema.size();
    for (size_t c = 0; c < rows.schema.size(); ++c) {
      if (Unqualified(rows.schema[c].name) == key.column) found = c;
    }
    if (found == rows.schema.size()) {
      return Status::InvalidArgument("the ORDER BY column " + key.column + " is not among (" +
                                     rows.schema.ToString() + ")");
    }
    columns->push_back(found);
  }
  return Status::OK();
}

}  // namespace

Status ParseChSql(std::string_view text, std::vector<ChSql>* out) {
  out->clear();
  std::set<int> seen;
  bool has_order_line = false;
  size_t line_number = 0;
  while (!text.empty()) {
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_number;
    std::string_view keys;
    if (int n = QueryMarker(line); n > 0) {
      if (!out->empty()) SM_TRY(FinishQuery(out->back(), has_order_line, &seen));
      out->push_back(ChSql{n, "", {}});
      has_order_line = false;
    } else if (!out->empty() && !has_order_line && OrderByLine(line, &keys)) {
      Status s = ParseOrderKeys(keys, &out->back().order_by);
      if (!s.ok()) {
        return Status::InvalidArgument("line " + std::to_string(line_number) + ": " +
                                       std::string(s.message()));
      }
      has_order_line = true;
    } else if (!out->empty()) {
      out->back().sql += std::string(line) + "\n";
    }
  }
  if (out->empty()) return Status::InvalidArgument("no '-- Q<n>' line in the queries");
  return FinishQuery(out->back(), has_order_line, &seen);
}

Status ReadChSqlFile(const std::string& path, std::vector<ChSql>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot read " + path, errno);
  std::stringstream text;
  text << in.rdbuf();
  Status s = ParseChSql(text.str(), out);
  if (!s.ok()) return Status::InvalidArgument(path + ": " + std::string(s.message()));
  return Status::OK();
}

bool SameRows(const std::string& label, const ResultRows& ours, const ResultRows& theirs,
              const std::vector<OrderKey>& order_by, std::string* difference) {
  SM_ASSERT(ours.rows.size() == ours.nulls.size());
  SM_ASSERT(theirs.rows.size() == theirs.nulls.size());
  difference->clear();
  if (!SameColumns(label, ours, theirs, difference)) return false;
  std::vector<size_t> keys;
  if (Status s = ResolveKeys(ours, order_by, &keys); !s.ok()) {
    *difference = label + ": " + std::string(s.message());
    return false;
  }
  Side a{ours}, b{theirs};
  if (ours.rows.size() != theirs.rows.size()) {
    *difference = label + ": " + std::to_string(ours.rows.size()) + " rows in ours, " +
                  std::to_string(theirs.rows.size()) + " in theirs" + FirstUnmatched(a, b);
    return false;
  }
  size_t n = ours.rows.size();
  if (keys.empty()) return SameMultiset(label, a, b, 0, n, false, difference);
  // Row by row the sort keys must agree; then each run of tied keys is a multiset.
  for (size_t row = 0; row < n; ++row) {
    for (size_t c : keys) {
      if (SameCell(a, row, b, row, c)) continue;
      *difference = label + ": row " + std::to_string(row + 1) + ", ORDER BY column " +
                    ours.schema[c].name + ": ours " + Cell(a, row, c) + " vs theirs " +
                    Cell(b, row, c) + "; ours " + a.Row(row) + ", theirs " + b.Row(row);
      return false;
    }
  }
  if (size_t row = FirstUnsorted(a, keys, order_by); row > 0) {
    *difference = label + ": row " + std::to_string(row) + " " + a.Row(row - 1) +
                  " sorts before row " + std::to_string(row - 1) + " " + a.Row(row - 2) +
                  " by the ORDER BY keys, in both results";
    return false;
  }
  size_t begin = 0;
  while (begin < n) {
    size_t end = begin + 1;
    auto tied = [&](size_t row) {
      return std::all_of(keys.begin(), keys.end(),
                         [&](size_t c) { return SameCell(a, begin, a, row, c); });
    };
    while (end < n && tied(end)) ++end;
    if (!SameMultiset(label, a, b, begin, end, end - begin > 1, difference)) return false;
    begin = end;
  }
  return true;
}

}  // namespace sm::bench
