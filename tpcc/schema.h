// What a loaded TPC-C database is: its table names, and the description of its load that the
// run and the checks need (DatabaseInfo, stored as the meta row of tpcc/rows.h).
//
// Thread/fiber safety: values and functions of an Engine (which is thread-safe).
#pragma once

#include <cstdint>

#include "sm/common/status.h"
#include "tpcc/engine.h"
#include "tpcc/random.h"
#include "tpcc/rows.h"

namespace sm::tpcc {

struct DatabaseInfo {
  uint32_t warehouses = 0;
  Scale scale;
  NuConstants load_constants;
  uint64_t load_seed = 0;
  int64_t loaded_at_us = 0;
  uint32_t runs = 0;  // runs started since the load

  // Condition 11 of clause 3.3.2 holds only until the first transaction runs.
  bool fresh() const { return runs == 0; }

  MetaRow ToMeta() const;
  static DatabaseInfo FromMeta(const MetaRow& meta);
};

// Reads the meta row. NotFound: the database holds no completed load.
[[nodiscard]] Status ReadDatabaseInfo(Engine* engine, DatabaseInfo* info);

// For `run` and `check`: the database must hold a completed load of `warehouses` warehouses
// (0: any); the error says what to do otherwise.
[[nodiscard]] Status OpenLoaded(Engine* engine, uint32_t warehouses, DatabaseInfo* info);

// Counts a run in the meta row (durably) before it starts; updates info->runs.
[[nodiscard]] Status RecordRunStart(Engine* engine, DatabaseInfo* info);

// The current time in microseconds since the Unix epoch (dates of rows).
int64_t NowMicros();

}  // namespace sm::tpcc
