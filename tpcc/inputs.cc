// Terminal input of the five transactions: see inputs.h.
#include "tpcc/inputs.h"

#include <algorithm>

namespace sm::tpcc {

std::string InputGenerator::LastNameForRun() {
  const int64_t name_max = std::min<int64_t>(999, info_.scale.customers_per_district - 1);
  return LastName(static_cast<uint32_t>(rng_.NURand(kNuLast, 0, name_max, c_.c_last)));
}

uint16_t InputGenerator::OtherWarehouse(uint16_t w) {
  if (info_.warehouses <= 1) return w;
  // Uniform over the W - 1 others: draw from 1..W-1 and skip w.
  auto other = static_cast<uint16_t>(rng_.Uniform(1, info_.warehouses - 1));
  return other >= w ? static_cast<uint16_t>(other + 1) : other;
}

void InputGenerator::NewOrder(uint16_t w, int64_t now_us, NewOrderInput* in) {
  in->w = w;
  in->d = static_cast<uint8_t>(rng_.Uniform(1, kDistrictsPerWarehouse));
  in->c = CustomerId();
  in->ol_cnt = static_cast<uint8_t>(rng_.Uniform(5, 15));
  const bool rollback = rng_.Uniform(1, 100) == 1;
  for (int i = 0; i < in->ol_cnt; ++i) {
    NewOrderInput::Line& line = in->lines[i];
    line.i_id = rollback && i == in->ol_cnt - 1 ? unused_item() : ItemId();
    line.supply_w_id = rng_.Uniform(1, 100) == 1 ? OtherWarehouse(w) : w;
    line.quantity = static_cast<uint8_t>(rng_.Uniform(1, 10));
  }
  in->entry_d_us = now_us;
}

void InputGenerator::Payment(uint16_t w, int64_t now_us, PaymentInput* in) {
  in->w = w;
  in->d = static_cast<uint8_t>(rng_.Uniform(1, kDistrictsPerWarehouse));
  if (rng_.Uniform(1, 100) <= 85) {  // the home warehouse's district
    in->c_w = w;
    in->c_d = in->d;
  } else {  // a customer of a remote warehouse
    in->c_w = OtherWarehouse(w);
    in->c_d = static_cast<uint8_t>(rng_.Uniform(1, kDistrictsPerWarehouse));
  }
  in->by_name = rng_.Uniform(1, 100) <= 60;
  if (in->by_name) {
    in->c = 0;
    in->c_last = LastNameForRun();
  } else {
    in->c = CustomerId();
    in->c_last.clear();
  }
  in->amount_cents = rng_.Uniform(100, 500000);  // 1.00 .. 5,000.00
  in->date_us = now_us;
}

void InputGenerator::OrderStatus(uint16_t w, OrderStatusInput* in) {
  in->w = w;
  in->d = static_cast<uint8_t>(rng_.Uniform(1, kDistrictsPerWarehouse));
  in->by_name = rng_.Uniform(1, 100) <= 60;
  if (in->by_name) {
    in->c = 0;
    in->c_last = LastNameForRun();
  } else {
    in->c = CustomerId();
    in->c_last.clear();
  }
}

void InputGenerator::Delivery(uint16_t w, int64_t now_us, DeliveryInput* in) {
  in->w = w;
  in->carrier_id = static_cast<uint8_t>(rng_.Uniform(1, 10));
  in->date_us = now_us;
}

void InputGenerator::StockLevel(uint16_t w, uint8_t d, StockLevelInput* in) {
  in->w = w;
  in->d = d;
  in->threshold = static_cast<int32_t>(rng_.Uniform(10, 20));
}

}  // namespace sm::tpcc
