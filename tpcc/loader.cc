// The TPC-C loader: see loader.h.
#include "tpcc/loader.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "sm/common/assert.h"
#include "tpcc/keys.h"
#include "tpcc/random.h"
#include "tpcc/rows.h"

namespace sm::tpcc {

namespace {

constexpr int kItemChunks = 10;
constexpr int kStockChunks = 10;
constexpr int kMaxBatchAttempts = 50;

enum class UnitKind : uint8_t { kOrders, kCustomers, kStock, kItems, kWarehouse };

struct Unit {
  UnitKind kind;
  uint16_t w = 0;
  uint8_t d = 0;
  uint32_t lo = 0, hi = 0;  // item id range [lo, hi] for kItems and kStock
  uint64_t stream = 0;      // the unit's random stream
};

// State shared by the loading fibers and the waiting thread.
struct Shared {
  Engine* engine;
  const LoadOptions* options;
  int64_t now_us;
  NuConstants constants;
  std::vector<Unit> units;
  std::atomic<size_t> next_unit{0};           // relaxed: only hands out indexes
  std::atomic<uint64_t> rows{0};              // relaxed: progress only
  std::atomic<uint64_t> retried_batches{0};   // relaxed: statistics
  std::atomic<bool> failed{false};            // relaxed: a hint to stop early

  std::mutex mu;  // never held across a suspension
  std::condition_variable cv;
  unsigned fibers_done = 0;  // GUARDED_BY(mu)
  Status error;              // GUARDED_BY(mu)

  void Fail(Status s) {
    std::lock_guard<std::mutex> guard(mu);
    if (error.ok()) error = std::move(s);
    s.PermitUnchecked();  // the first error is the load's; the others follow from it
    failed.store(true, std::memory_order_relaxed);
  }
};

// Collects rows and writes them in transactions of about rows_per_txn rows.
class BatchWriter {
 public:
  BatchWriter(Shared* shared, EngineTxn* txn) : shared_(shared), txn_(txn) {}

  Status Add(TableId table, std::string key, std::string value) {
    rows_.push_back(Row{table, std::move(key), std::move(value)});
    if (rows_.size() >= shared_->options->rows_per_txn) return Flush();
    return Status::OK();
  }

  Status Flush() {
    if (rows_.empty()) return Status::OK();
    for (int attempt = 1;; ++attempt) {
      Status s = WriteOnce();
      if (s.ok()) break;
      if (txn_->active()) txn_->Abort().PermitUnchecked();
      if (!s.IsRetryable() || attempt == kMaxBatchAttempts) return s;
      shared_->retried_batches.fetch_add(1, std::memory_order_relaxed);
    }
    shared_->rows.fetch_add(rows_.size(), std::memory_order_relaxed);
    rows_.clear();
    return Status::OK();
  }

 private:
  struct Row {
    TableId table;
    std::string key, value;
  };

  Status WriteOnce() {
    SM_TRY(txn_->Begin(TxnIsolation::kSerializable));
    for (const Row& row : rows_) SM_TRY(txn_->Insert(row.table, row.key, row.value));
    return txn_->Commit(CommitKind::kBulk);
  }

