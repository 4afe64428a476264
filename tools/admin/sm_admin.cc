// sm_admin: inspect a database directory.
//
//   sm_admin verify DIR   opens DIR read-only (nothing in it is written: sm::Options::read_only),
//                         checks every B-tree (key order, fences, parent-child agreement, page
//                         LSNs, checksums), the pages outside the trees and every record of
//                         the retained log, and prints one line per table, one for the pages
//                         and one for the log; exit status 1 on any corruption, and if the last
//                         run did not close DIR cleanly (it needs recovery, which writes)
//   sm_admin verify --recover DIR   opens DIR read-write instead, running restart recovery if
//                         the last run crashed (and saying what it did), then verifies
//   sm_admin tables DIR   lists the tables (read-only)
//   sm_admin log DIR      reads the retained log without opening the database (no recovery,
//                         nothing written) and prints, per record type and sub-type, how many
//                         records there are and how many bytes they take: what fills the log
//   sm_admin dump DIR FILE   writes every table and index of DIR to FILE, a portable file that
//                         does not depend on the on-disk format (tools/admin/dump.h); DIR is
//                         opened read-only
//   sm_admin load FILE DIR   creates a new database in DIR from a dump: with dump, the way to
//                         move a database to a build with another on-disk format version
//
// Exit status, as the tpcc driver's: 0 success; 1 the work failed (the database cannot be
// opened or read, or it is corrupt); 2 bad usage (an unknown verb, a missing directory
// argument), nothing done.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "index/btree_wal.h"
#include "log/log_contents.h"
#include "sm/api/api_internal.h"
#include "sm/io/file.h"
#include "sm/sm.h"
#include "sm/txn/page_frees.h"
#include "sm/txn/page_images.h"
#include "sm/txn/record_handlers.h"
#include "tools/admin/dump.h"

