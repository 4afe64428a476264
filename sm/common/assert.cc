// Assertion failure reporting.
#include "sm/common/assert.h"

#include <cstdio>
#include <cstdlib>

namespace sm::detail {

void AssertFail(const char* expr, const char* file, int line, const char* func) {
  std::fprintf(stderr, "%s:%d: %s: assertion failed: %s\n", file, line, func, expr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace sm::detail
