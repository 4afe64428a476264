// The memory hierarchy of the machine the process runs on, read at run time: what the
// cache-conscious operators (radix-cluster joins, query/radix_join.h) size their fan-out and
// clusters by, and what their cost models (query/radix_model.h) price.
//
// Sources, in order of preference:
//   - caches: sysfs /sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,
//     coherency_line_size}; else sysconf(_SC_LEVEL{1D,2,3}_CACHE_*); else the defaults below.
//   - pages: sysconf(_SC_PAGESIZE); the huge page size from /proc/meminfo (Hugepagesize) and
//     whether transparent huge pages can be asked for, from
//     /sys/kernel/mm/transparent_hugepage/enabled ("always" or "madvise").
//   - data TLB entries: cpuid leaf 0x18 (Intel's deterministic address translation leaf: the
//     L1 DTLB and the shared second-level TLB for 4 KiB pages). Hypervisors often return zeros
//     there; then MeasureTlb() finds the entries by pointer-chasing one line per page over a
//     growing number of pages (the latency steps up where the pages outgrow a TLB level), and
//     without it the defaults hold. `tlb_source` says which one answered.
//
// Invariants:
//   1. Every size and count is positive and every line and page size is a power of two.
//   2. l1d_bytes <= l2_bytes <= l3_bytes (a missing level takes the size of the one below).
//
// Thread/fiber safety: ReadMachine is safe to call from any thread; MeasureTlb chases pointers
// through freshly allocated pages, so it belongs to calibration, not to query execution.
#pragma once

#include <cstdint>
#include <string>

namespace sm::query {

struct MachineInfo {
  uint32_t line_bytes = 64;
  uint64_t l1d_bytes = 32 << 10;
  uint64_t l2_bytes = 1 << 20;
  uint64_t l3_bytes = 8 << 20;
  uint32_t page_bytes = 4096;
  uint64_t huge_page_bytes = 2 << 20;
  // "always", "madvise" or "never" (or "absent"): whether madvise(MADV_HUGEPAGE) gets huge
  // pages for anonymous memory.
  std::string thp_mode = "absent";
  uint32_t tlb_l1_entries = 64;    // first-level data TLB, 4 KiB pages
  uint32_t tlb_l2_entries = 1024;  // second-level (shared) TLB, 4 KiB pages
  std::string tlb_source = "default";
  std::string cache_source = "default";
  int cpu_count = 1;

  bool HugePagesAvailable() const { return thp_mode == "always" || thp_mode == "madvise"; }
  uint64_t LineCount(uint64_t bytes) const { return bytes / line_bytes; }
  bool CheckInvariants() const;
  std::string Describe() const;  // one line per parameter, with its source
};

// Reads caches, pages and cpuid; never measures. Cheap; the result does not change while the
// process runs, so callers may keep it.
MachineInfo ReadMachine();

// Fills tlb_l1_entries and tlb_l2_entries by pointer-chasing (when cpuid did not say), and sets
// tlb_source to name the pointer chase as their origin. Leaves `info` as it was if the chase
// finds no step.
void MeasureTlb(MachineInfo* info);

// Asks for transparent huge pages over [p, p + bytes) (rounded inward to whole pages); returns
// whether the kernel accepted the advice. The memory must be anonymous and page-aligned at
// least in part.
bool AdviseHugePages(void* p, uint64_t bytes);

// Kibibytes of anonymous memory the process holds in huge pages now (AnonHugePages of
// /proc/self/smaps_rollup), or -1 if unreadable: what shows whether the advice took.
int64_t AnonHugePagesKib();

}  // namespace sm::query
