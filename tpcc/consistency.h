// The consistency conditions of clause 3.3.2 (twelve of them), checked over the engine adapter.
//
// Owns: the conditions' definitions and verdicts. The text of each is ConditionText(n).
//
//   1  W_YTD = sum(D_YTD) of its districts
//   2  D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID) of the district
//   3  max(NO_O_ID) - min(NO_O_ID) + 1 = number of NEW-ORDER rows of the district
//   4  sum(O_OL_CNT) = number of ORDER-LINE rows of the district
//   5  O_CARRIER_ID is NULL iff the order has a NEW-ORDER row
//   6  O_OL_CNT = number of the order's ORDER-LINE rows
//   7  OL_DELIVERY_D is NULL iff the order's O_CARRIER_ID is NULL
//   8  W_YTD = sum(H_AMOUNT) of the payments to the warehouse
//   9  D_YTD = sum(H_AMOUNT) of the payments to the district
//   10 C_BALANCE = sum(OL_AMOUNT of delivered lines) - sum(H_AMOUNT) of the customer
//   11 count(ORDER) - count(NEW-ORDER) = 2,100 per district (scaled: customers - 30 %);
//      only right after the load: every Delivery changes it
//   12 C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT of delivered lines) of the customer
//
// Where a district has no NEW-ORDER row (all delivered), the NEW-ORDER parts of 2 and 3 hold
// vacuously. The spec requires 1-4 to be demonstrated before and after a run; `tpcc run` does
// that, `tpcc check` runs all twelve (11 only when asked, i.e. right after a load).
//
// How: one read-committed transaction scans the tables the asked conditions need once each,
// in key order, and aggregates per district, order and customer. Run it while no terminal
// is running (read committed does not give a consistent snapshot under concurrent change).
//
// Thread/fiber safety: call from one thread or fiber; the engine is shared.
#pragma once

#include <string>
#include <vector>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/schema.h"

namespace sm::tpcc {

inline constexpr int kConditionCount = 12;
const char* ConditionText(int condition);

struct ConditionResult {
  int condition = 0;
  bool passed = false;
  uint64_t checked = 0;     // rows or groups checked
  uint64_t violations = 0;  // how many failed
  std::string detail;       // the first few violations
};

// Checks `conditions` (numbers 1..12, in the order given). A failed condition is a result,
// not an error; the Status says whether the checks could run at all.
[[nodiscard]] Status CheckConsistency(Engine* engine, const DatabaseInfo& info,
                                      const std::vector<int>& conditions,
                                      std::vector<ConditionResult>* results);

inline bool AllPassed(const std::vector<ConditionResult>& results) {
  for (const ConditionResult& r : results) {
    if (!r.passed) return false;
  }
  return true;
}

}  // namespace sm::tpcc
