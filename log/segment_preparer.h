// SegmentPreparer: makes the log's next segment ready on a thread of its own, so the flusher
// neither waits for the file to be made nor writes its first commit groups into blocks that
// were only allocated.
//
// Why a thread. A fresh segment is made with its blocks written (as zeros,
// io::File::ResizeWritten): a commit group's write into an allocated but never written block
// turns it into a written one, a metadata change, so the sync after it commits the file
// system's journal as well as the data, about twice the device round trips of a sync after an
// overwrite (`tools/run bench tpcc`, key tx_per_s_1w_durable, measures the effect). Writing a
// whole segment takes long enough to stall every durable committer if the flusher did it, so
// it is done here, ahead: the flusher asks once the current segment is half written. A
// recycled spare is already written throughout and is only renamed.
//
// Protocol (the flusher is the only caller of Request and Take):
//   idle --Request(start)--> preparing --(thread done)--> ready --Take(start)--> idle
// Take of the requested start waits while it is being prepared and hands over the file or the
// failure; Take of any other start returns false and leaves the request alone. A failure is
// not fatal here: the flusher then makes the segment itself and latches the fatal state only
// if that fails too.
//
// Thread safety: Request, Take and Stop are for one thread (the flusher, then whoever stops
// the log); the preparing thread shares only the state under mu_.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "log/log_dir.h"
#include "sm/common/status.h"
#include "sm/io/file.h"

namespace sm::log {

class SegmentPreparer {
 public:
  explicit SegmentPreparer(LogDirectory* dir);
  ~SegmentPreparer();  // Stop
  SegmentPreparer(const SegmentPreparer&) = delete;
  SegmentPreparer& operator=(const SegmentPreparer&) = delete;

  // Starts preparing the segment at `start` unless a request is outstanding (the thread starts
  // with the first request).
  void Request(uint64_t start);
  // True if `start` was requested: then waits for it and sets *status, *file and *created
  // (a new file rather than an existing one). False, and nothing set, for any other start.
  bool Take(uint64_t start, Status* status, std::shared_ptr<io::File>* file, bool* created);
  // Waits for a preparation in progress, then ends the thread. Idempotent.
  void Stop();

 private:
  enum class State { kIdle, kPreparing, kReady };

  void Main();

  LogDirectory* const dir_;
  std::mutex mu_;
  std::condition_variable cv_;
  State state_ = State::kIdle;        // GUARDED_BY(mu_)
  uint64_t start_ = 0;                // the requested segment; GUARDED_BY(mu_)
  Status status_;                     // kReady: the outcome; GUARDED_BY(mu_)
  std::shared_ptr<io::File> file_;    // kReady and OK; GUARDED_BY(mu_)
  bool created_ = false;              // GUARDED_BY(mu_)
  bool stop_ = false;                 // GUARDED_BY(mu_)
  std::thread thread_;  // started by Request, joined by Stop once the flusher has ended
};

}  // namespace sm::log
