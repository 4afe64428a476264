// GitRevision: the one file that includes the generated revision header, so a new revision
// recompiles only this file.
#include "tpcc/cli_common.h"
#include "tpcc/git_revision.h"

namespace sm::tpcc {

const char* GitRevision() { return TPCC_GIT_REVISION; }

}  // namespace sm::tpcc