namespace {

constexpr int kExitUsage = 2;

// Opens DIR, read-only unless `recover`; 0, or 1 having said why not.
int Open(const std::string& dir, bool recover, std::unique_ptr<sm::Database>* db) {
  sm::Options options;
  options.path = dir;
  options.create_if_missing = false;
  options.read_only = !recover;
  options.checkpoint_interval = std::chrono::milliseconds(0);
  options.workers = 1;
  sm::OpenReport report;
  sm::Status s = sm::Database::Open(options, db, &report);
  if (!s.ok()) {
    std::fprintf(stderr, "sm_admin: cannot open %s: %s\n", dir.c_str(), s.ToString().c_str());
    if (report.needs_recovery) {
      std::fprintf(stderr,
                   "sm_admin: `sm_admin verify --recover %s` recovers it (opening it "
                   "read-write), then verifies it\n",
                   dir.c_str());
    }
    return 1;
  }
  std::printf("%s\n", report.ToString().c_str());
  return 0;
}

int Verify(const std::string& dir, bool recover) {
  std::unique_ptr<sm::Database> db;
  if (int rc = Open(dir, recover, &db); rc != 0) return rc;
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
  if (int rc = Open(dir, /*recover=*/false, &db); rc != 0) return rc;
  for (const std::string& name : db->TableNames()) std::printf("%s\n", name.c_str());
  return db->Close().ok() ? 0 : 1;
}

int Dump(const std::string& dir, const std::string& file) {
  std::unique_ptr<sm::Database> db;
  if (int rc = Open(dir, /*recover=*/false, &db); rc != 0) return rc;
  uint64_t tables = 0, rows = 0;
  sm::Status s = sm::admin::DumpDatabase(db.get(), file, &tables, &rows);
  if (!s.ok()) {
    std::fprintf(stderr, "sm_admin: dump of %s failed: %s\n", dir.c_str(), s.ToString().c_str());
    return 1;
  }
  std::printf("dumped %llu tables, %llu rows to %s\n", static_cast<unsigned long long>(tables),
              static_cast<unsigned long long>(rows), file.c_str());
  return db->Close().ok() ? 0 : 1;
}

int Load(const std::string& file, const std::string& dir) {
  uint64_t tables = 0, rows = 0;
  sm::Status s = sm::admin::LoadDatabase(file, dir, &tables, &rows);
  if (!s.ok()) {
    std::fprintf(stderr, "sm_admin: load of %s into %s failed: %s\n", file.c_str(), dir.c_str(),
                 s.ToString().c_str());
    return 1;
  }
  std::printf("loaded %llu tables, %llu rows into %s\n", static_cast<unsigned long long>(tables),
              static_cast<unsigned long long>(rows), dir.c_str());
  return 0;
}

// The name of a record's (type, sub-type): the registered handler's for page records.
std::string RecordName(sm::log::RecordType type, uint8_t subtype) {
  std::string name = sm::log::RecordTypeName(type);
  switch (sm::log::KindOf(type)) {
    case sm::log::RecordKind::kRedoOnly:
    case sm::log::RecordKind::kUndoRedo:
    case sm::log::RecordKind::kCompensation:
      return name + " " + sm::txn::RecordHandlerName(type, subtype) + " (" +
             std::to_string(subtype) + ")";
    default:
      return name;
  }
}

int LogStats(const std::string& dir) {
  // The sub-types' names, as an open database registers them.
  sm::txn::RegisterPageImageHandler();
  sm::txn::RegisterPageFreeHandler();
  sm::index::BtreeWal::RegisterHandlers();
  sm::log::LogContents contents;
  sm::Status s = sm::log::SummarizeLog(sm::io::FileSystem::Default(), dir + "/log", &contents);
  if (!s.ok()) {
    std::fprintf(stderr, "sm_admin: cannot read the log of %s: %s\n", dir.c_str(),
                 s.ToString().c_str());
    return 1;
  }
  std::vector<std::pair<std::string, sm::log::LogContents::Tally>> rows;
  for (const auto& [type, tally] : contents.by_type) {
    rows.emplace_back(RecordName(type.first, type.second), tally);
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.bytes > b.second.bytes; });
  const auto& total = contents.total;
  std::printf("log of %s: %llu records, %.1f MiB, LSN %llu to %llu\n", dir.c_str(),
              static_cast<unsigned long long>(total.records), total.bytes / 1048576.0,
              static_cast<unsigned long long>(contents.start.value()),
              static_cast<unsigned long long>(contents.end.value()));
  std::printf("%12s %14s %6s %10s  %s\n", "records", "bytes", "bytes%", "bytes/rec", "type");
  for (const auto& [name, t] : rows) {
    std::printf("%12llu %14llu %6.1f %10.1f  %s\n", static_cast<unsigned long long>(t.records),
                static_cast<unsigned long long>(t.bytes), 100.0 * t.bytes / total.bytes,
                static_cast<double>(t.bytes) / t.records, name.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sm_admin: inspect a storage manager database"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("sm_admin ") + sm::Version());
  std::string dir;
  CLI::App* verify =
      app.add_subcommand("verify", "check every B-tree, page and log record (read-only)");
  verify->add_option("dir", dir, "database directory")->required();
  bool recover = false;
  verify->add_flag("--recover", recover,
                   "open read-write, running restart recovery if the last run crashed");
  CLI::App* tables = app.add_subcommand("tables", "list the tables");
  tables->add_option("dir", dir, "database directory")->required();
  CLI::App* log = app.add_subcommand(
      "log", "records and bytes of the retained log by record type (read-only, no recovery)");
  log->add_option("dir", dir, "database directory")->required();
  std::string file;
  CLI::App* dump = app.add_subcommand("dump", "write every table and index to a portable file");
  dump->add_option("dir", dir, "database directory")->required();
  dump->add_option("file", file, "the dump to write")->required();
  CLI::App* load = app.add_subcommand("load", "create a new database from a dump");
  load->add_option("file", file, "the dump to read")->required();
  load->add_option("dir", dir, "database directory to create")->required();
  if (argc >= 2 && argv[1][0] != '-') {  // a verb: named if unknown, not an "extra argument"
    const auto verbs = app.get_subcommands({});
    if (std::none_of(verbs.begin(), verbs.end(), [&](auto* v) { return v->get_name() == argv[1]; })) {
      std::fprintf(stderr, "sm_admin: unknown verb '%s'; the verbs are verify, tables, log, dump, load\n",
                   argv[1]);
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (verify->parsed()) return Verify(dir, recover);
  if (log->parsed()) return LogStats(dir);
  if (dump->parsed()) return Dump(dir, file);
  if (load->parsed()) return Load(file, dir);
  return Tables(dir);
}