  Shared* const shared_;
  EngineTxn* const txn_;
  std::vector<Row> rows_;
};

// Street, city, state and zip of clause 4.3.3.1 (the same rule for all three tables).
template <typename Row>
void SetAddress(Rng& rng, Row* row) {
  Set(row->street_1, AString(rng, 10, 20));
  Set(row->street_2, AString(rng, 10, 20));
  Set(row->city, AString(rng, 10, 20));
  Set(row->state, AString(rng, 2, 2));
  Set(row->zip, Zip(rng));
}

Status LoadItems(const Unit& u, Rng& rng, BatchWriter& out) {
  for (uint32_t i = u.lo; i <= u.hi; ++i) {
    ItemRow item{};
    item.im_id = static_cast<uint32_t>(rng.Uniform(1, 10000));
    Set(item.name, AString(rng, 14, 24));
    item.price_cents = static_cast<int32_t>(rng.Uniform(100, 10000));
    Set(item.data, DataWithOriginal(rng));
    SM_TRY(out.Add(TableId::kItem, ItemKey(i), EncodeRow(item)));
  }
  return Status::OK();
}

Status LoadWarehouse(const Shared& sh, const Unit& u, Rng& rng, BatchWriter& out) {
  WarehouseRow w{};
  Set(w.name, AString(rng, 6, 10));
  SetAddress(rng, &w);
  w.tax = static_cast<int32_t>(rng.Uniform(0, 2000));
  // 300,000.00 and 30,000.00 at the standard scale: the HISTORY rows' 10.00 per customer, so
  // that conditions 8 and 9 also hold at a reduced test scale.
  const int64_t district_ytd_cents = 1000 * int64_t(sh.options->scale.customers_per_district);
  w.ytd_cents = district_ytd_cents * kDistrictsPerWarehouse;
  SM_TRY(out.Add(TableId::kWarehouse, WarehouseKey(u.w), EncodeRow(w)));
  for (uint8_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
    DistrictRow row{};
    Set(row.name, AString(rng, 6, 10));
    SetAddress(rng, &row);
    row.tax = static_cast<int32_t>(rng.Uniform(0, 2000));
    row.ytd_cents = district_ytd_cents;
    row.next_o_id = sh.options->scale.customers_per_district + 1;  // 3001
    SM_TRY(out.Add(TableId::kDistrict, DistrictKey(u.w, d), EncodeRow(row)));
  }
  return Status::OK();
}

Status LoadStock(const Unit& u, Rng& rng, BatchWriter& out) {
  for (uint32_t i = u.lo; i <= u.hi; ++i) {
    StockRow s{};
    s.quantity = static_cast<int32_t>(rng.Uniform(10, 100));
    for (auto& dist : s.dist) Set(dist, AString(rng, 24, 24));
    Set(s.data, DataWithOriginal(rng));
    SM_TRY(out.Add(TableId::kStock, StockKey(u.w, i), EncodeRow(s)));
  }
  return Status::OK();
}

Status LoadCustomers(const Shared& sh, const Unit& u, Rng& rng, BatchWriter& out) {
  const Scale& scale = sh.options->scale;
  const uint32_t name_max = std::min<uint32_t>(999, scale.customers_per_district - 1);
  for (uint32_t c = 1; c <= scale.customers_per_district; ++c) {
    CustomerRow row{};
    // The first 1,000 customers cover every name once; the rest are NURand (clause 4.3.3.1).
    uint32_t name = c <= name_max + 1
                        ? c - 1
                        : static_cast<uint32_t>(rng.NURand(kNuLast, 0, name_max, sh.constants.c_last));
    std::string last = LastName(name);
    std::string first = AString(rng, 8, 16);
    Set(row.last, last);
    Set(row.middle, "OE");
    Set(row.first, first);
    SetAddress(rng, &row);
    Set(row.phone, NString(rng, 16, 16));
    row.since_us = sh.now_us;
    Set(row.credit, rng.Uniform(1, 100) <= 10 ? "BC" : "GC");
    row.credit_lim_cents = 5000000;  // 50,000.00
    row.discount = static_cast<int32_t>(rng.Uniform(0, 5000));
    row.balance_cents = -1000;     // -10.00
    row.ytd_payment_cents = 1000;  // 10.00
    row.payment_cnt = 1;
    row.delivery_cnt = 0;
    Set(row.data, AString(rng, 300, 500));
    SM_TRY(out.Add(TableId::kCustomer, CustomerKey(u.w, u.d, c), EncodeRow(row)));
    SM_TRY(out.Add(TableId::kCustomerByName, CustomerNameKey(u.w, u.d, last, first, c), {}));

    HistoryRow h{};
    h.c_id = c;
    h.c_d_id = u.d;
    h.c_w_id = u.w;
    h.d_id = u.d;
    h.w_id = u.w;
    h.date_us = sh.now_us;
    h.amount_cents = 1000;  // 10.00
    Set(h.data, AString(rng, 12, 24));
    SM_TRY(out.Add(TableId::kHistory, HistoryKey(u.w, u.d, sh.now_us, c), EncodeRow(h)));
  }
  return Status::OK();
}

Status LoadOrders(const Shared& sh, const Unit& u, Rng& rng, BatchWriter& out) {
  const Scale& scale = sh.options->scale;
  const uint32_t n = scale.customers_per_district;
  std::vector<uint32_t> customer(n);
  std::iota(customer.begin(), customer.end(), 1u);
  for (uint32_t i = n - 1; i > 0; --i) {  // Fisher-Yates: a random permutation
    std::swap(customer[i], customer[static_cast<uint32_t>(rng.Uniform(0, i))]);
  }
  for (uint32_t o = 1; o <= n; ++o) {
    const bool delivered = o < scale.first_new_order();
    OrderRow order{};
    order.c_id = customer[o - 1];
    order.entry_d_us = sh.now_us;
    order.carrier_id = delivered ? static_cast<uint8_t>(rng.Uniform(1, 10)) : 0;
    order.ol_cnt = static_cast<uint8_t>(rng.Uniform(5, 15));
    order.all_local = 1;
    SM_TRY(out.Add(TableId::kOrder, OrderKey(u.w, u.d, o), EncodeRow(order)));
    SM_TRY(out.Add(TableId::kOrderByCustomer, OrderByCustomerKey(u.w, u.d, order.c_id, o), {}));
    for (uint8_t number = 1; number <= order.ol_cnt; ++number) {
      OrderLineRow line{};
      line.i_id = static_cast<uint32_t>(rng.Uniform(1, scale.items));
      line.supply_w_id = u.w;
      line.delivery_d_us = delivered ? order.entry_d_us : 0;
      line.quantity = 5;
      line.amount_cents = delivered ? 0 : rng.Uniform(1, 999999);
      Set(line.dist_info, AString(rng, 24, 24));
      SM_TRY(out.Add(TableId::kOrderLine, OrderLineKey(u.w, u.d, o, number), EncodeRow(line)));
    }
    if (!delivered) SM_TRY(out.Add(TableId::kNewOrder, NewOrderKey(u.w, u.d, o), {}));
  }
  return Status::OK();
}

Status RunUnit(Shared& sh, const Unit& u, BatchWriter& out) {
  Rng rng(DeriveSeed(sh.options->seed, u.stream));
  switch (u.kind) {
    case UnitKind::kItems:
      return LoadItems(u, rng, out);
    case UnitKind::kWarehouse:
      return LoadWarehouse(sh, u, rng, out);
    case UnitKind::kStock:
      return LoadStock(u, rng, out);
    case UnitKind::kCustomers:
      return LoadCustomers(sh, u, rng, out);
    case UnitKind::kOrders:
      return LoadOrders(sh, u, rng, out);
  }
  return Status::InvalidArgument("unknown load unit");
}

void LoadFiber(Shared* sh) {
  std::unique_ptr<EngineTxn> txn = sh->engine->NewTxn();
  BatchWriter out(sh, txn.get());
  while (!sh->failed.load(std::memory_order_relaxed)) {
    size_t index = sh->next_unit.fetch_add(1, std::memory_order_relaxed);
    if (index >= sh->units.size()) break;
    Status s = RunUnit(*sh, sh->units[index], out);
    if (s.ok()) s = out.Flush();
    if (!s.ok()) {
      sh->Fail(std::move(s));
      break;
    }
  }
  txn.reset();
  std::lock_guard<std::mutex> guard(sh->mu);
  ++sh->fibers_done;
  sh->cv.notify_all();
}

std::vector<Unit> MakeUnits(uint32_t warehouses, const Scale& scale) {
  SM_ASSERT(warehouses >= 1);
  SM_ASSERT(warehouses <= kMaxWarehouses);
  std::vector<Unit> units;
  uint64_t stream = 0;
  auto chunks = [&](UnitKind kind, uint16_t w, int count) {
    for (int k = 0; k < count; ++k) {
      Unit u{kind, w};
      u.lo = static_cast<uint32_t>(uint64_t(scale.items) * k / count) + 1;
      u.hi = static_cast<uint32_t>(uint64_t(scale.items) * (k + 1) / count);
      u.stream = ++stream;
      if (u.lo <= u.hi) units.push_back(u);
    }
  };
  // The loops count in 32 bits: a 16-bit id would wrap at kMaxWarehouses and never end.
  auto each_district = [&](UnitKind kind) {
    for (uint32_t w = 1; w <= warehouses; ++w) {
      for (uint8_t d = 1; d <= kDistrictsPerWarehouse; ++d) {
        units.push_back(Unit{kind, static_cast<uint16_t>(w), d, 0, 0, ++stream});
      }
    }
  };
  // Largest first, so that the last units to finish are short.
  each_district(UnitKind::kOrders);
  for (uint32_t w = 1; w <= warehouses; ++w) {
    chunks(UnitKind::kStock, static_cast<uint16_t>(w), kStockChunks);
  }
  chunks(UnitKind::kItems, 0, kItemChunks);
  each_district(UnitKind::kCustomers);
  for (uint32_t w = 1; w <= warehouses; ++w) {
    units.push_back(Unit{UnitKind::kWarehouse, static_cast<uint16_t>(w), 0, 0, 0, ++stream});
  }
  SM_ASSERT(units.back().kind == UnitKind::kWarehouse);
  SM_ASSERT(units.back().w == warehouses);
  return units;
}

// Refuses anything but an empty database.
Status CheckEmpty(Engine* engine) {
  DatabaseInfo info;
  Status s = ReadDatabaseInfo(engine, &info);
  if (s.ok()) {
    return Status::InvalidArgument("the database already holds a load of " +
                                   std::to_string(info.warehouses) + " warehouses");
  }
  if (!s.IsNotFound()) return s;
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kReadCommitted));
  bool any = false;
  for (int t = 0; t < kTableCount && !any; ++t) {
    if (!InSchema(static_cast<TableId>(t), Schema::kTpcc)) continue;
    SM_TRY(txn->Scan(static_cast<TableId>(t), {}, {}, false, [&](std::string_view, std::string_view) {
      any = true;
      return false;
    }));
  }
  SM_TRY(txn->Commit());
  if (any) {
    return Status::InvalidArgument(
        "the database holds part of a load that did not finish: remove it and load again");
  }
  return Status::OK();
}

