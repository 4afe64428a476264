// What the `tpcc` driver's subcommands share: exit codes and the revision their JSON reports.
// (Only the driver binary includes this; the sm_tpcc library knows nothing of it.)
#pragma once

// Set by tpcc/CMakeLists.txt from `git rev-parse` at configure time.
#ifndef TPCC_GIT_REVISION
#define TPCC_GIT_REVISION "unknown"
#endif

namespace sm::tpcc {

inline constexpr int kExitFailed = 1;  // the work ran and failed (or a check failed)
inline constexpr int kExitUsage = 2;   // bad options; nothing was done
inline constexpr const char* kGitRevision = TPCC_GIT_REVISION;

}  // namespace sm::tpcc
