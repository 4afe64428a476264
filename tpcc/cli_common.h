// What the `tpcc` driver's subcommands share: exit codes and the revision their JSON reports.
// (Only the driver binary includes this; the sm_tpcc library knows nothing of it.)
#pragma once

namespace sm::tpcc {

inline constexpr int kExitFailed = 1;  // the work ran and failed (or a check failed)
inline constexpr int kExitUsage = 2;   // bad options; nothing was done
// The source revision the binary was built from ("unknown" outside git): git_revision.cc,
// which includes the header cmake/git_revision.cmake writes at every build.
const char* GitRevision();

}  // namespace sm::tpcc
