// Assertions at three cost levels (after Shore's w_assert1/2/3):
//
//   SM_ASSERT(cond)    always on: cheap checks of local invariants and arguments.
//   SM_DASSERT(cond)   Debug builds (SM_DEBUG): checks that cost more than the code they guard.
//   SM_PARANOID(cond)  only with -DSM_PARANOID_CHECKS=ON: whole-structure walks
//                      (e.g. SM_PARANOID(pool.CheckInvariants())).
//
// A failed assertion prints the expression and location to stderr and aborts; it never throws
// (an exception must not cross a fiber boundary).
#pragma once

namespace sm::detail {
[[noreturn]] void AssertFail(const char* expr, const char* file, int line, const char* func);
}  // namespace sm::detail

#define SM_ASSERT(cond)                                                      \
  do {                                                                       \
    if (!(cond)) [[unlikely]]                                                \
      ::sm::detail::AssertFail(#cond, __FILE__, __LINE__, __func__);         \
  } while (0)

#ifdef SM_DEBUG
#define SM_DASSERT(cond) SM_ASSERT(cond)
#define SM_DEBUG_ONLY(...) __VA_ARGS__
#else
#define SM_DASSERT(cond) \
  do {                   \
    (void)sizeof(cond);  \
  } while (0)
#define SM_DEBUG_ONLY(...)
#endif

#ifdef SM_PARANOID_ENABLED
#define SM_PARANOID(cond) SM_ASSERT(cond)
#else
#define SM_PARANOID(cond) \
  do {                    \
    (void)sizeof(cond);   \
  } while (0)
#endif

// Marks code that cannot be reached if the invariants hold.
#define SM_UNREACHABLE() ::sm::detail::AssertFail("unreachable", __FILE__, __LINE__, __func__)
