// sm_admin: inspect a database directory.
//
//   sm_admin verify DIR   opens DIR (running restart recovery if the last run crashed, and
//                         saying what it did), checks every B-tree (key order, fences,
//                         parent-child agreement, page LSNs, checksums), the pages outside
//                         the trees and every record of the retained log, and prints one line
//                         per table, one for the pages and one for the log; exit status 1 on
//                         any corruption
//   sm_admin tables DIR   lists the tables
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "sm/api/api_internal.h"
#include "sm/sm.h"

namespace {

int Open(const std::string& dir, std::unique_ptr<sm::Database>* db) {
  sm::Options options;
  options.path = dir;
  options.create_if_missing = false;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.workers = 1;
  sm::OpenReport report;
  sm::Status s = sm::Database::Open(options, db, &report);
  if (!s.ok()) {
    std::fprintf(stderr, "sm_admin: cannot open %s: %s\n", dir.c_str(), s.ToString().c_str());
    return 1;
  }
  std::printf("%s\n", report.ToString().c_str());
  return 0;
}

int Verify(const std::string& dir) {
  std::unique_ptr<sm::Database> db;
  if (int rc = Open(dir, &db); rc != 0) return rc;
  std::string report;
  sm::Status s = static_cast<sm::api::DatabaseImpl*>(db.get())->VerifyWithReport(&report);
  std::printf("%s", report.c_str());
  if (!s.ok()) {
    std::printf("verify: FAILED: %s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("verify: ok\n");
  sm::Status closed = db->Close();
  if (!closed.ok()) std::fprintf(stderr, "close: %s\n", closed.ToString().c_str());
  return closed.ok() ? 0 : 1;
}

int Tables(const std::string& dir) {
  std::unique_ptr<sm::Database> db;
  if (int rc = Open(dir, &db); rc != 0) return rc;
  for (const std::string& name : db->TableNames()) std::printf("%s\n", name.c_str());
  return db->Close().ok() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sm_admin: inspect a storage manager database"};
  app.require_subcommand(1);
  std::string dir;
  CLI::App* verify = app.add_subcommand("verify", "recover if needed, check every B-tree");
  verify->add_option("dir", dir, "database directory")->required();
  CLI::App* tables = app.add_subcommand("tables", "list the tables");
  tables->add_option("dir", dir, "database directory")->required();
  CLI11_PARSE(app, argc, argv);
  if (verify->parsed()) return Verify(dir);
  return Tables(dir);
}
