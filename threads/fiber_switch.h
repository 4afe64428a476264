// The fiber context switch: saves the running context's callee-saved registers and stack
// pointer, and resumes another saved context.
//
// Owns: SwitchContext, the one function every switch in the runtime goes through.
//
// Why not Boost's jump_fcontext directly: it returns into the resumed context with an
// indirect `jmp`, so the `call` that entered it is never matched by a `ret`. The CPU's
// return-stack predictor then mispredicts every return after a switch (bench_switch's
// direct_switch_ns measures the switch; a bare jump_fcontext ping-pong, which has no return
// after the switch, does not show it). On x86-64 SwitchContext ends with `ret` instead: the
// resumed context was suspended by a `call SwitchContext` too, usually from the same call site
// (a STEPS team parks all its members at the same CTX point), so the prediction is right. It
// also skips the FPU control words: no fiber changes the rounding mode or exception masks
// (invariant 1), so there is nothing to restore. STEPS' CTX is meant to be exactly this
// minimal (paper section 4.1).
//
// The saved frame has Boost's layout, so contexts made by make_fcontext start through it.
// Other architectures and the sanitizer builds (whose fiber annotations assume Boost's
// switch) use jump_fcontext.
//
// Invariants:
//   1. Code running on fibers never changes the MXCSR or the x87 control word.
#pragma once

#include <boost/context/detail/fcontext.hpp>

#if defined(__x86_64__) && defined(__ELF__) && !defined(SM_ASAN) && !defined(SM_TSAN)
#define SM_FIBER_SWITCH_ASM 1
extern "C" boost::context::detail::transfer_t sm_fiber_switch(
    boost::context::detail::fcontext_t to, void* data);
#endif

namespace sm::threads {

// Suspends the running context and resumes `to`, passing it `data`. Returns when some
// context switches back: the context that did and the data it passed.
inline boost::context::detail::transfer_t SwitchContext(boost::context::detail::fcontext_t to,
                                                        void* data) {
#ifdef SM_FIBER_SWITCH_ASM
  return sm_fiber_switch(to, data);
#else
  return boost::context::detail::jump_fcontext(to, data);
#endif
}

}  // namespace sm::threads
