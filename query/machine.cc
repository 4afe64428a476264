#include "query/machine.h"

#include <cpuid.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sm/common/assert.h"

namespace sm::query {
namespace {

bool ReadFileString(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::getline(in, *out);
  return true;
}

// "48K", "1280K", "48M" -> bytes.
uint64_t ParseSize(const std::string& s) {
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 10);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  if (end && (*end == 'M' || *end == 'm')) v <<= 20;
  return v;
}

bool ReadSysfsCaches(MachineInfo* m) {
  bool any = false;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level, type, size, line;
    if (!ReadFileString(dir + "level", &level)) break;
    if (!ReadFileString(dir + "type", &type) || !ReadFileString(dir + "size", &size)) continue;
    if (type == "Instruction") continue;
    const uint64_t bytes = ParseSize(size);
    if (bytes == 0) continue;
    if (level == "1") m->l1d_bytes = bytes;
    if (level == "2") m->l2_bytes = bytes;
    if (level == "3") m->l3_bytes = bytes;
    if (level == "1" && ReadFileString(dir + "coherency_line_size", &line)) {
      const uint64_t l = std::strtoull(line.c_str(), nullptr, 10);
      if (l > 0 && std::has_single_bit(l)) m->line_bytes = static_cast<uint32_t>(l);
    }
    any = true;
  }
  return any;
}

bool ReadSysconfCaches(MachineInfo* m) {
  const long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  const long line = sysconf(_SC_LEVEL1_DCACHE_LINESIZE);
  if (l1 > 0) m->l1d_bytes = static_cast<uint64_t>(l1);
  if (l2 > 0) m->l2_bytes = static_cast<uint64_t>(l2);
  if (l3 > 0) m->l3_bytes = static_cast<uint64_t>(l3);
  if (line > 0 && std::has_single_bit(static_cast<uint64_t>(line))) {
    m->line_bytes = static_cast<uint32_t>(line);
  }
  return l1 > 0;
}

// cpuid leaf 0x18: one sub-leaf per translation structure. EDX[4:0] is the type (1 data,
// 3 unified), EDX[7:5] the level, EBX[3:0] the page sizes (bit 0: 4 KiB), EBX[31:16] the ways
// and ECX the sets.
bool ReadCpuidTlb(MachineInfo* m) {
  unsigned a, b, c, d;
  if (__get_cpuid_max(0, nullptr) < 0x18) return false;
  __cpuid_count(0x18, 0, a, b, c, d);
  const unsigned subleaves = a;
  bool found_l1 = false, found_l2 = false;
  for (unsigned s = 0; s <= subleaves && s < 64; ++s) {
    __cpuid_count(0x18, s, a, b, c, d);
    const unsigned type = d & 31, level = (d >> 5) & 7;
    if (type == 0 || (b & 1) == 0) continue;  // invalid, or not for 4 KiB pages
    if (type != 1 && type != 3) continue;     // instruction TLBs
    const uint32_t entries = (b >> 16) * c;
    if (entries == 0) continue;
    if (level == 1 && type == 1) m->tlb_l1_entries = entries, found_l1 = true;
    if (level == 2) m->tlb_l2_entries = entries, found_l2 = true;
  }
  return found_l1 && found_l2;
}

void ReadPages(MachineInfo* m) {
  const long page = sysconf(_SC_PAGESIZE);
  if (page > 0 && std::has_single_bit(static_cast<uint64_t>(page))) {
    m->page_bytes = static_cast<uint32_t>(page);
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("Hugepagesize:", 0) == 0) {
      const uint64_t kib = std::strtoull(line.c_str() + 13, nullptr, 10);
      if (kib > 0 && std::has_single_bit(kib)) m->huge_page_bytes = kib << 10;
    }
  }
  std::string thp;
  if (ReadFileString("/sys/kernel/mm/transparent_hugepage/enabled", &thp)) {
    // The selected mode is the bracketed word: "always [madvise] never".
    const size_t open = thp.find('['), close = thp.find(']');
    if (open != std::string::npos && close != std::string::npos && close > open) {
      m->thp_mode = thp.substr(open + 1, close - open - 1);
    }
  }
}

// One dependent load per element of `slots` (word offsets into `mem`), visited in a random
// cyclic order; returns nanoseconds per load.
double ChaseSlots(uint64_t* mem, const std::vector<size_t>& slots, std::mt19937_64& rng) {
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t i = 0; i < order.size(); ++i) {
    mem[slots[order[i]]] = slots[order[(i + 1) % order.size()]];
  }
  const size_t loads = std::max<size_t>(200000, 8 * slots.size());
  uint64_t at = slots[order[0]];
  for (size_t i = 0; i < slots.size(); ++i) at = mem[at];  // warm the caches and TLB
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < loads; ++i) at = mem[at];
  const auto end = std::chrono::steady_clock::now();
  SM_ASSERT(at < (uint64_t{1} << 40));  // keeps the chain live
  return std::chrono::duration<double, std::nano>(end - start).count() / loads;
}

}  // namespace

