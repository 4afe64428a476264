// What the query benchmarks share: preparing and opening a CH database of the tpcc driver for
// queries, and the path of the running binary (to run itself as a child under callgrind).
//
// The data directory holds `sm/` (our database: `tpcc load --ch`, then --tpcc-seconds of the
// mix, since freshly loaded data makes several queries trivial), `csv/` (its export) and
// `prepared.json`, a manifest of the parameters it was made with; a benchmark reuses the
// directory while they match.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "query/query.h"
#include "sm/sm.h"
#include "tools/icache/callgrind_parts.h"
#include "tpcc/ch.h"
#include "tpcc/schema.h"
#include "tpcc/sm_engine.h"

namespace sm::bench {

struct ChData {
  std::string dir;
  std::string tpcc = "tpcc";  // the driver binary that loads, runs and exports
  uint32_t warehouses = 10;
  double tpcc_seconds = 60;
  uint64_t pool_mib = 4096;
  bool fresh = false;  // make it anew even if the manifest matches
  std::string Db() const { return dir + "/sm"; }
  std::string Csv() const { return dir + "/csv"; }
  std::string Manifest() const { return dir + "/prepared.json"; }
};

inline nlohmann::json ReadChManifest(const ChData& d) {
  std::ifstream in(d.Manifest());
  if (!in) return nlohmann::json::object();
  nlohmann::json m = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  return m.is_object() ? m : nlohmann::json::object();
}

inline void WriteChManifest(const ChData& d, const nlohmann::json& m) {
  std::ofstream(d.Manifest()) << m.dump(2) << "\n";
}

inline bool EchoShell(const std::string& command) {
  std::printf("$ %s\n", command.c_str());
  std::fflush(stdout);
  return std::system(command.c_str()) == 0;
}

// Loads, runs and exports the database unless *manifest (read from the directory) says it is
// there with these parameters; on a rebuild *manifest is replaced, so that what was derived from
// the old data (SQLite's copy) is known to be gone.
inline bool PrepareChData(const ChData& d, nlohmann::json* manifest) {
  bool same = manifest->value("warehouses", 0u) == d.warehouses &&
              manifest->value("tpcc_seconds", -1.0) == d.tpcc_seconds &&
              manifest->value("exported", false);
  if (same && !d.fresh) {
    std::printf("reusing the CH database in %s (%u warehouses, %.0f s of the mix)\n", d.dir.c_str(),
                d.warehouses, d.tpcc_seconds);
    return true;
  }
  std::error_code ignored;
  std::filesystem::remove_all(d.dir, ignored);
  std::filesystem::create_directories(d.dir);
  *manifest = nlohmann::json::object();
  const std::string tpcc = icache::ShellQuote(d.tpcc);
  const std::string db = " --db " + icache::ShellQuote(d.Db());
  const std::string pool = " --buffer-pool " + std::to_string(d.pool_mib) + "M";
  const std::string common =
      db + " --warehouses " + std::to_string(d.warehouses) + pool + " --commit async";
  if (!EchoShell(tpcc + " load --ch" + common)) return false;
  if (d.tpcc_seconds > 0 &&
      !EchoShell(tpcc + " run" + common + " --duration " + std::to_string(d.tpcc_seconds))) {
    return false;
  }
  if (!EchoShell(tpcc + " export" + db + pool + " " + icache::ShellQuote(d.Csv()))) return false;
  *manifest = {{"warehouses", d.warehouses}, {"tpcc_seconds", d.tpcc_seconds}, {"exported", true}};
  WriteChManifest(d, *manifest);
  return true;
}

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
