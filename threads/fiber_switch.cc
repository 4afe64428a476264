// sm_fiber_switch for x86-64 System V (see fiber_switch.h for why it exists).
//
// Frame at the saved context pointer, as Boost.Context lays it out:
//   0x00 FPU control words (not written here: see invariant 1 of fiber_switch.h)
//   0x08 r12  0x10 r13  0x18 r14  0x20 r15  0x28 rbx  0x30 rbp
//   0x38 return address
// Returns transfer_t {previous context, data} in rax:rdx; a fresh context made by
// make_fcontext finds them in rdi:rsi, which its trampoline passes to the fiber's function.
#include "threads/fiber_switch.h"

#ifdef SM_FIBER_SWITCH_ASM
// In a section of its own, as g++ -ffunction-sections puts each function, so that the linker
// can lay it out next to its callers (cmake/code_layout.cmake).
asm(R"(
  .pushsection .text.sm_fiber_switch, "ax", @progbits
  .globl sm_fiber_switch
  .type sm_fiber_switch, @function
  .p2align 4
sm_fiber_switch:
  leaq -0x38(%rsp), %rsp
  movq %r12, 0x08(%rsp)
  movq %r13, 0x10(%rsp)
  movq %r14, 0x18(%rsp)
  movq %r15, 0x20(%rsp)
  movq %rbx, 0x28(%rsp)
  movq %rbp, 0x30(%rsp)
  movq %rsp, %rax
  movq %rdi, %rsp
  movq 0x08(%rsp), %r12
  movq 0x10(%rsp), %r13
  movq 0x18(%rsp), %r14
  movq 0x20(%rsp), %r15
  movq 0x28(%rsp), %rbx
  movq 0x30(%rsp), %rbp
  leaq 0x38(%rsp), %rsp
  movq %rsi, %rdx
  movq %rax, %rdi
  ret
  .size sm_fiber_switch, .-sm_fiber_switch
  .popsection
)");

// Where the laid-out hot code starts: an empty section aligned to a page, which the layout file
// lists first. Which set of the L1-I a line maps to depends on its address modulo the page
// size, so the hot functions then map to the same sets whatever the binary holds ahead of them.
// Here because every binary with fibers links this object.
asm(R"(
  .pushsection .text.sm_hot_code_start, "ax", @progbits
  .p2align 12
  .globl sm_hot_code_start
sm_hot_code_start:
  .popsection
)");
#endif
