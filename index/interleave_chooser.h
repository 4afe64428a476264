// InterleaveChooser: whether a worker's B-tree descents interleave their leaf misses
// (MissInterleaving::kAdaptive, btree.h "Miss interleaving"), chosen by measuring.
//
// Owns: one worker thread's choice and the counts behind it. Interleaving pays where the
// leaves a worker reads are not in the CPU cache and costs where they are, and which holds
// depends on the machine, the data and the workload, so the chooser measures it, as STEPS'
// adaptive mode does (steps/steps.h, AdaptivePolicy). It counts the descents that reach a leaf
// (the work done: interleaving changes how fast they come, not how many an operation needs) in
// epochs of kEpochNs, reading the clock once every kClockEvery descents. A probe is
// kProbeEpochs epochs alternating without and with interleaving; interleaving is then chosen if
// the median rate of its epochs beats the others' by kMargin. Medians, because one epoch that
// a checkpoint or the background writer slowed would move a mean by several percent, and a
// margin, because a tie does not repay the yields (TPC-C with one warehouse: 9 % slower with
// them; 10 M random keys: 20 % faster). The run after a probe lasts kMinRunEpochs when the probe
// changed the choice, twice the previous run when it confirmed it, up to kMaxRunEpochs, so a
// settled workload probes ever less; then the next probe begins.
//
// Invariants: current() is the mode of the epoch in progress; a probe's epochs alternate,
// starting without, so epoch i of a probe fills slot i / 2 of its mode's rates.
//
// Thread/fiber safety: none; one per worker thread (thread_local in btree.cc). Trivially
// constructible, so such a thread_local needs no initialization guard.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace sm::index {

class InterleaveChooser {
 public:
  static constexpr int64_t kEpochNs = 20'000'000;  // 20 ms
  static constexpr uint32_t kClockEvery = 64;
  static constexpr uint32_t kProbeEpochs = 8;
  static constexpr uint32_t kMinRunEpochs = 25;   // 0.5 s
  static constexpr uint32_t kMaxRunEpochs = 100;  // 2 s: a changed workload waits no longer
  static constexpr double kMargin = 0.05;

  // Whether the descent at hand interleaves.
  bool current() const { return current_; }

  // Counts one descent to a leaf; now_ns() (a monotonic clock in nanoseconds) is called once
  // every kClockEvery descents.
  template <typename NowNs>
  void CountDescent(NowNs now_ns) {
    if (++descents_ % kClockEvery != 0) return;
    const int64_t now = now_ns();
    if (epoch_start_ns_ == 0) {  // the first clock reading starts the first epoch
      epoch_start_ns_ = now;
      descents_ = 0;
      return;
    }
    if (now - epoch_start_ns_ < kEpochNs) return;
    EndEpoch(static_cast<double>(descents_) / static_cast<double>(now - epoch_start_ns_));
    epoch_start_ns_ = now;
    descents_ = 0;
  }

  // Tests and statistics.
  bool probing() const { return probe_epoch_ < kProbeEpochs; }
  uint32_t run_epochs() const { return run_epochs_; }
  uint64_t probes() const { return probes_; }

 private:
  void EndEpoch(double rate) {
    if (probing()) {
      (current_ ? rates_on_ : rates_off_)[probe_epoch_ / 2] = rate;
      if (++probe_epoch_ < kProbeEpochs) {
        current_ = !current_;
        return;
      }
      const bool choose = Median(&rates_on_) > Median(&rates_off_) * (1.0 + kMargin);
      run_epochs_ = probes_ > 0 && choose == chosen_ ? std::min(run_epochs_ * 2, kMaxRunEpochs)
                                                     : kMinRunEpochs;
      chosen_ = choose;
      current_ = choose;
      ++probes_;
      run_left_ = run_epochs_;
      return;
    }
    if (--run_left_ > 0) return;
    probe_epoch_ = 0;  // the next probe, starting without
    current_ = false;
  }

  static_assert(kProbeEpochs % 2 == 0, "a probe alternates: as many epochs of each mode");
  using Rates = std::array<double, kProbeEpochs / 2>;
  static double Median(Rates* rates) {
    std::sort(rates->begin(), rates->end());
    const size_t n = rates->size();
    return n % 2 == 1 ? (*rates)[n / 2] : ((*rates)[n / 2 - 1] + (*rates)[n / 2]) / 2;
  }

  uint64_t descents_ = 0;           // in the epoch in progress
  int64_t epoch_start_ns_ = 0;      // 0: no epoch begun yet
  uint32_t probe_epoch_ = 0;        // epochs of the probe done; kProbeEpochs: not probing
  Rates rates_off_{}, rates_on_{};  // the probe's epochs' rates (descents per ns)
  uint32_t run_epochs_ = kMinRunEpochs;
  uint32_t run_left_ = 0;
  uint64_t probes_ = 0;
  bool current_ = false;
  bool chosen_ = false;
};

}  // namespace sm::index