// The load is complete: the meta row, committed durably (which makes every batch before it
// durable too), then a checkpoint so that a restart has nothing to redo.
Status Finish(Engine* engine, const LoadOptions& options, const Shared& sh, double seconds,
              LoadResult* result) {
  DatabaseInfo info;
  info.warehouses = options.warehouses;
  info.scale = options.scale;
  info.load_constants = sh.constants;
  info.load_seed = options.seed;
  info.loaded_at_us = sh.now_us;
  std::unique_ptr<EngineTxn> txn = engine->NewTxn();
  SM_TRY(txn->Begin(TxnIsolation::kSerializable));
  Status s = txn->Insert(TableId::kMeta, kMetaKey, EncodeRow(info.ToMeta()));
  if (!s.ok()) {
    txn->Abort().PermitUnchecked();
    return s;
  }
  SM_TRY(txn->Commit(CommitKind::kDurable));
  SM_TRY(engine->Checkpoint());
  result->info = info;
  result->rows = sh.rows.load(std::memory_order_relaxed);
  result->retried_batches = sh.retried_batches.load(std::memory_order_relaxed);
  result->seconds = seconds;
  return Status::OK();
}

}  // namespace

uint64_t ExpectedRows(uint32_t warehouses, const Scale& scale) {
  uint64_t per_district = uint64_t(scale.customers_per_district) * (3 + 2 + 10) +
                          scale.new_orders_per_district();
  return scale.items +
         warehouses * (1 + kDistrictsPerWarehouse + uint64_t(scale.items) +
                       kDistrictsPerWarehouse * per_district);
}

