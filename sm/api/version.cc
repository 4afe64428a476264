// Version: the project version from CMake (SM_VERSION_STRING, set on this file only, so that a
// new version recompiles one file).
#include "sm/sm.h"

#ifndef SM_VERSION_STRING
#error "SM_VERSION_STRING must be defined by the build (sm/api/CMakeLists.txt)"
#endif

namespace sm {

const char* Version() { return SM_VERSION_STRING; }

}  // namespace sm
