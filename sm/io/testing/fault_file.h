// FaultInjectionFileSystem: an in-memory FileSystem for tests that injects I/O faults and
// models what survives a crash (after LevelDB's fault-injection Env and SQLite's test6.c).
// Test support: it is in the sm_testing library, which the tests and benchmarks link and the
// engine's libraries and the installed package do not.
//
// Owns: every file's contents in two images (durable and cached), the ordered list of each
// file's unsynced operations, the fault plan, the seeded random generator, and the counters.
//
// Model (per file):
//   durable  the bytes a crash cannot take away: as of the last successful Sync.
//   current  what Read, ReadUpTo and Size see, like the OS page cache: durable plus every
//            completed Write and Resize since.
//   pending  the Writes and Resizes since the last Sync, in issue order, with their bytes.
// Sync moves pending into durable. SimulateCrash(mode) resolves every file's pending list:
//   kKeepUnsynced  every pending operation reaches the disk;
//   kDropUnsynced  none does;
//   kTearUnsynced  each pending operation independently (seeded) is kept, dropped, or - for a
//                  write - torn: each of its 512-byte sectors (bounded by absolute multiples of
//                  512 in the file) independently persists or not. A sector is atomic: it holds
//                  its old or its new bytes, never a mix. A torn write that extended the file
//                  extends it to the end of its last persisted sector. A Resize is atomic.
// and then current = durable for every file. The crash also kills the "process": every File
// opened before it returns IOError for every operation; files opened afterwards see only what
// survived.
//
// Failed Sync (the fsyncgate behaviour of Linux): the pending operations are resolved as by a
// torn crash (some reach the disk, some do not), the list is cleared, and the lost ones stay
// visible in current until the next crash. A later successful Sync does not bring them back,
// so code that retries a failed fsync instead of going fatal loses data under this model.
//
// Simplifications, on purpose:
//   1. Metadata operations (create, Delete, Rename, CreateDir) are durable at once; SyncDir
//      does nothing and never fails. File sizes, by contrast, follow the data model above.
//   2. Delete of an open file unlinks it (open handles keep working on the orphan, which leaves
//      the space accounting at once and vanishes at a crash).
//   3. Directories are names only: a file may be created only in an existing directory (".",
//      "/" and "" always exist); directories cannot be renamed.
//   4. Bytes never written (holes, growth by Resize) read as zero.
//   5. LockFile locks live in memory: a second lock of a path is Busy until the first
//      FileLock is destroyed or a crash ends every lock.
//
// Faults (per kind, counted from the call that sets them; a path filter may restrict them):
//   FailNth(kRead|kWrite|kSync, n)  the n-th following such operation fails with EIO; a failed
//                                   read or write transfers nothing.
//   FailNth(kShortWrite, n)         the n-th following write stores a strict prefix of whole
//                                   512-byte sectors (seeded length, possibly none), then
//                                   returns IOError.
//   SetFailProbability(kind, p)     each following such operation fails with probability p.
//   SetSizeLimit(bytes)             writes and resizes that would take the sum of all file
//                                   sizes over `bytes` return NoSpace and change nothing.
// Alignment (file.h, rule 1) is enforced exactly as by the POSIX implementation.
//
// Determinism: one std::mt19937_64 seeded at construction (or Reseed) makes every choice, so
// the same seed and the same sequence of calls give the same faults and the same torn images.
//
// Thread/fiber safety: everything is safe from any fiber and thread (one internal mutex, never
// held across a suspension point). File handles share ownership of the state, so they may
// outlive the FaultInjectionFileSystem object (and then fail like crashed handles).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "sm/io/file.h"

namespace sm::io {

enum class FaultOp : uint8_t { kRead = 0, kWrite = 1, kShortWrite = 2, kSync = 3 };
inline constexpr int kFaultOpCount = 4;

enum class CrashMode : uint8_t { kKeepUnsynced, kDropUnsynced, kTearUnsynced };

struct FaultCounters {
  // File operations attempted (including failed ones; not those on crashed handles).
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t syncs = 0;
  uint64_t resizes = 0;
  // Injected faults.
  uint64_t read_faults = 0;
  uint64_t write_faults = 0;
  uint64_t short_writes = 0;
  uint64_t sync_faults = 0;
  uint64_t no_space = 0;  // writes and resizes refused by the size limit
  uint64_t crashes = 0;
  uint64_t bytes_written = 0;  // by successful writes
};

// What one SimulateCrash did with the pending operations of all files.
struct CrashReport {
  uint64_t ops_kept = 0;
  uint64_t ops_dropped = 0;
  uint64_t ops_torn = 0;
  uint64_t torn_sectors_kept = 0;
  uint64_t torn_sectors_dropped = 0;
};

class FaultInjectionFileSystem final : public FileSystem {
 public:
  static constexpr size_t kSectorBytes = 512;
  static constexpr uint64_t kNoSizeLimit = std::numeric_limits<uint64_t>::max();

  explicit FaultInjectionFileSystem(uint64_t seed);
  ~FaultInjectionFileSystem() override;
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;

  Status Open(const std::string& path, const OpenOptions& options,
              std::unique_ptr<File>* file) override;
  Status Exists(const std::string& path, bool* exists) override;
  Status Delete(const std::string& path) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override;
  Status ListDir(const std::string& path, std::vector<std::string>* names) override;
  Status SyncDir(const std::string& path) override;
  Status LockFile(const std::string& path, std::unique_ptr<FileLock>* lock) override;

  // --- Fault plan ---
  // The n-th (n >= 1) following operation of this kind fails; n = 0 cancels.
  void FailNth(FaultOp op, uint64_t n);
  // Each following operation of this kind fails with probability p (0 = never).
  void SetFailProbability(FaultOp op, double p);
  void SetSizeLimit(uint64_t bytes);
  // Only files whose path contains `substring` get injected faults ("" = all files).
  void SetFaultFilter(std::string substring);
  // Cancels FailNth, probabilities, the size limit and the filter.
  void ClearFaults();
  // Restarts the random generator (the fault plan is kept).
  void Reseed(uint64_t seed);

  // --- Crash ---
  CrashReport SimulateCrash(CrashMode mode);

  // --- Inspection ---
  FaultCounters counters() const;
  // Sum of the (cached) sizes of all files, as the size limit sees it.
  uint64_t used_bytes() const;
  // Pending (unsynced) writes and resizes across all files.
  uint64_t pending_ops() const;

  struct State;  // defined in fault_file.cc; shared with the File handles

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sm::io
