// Terminal input of the five transactions (clause 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1).
//
// Owns: the input rules - which warehouse, district and customer, NURand for customers and
// items with the run's C constants, 1 % New-Order rollbacks through an unused item id, 1 %
// remote supply warehouses per order line, Payment 60 % by last name and 15 % for a customer
// of a remote warehouse, Order-Status 60 % by last name, the Delivery carrier, the Stock-Level
// threshold. The audit bands of clause 9.2.2.5 are checked against these generators in
// tests/tpcc/inputs_test.cc.
//
// With one warehouse there is no remote warehouse: the remote cases use the home warehouse
// (clause 2.4.1.5 and 2.5.1.2 describe remote choices "if the number of warehouses > 1").
//
// At a reduced Scale (tests) the same rules apply to the smaller id ranges; last names are
// drawn from the numbers the load used (0 .. min(999, customers - 1)).
//
// Thread/fiber safety: one generator per terminal.
#pragma once

#include <cstdint>

#include "tpcc/random.h"
#include "tpcc/schema.h"
#include "tpcc/transactions.h"

namespace sm::tpcc {

class InputGenerator {
 public:
  InputGenerator(const DatabaseInfo& info, const NuConstants& run_constants, uint64_t seed)
      : info_(info), c_(run_constants), rng_(seed) {}

  void NewOrder(uint16_t w, int64_t now_us, NewOrderInput* in);
  void Payment(uint16_t w, int64_t now_us, PaymentInput* in);
  void OrderStatus(uint16_t w, OrderStatusInput* in);
  void Delivery(uint16_t w, int64_t now_us, DeliveryInput* in);
  // d: the terminal's fixed district (clause 2.8.1.1).
  void StockLevel(uint16_t w, uint8_t d, StockLevelInput* in);

  Rng& rng() { return rng_; }
  const DatabaseInfo& info() const { return info_; }
  // The item id that no ITEM row has (the rollback's).
  uint32_t unused_item() const { return info_.scale.items + 1; }

 private:
  uint32_t CustomerId() {
    return static_cast<uint32_t>(rng_.NURand(kNuCId, 1, info_.scale.customers_per_district, c_.c_id));
  }
  uint32_t ItemId() {
    return static_cast<uint32_t>(rng_.NURand(kNuItem, 1, info_.scale.items, c_.ol_i_id));
  }
  std::string LastNameForRun();
  // A warehouse other than w, uniformly (w itself when there is only one).
  uint16_t OtherWarehouse(uint16_t w);

  DatabaseInfo info_;
  NuConstants c_;
  Rng rng_;
};

}  // namespace sm::tpcc
