// What the query benchmarks share: opening a CH database of the tpcc driver for queries, and
// the path of the running binary (to run itself as a child under callgrind).
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "query/query.h"
#include "sm/sm.h"
#include "tpcc/ch.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::bench {

// Opens the loaded CH database at `path` with a buffer pool of `pool_bytes` and registers its
// tables in *catalog. InvalidArgument if the database has no CH tables.
inline Status OpenChDatabase(const std::string& path, uint64_t pool_bytes,
                             std::unique_ptr<tpcc::SmEngine>* engine, query::Catalog* catalog) {
  tpcc::SmEngineOptions eo;
  eo.db.path = path;
  eo.db.create_if_missing = false;
  eo.db.buffer_pool_bytes = pool_bytes;
  eo.db.workers = 1;
  eo.db.commit_mode = CommitMode::kAsync;
  SM_TRY(tpcc::SmEngine::Open(eo, engine));
  tpcc::DatabaseInfo info;
  SM_TRY(tpcc::OpenLoaded(engine->get(), 0, &info));
  bool has = false;
  SM_TRY(tpcc::HasCh((*engine)->database(), &has));
  if (!has) return Status::InvalidArgument("the database in " + path + " has no CH tables");
  *catalog = query::Catalog((*engine)->database());
  return tpcc::RegisterChCatalog((*engine)->database(), info.warehouses, info.scale, catalog);
}

// This binary's path, for running itself again.
inline std::string SelfPath() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace sm::bench
