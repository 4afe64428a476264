// Opening an engine by name: see engines.h. The SM_TPCC_WITH_<ENGINE> definitions come from
// tpcc/engines/CMakeLists.txt, one per library found.
#include "tpcc/engines/engines.h"

#include <utility>

#ifdef SM_TPCC_WITH_SQLITE
#include "tpcc/engines/sqlite_engine.h"
#endif
#ifdef SM_TPCC_WITH_LMDB
#include "tpcc/engines/lmdb_engine.h"
#endif
#ifdef SM_TPCC_WITH_ROCKSDB
#include "tpcc/engines/rocksdb_engine.h"
#endif
#ifdef SM_TPCC_WITH_BDB
#include "tpcc/engines/bdb_engine.h"
#endif
#ifdef SM_TPCC_WITH_WIREDTIGER
#include "tpcc/engines/wiredtiger_engine.h"
#endif

namespace sm::tpcc {

std::vector<std::string> KnownForeignEngineNames() {
  return {"sqlite", "lmdb", "rocksdb", "bdb", "wiredtiger"};
}

std::vector<std::string> ForeignEngineNames() {
  std::vector<std::string> names;
#ifdef SM_TPCC_WITH_SQLITE
  names.push_back("sqlite");
#endif
#ifdef SM_TPCC_WITH_LMDB
  names.push_back("lmdb");
#endif
#ifdef SM_TPCC_WITH_ROCKSDB
  names.push_back("rocksdb");
#endif
#ifdef SM_TPCC_WITH_BDB
  names.push_back("bdb");
#endif
#ifdef SM_TPCC_WITH_WIREDTIGER
  names.push_back("wiredtiger");
#endif
  return names;
}

Status OpenForeignEngine(const std::string& name, const ForeignEngineOptions& options,
                         std::unique_ptr<Engine>* engine) {
#ifdef SM_TPCC_WITH_SQLITE
  if (name == "sqlite") return OpenSqliteEngine(options, engine);
#endif
#ifdef SM_TPCC_WITH_LMDB
  if (name == "lmdb") return OpenLmdbEngine(options, engine);
#endif
#ifdef SM_TPCC_WITH_ROCKSDB
  if (name == "rocksdb") return OpenRocksDbEngine(options, engine);
#endif
#ifdef SM_TPCC_WITH_BDB
  if (name == "bdb") return OpenBdbEngine(options, engine);
#endif
#ifdef SM_TPCC_WITH_WIREDTIGER
  if (name == "wiredtiger") return OpenWiredTigerEngine(options, engine);
#endif
  for (const std::string& known : KnownForeignEngineNames()) {
    if (name == known) {
      return Status::NotSupported("this build has no " + name +
                                  " adapter: its library was not found when it was configured "
                                  "(tools/run installs the Debian packages; reconfigure)");
    }
  }
  return Status::InvalidArgument("no engine named '" + name + "'");
}

}  // namespace sm::tpcc