bool MachineInfo::CheckInvariants() const {
  SM_ASSERT(std::has_single_bit(line_bytes));
  SM_ASSERT(std::has_single_bit(page_bytes));
  SM_ASSERT(std::has_single_bit(huge_page_bytes));
  SM_ASSERT(l1d_bytes > 0);
  SM_ASSERT(l1d_bytes <= l2_bytes);
  SM_ASSERT(l2_bytes <= l3_bytes);
  SM_ASSERT(tlb_l1_entries > 0);
  SM_ASSERT(tlb_l2_entries > 0);
  return true;
}

std::string MachineInfo::Describe() const {
  std::ostringstream s;
  s << "caches (" << cache_source << "): L1d " << (l1d_bytes >> 10) << " KiB, L2 "
    << (l2_bytes >> 10) << " KiB, L3 " << (l3_bytes >> 10) << " KiB, line " << line_bytes << " B\n";
  s << "pages: " << page_bytes << " B; huge pages " << (huge_page_bytes >> 10)
    << " KiB, transparent huge pages '" << thp_mode << "'\n";
  s << "data TLB (" << tlb_source << "): L1 " << tlb_l1_entries << " entries, L2 " << tlb_l2_entries
    << " entries (4 KiB pages)\n";
  s << "cpus: " << cpu_count << "\n";
  return s.str();
}

MachineInfo ReadMachine() {
  MachineInfo m;
  if (ReadSysfsCaches(&m)) {
    m.cache_source = "sysfs";
  } else if (ReadSysconfCaches(&m)) {
    m.cache_source = "sysconf";
  }
  m.l2_bytes = std::max(m.l2_bytes, m.l1d_bytes);  // invariant 2 for a missing level
  m.l3_bytes = std::max(m.l3_bytes, m.l2_bytes);
  ReadPages(&m);
  if (ReadCpuidTlb(&m)) m.tlb_source = "cpuid 0x18";
  m.cpu_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  SM_DASSERT(m.CheckInvariants());
  return m;
}

void MeasureTlb(MachineInfo* info) {
  SM_ASSERT(info != nullptr);
  if (info->tlb_source == "cpuid 0x18") return;
  const size_t page = info->page_bytes, line = info->line_bytes;
  const size_t max_pages = 8192;
  const size_t bytes = max_pages * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  madvise(p, bytes, MADV_NOHUGEPAGE);  // the chase must cross small pages
  auto* mem = static_cast<uint64_t*>(p);
  std::mt19937_64 rng(42);
  const size_t lines_per_page = page / line;
  // Page i holds its slot in line i mod lines_per_page, so the N lines spread over the cache
  // sets as N packed lines do; the control chase visits N packed lines (N / lines_per_page
  // pages), so the difference of the two is what crossing N pages costs.
  const size_t counts[] = {8,   16,  24,   32,   48,   64,   96,   128,  192,  256, 384,
                           512, 768, 1024, 1280, 1536, 2048, 3072, 4096, 6144, 8192};
  std::vector<std::pair<size_t, double>> extra;
  for (size_t n : counts) {
    std::vector<size_t> spread(n), packed(n);
    for (size_t i = 0; i < n; ++i) {
      spread[i] = (i * page + (i % lines_per_page) * line) / sizeof(uint64_t);
      packed[i] = (i * line) / sizeof(uint64_t);
    }
    const double t_spread = ChaseSlots(mem, spread, rng);
    const double t_packed = ChaseSlots(mem, packed, rng);
    extra.emplace_back(n, t_spread - t_packed);
  }
  munmap(p, bytes);
  // A level's entries: the last count before the extra cost steps up. The first step is a
  // second-level TLB hit (a few cycles), the second a page walk (tens of cycles).
  const double base = extra.front().second;
  size_t l1 = 0, l2 = 0;
  double plateau = 0;
  for (size_t i = 1; i < extra.size(); ++i) {
    if (l1 == 0 && extra[i].second > base + 1.0) {
      l1 = extra[i - 1].first;
      plateau = extra[i].second;
    } else if (l1 != 0 && l2 == 0 && extra[i].second > 2 * plateau + 2.0) {
      l2 = extra[i - 1].first;
    }
  }
  if (l1 == 0) return;
  info->tlb_l1_entries = static_cast<uint32_t>(l1);
  if (l2 != 0) info->tlb_l2_entries = static_cast<uint32_t>(l2);
  info->tlb_source = "measured";
}

bool AdviseHugePages(void* p, uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t begin = (reinterpret_cast<uint64_t>(p) + page - 1) & ~(page - 1);
  const uint64_t end = (reinterpret_cast<uint64_t>(p) + bytes) & ~(page - 1);
  if (end <= begin) return false;
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE) == 0;
}

int64_t AnonHugePagesKib() {
  std::ifstream in("/proc/self/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("AnonHugePages:", 0) == 0) return std::strtoll(line.c_str() + 14, nullptr, 10);
  }
  return -1;
}

}  // namespace sm::query