size_t LoadUnitCount(uint32_t warehouses, const Scale& scale) {
  return MakeUnits(warehouses, scale).size();
}

uint64_t ExpectedLoadBytes(uint32_t warehouses, const Scale& scale) {
  const uint64_t rows = ExpectedRows(warehouses, scale);
  return rows * kDataBytesPerRow + std::min(rows * kLogBytesPerRow, kLogBytesMax);
}

Status Load(Engine* engine, const LoadOptions& options, LoadResult* result) {
  if (options.warehouses == 0 || options.warehouses > kMaxWarehouses) {
    return Status::InvalidArgument("the warehouse count must be in 1.." +
                                   std::to_string(kMaxWarehouses));
  }
  if (options.scale.items < 1 || options.scale.customers_per_district < 10) {
    return Status::InvalidArgument("the scale needs at least 1 item and 10 customers per district");
  }
  bool created = false;
  SM_TRY(engine->OpenSchema(Schema::kTpcc, /*create=*/true, &created));
  SM_TRY(CheckEmpty(engine));

  const auto start = std::chrono::steady_clock::now();
  Shared sh;
  sh.engine = engine;
  sh.options = &options;
  sh.now_us = NowMicros();
  Rng rng(DeriveSeed(options.seed, 0));
  sh.constants = NuConstants::ForLoad(rng);
  sh.units = MakeUnits(options.warehouses, options.scale);

  const unsigned fibers = engine->workers() * std::max(1u, options.fibers_per_worker);
  for (unsigned f = 0; f < fibers; ++f) {
    Status spawned =
        engine->Spawn([&sh] { LoadFiber(&sh); }, static_cast<int>(f % engine->workers()));
    if (!spawned.ok()) {  // a fiber that never runs is done at once (and stops the others)
      sh.Fail(std::move(spawned));
      std::lock_guard<std::mutex> guard(sh.mu);
      ++sh.fibers_done;
    }
  }
  const uint64_t total = ExpectedRows(options.warehouses, options.scale);
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  {
    std::unique_lock<std::mutex> lock(sh.mu);
    auto next_report = std::chrono::steady_clock::now() + options.progress_interval;
    while (sh.fibers_done < fibers) {
      // Woken early by every fiber that finishes; reports only at the interval.
      sh.cv.wait_until(lock, next_report);
      if (std::chrono::steady_clock::now() < next_report) continue;
      next_report += options.progress_interval;
      if (options.progress && sh.fibers_done < fibers) {
        LoadProgress p{sh.rows.load(std::memory_order_relaxed), total, seconds()};
        lock.unlock();
        options.progress(p);
        lock.lock();
      }
    }
  }
  if (!sh.error.ok()) return sh.error;
  return Finish(engine, options, sh, seconds(), result);
}

}  // namespace sm::tpcc
