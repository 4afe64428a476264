// InterleaveChooser: whether a worker's B-tree descents interleave their leaf misses
// (MissInterleaving::kAdaptive, btree.h "Miss interleaving"), chosen from the worker's own
// rate of descents.
//
// Owns: one worker thread's choice and the counts behind it. Interleaving pays where the
// leaves a worker reads are not in the CPU cache and costs where they are, and which holds
// depends on the machine, the data and the workload, so the chooser measures it, as STEPS'
// adaptive mode does (steps/steps.h, AdaptivePolicy). It counts the descents that reach a leaf
// (the work done: interleaving changes how fast they come, not how many an operation needs) in
// epochs of kEpochNs, reading the clock once every kClockEvery descents. A probe is
// kProbeEpochs epochs alternating without and with interleaving; interleaving is then chosen if
// the median rate of its epochs beats the others' by kMargin. Medians, because one epoch that
// a checkpoint or the background writer slowed would move a mean, and a margin, because a tie
// does not repay the yields (they can cost where leaves are cached and pay in random lookups of a
// large table: tpcc run's throughput_tx_per_s and bench_btree's lookups_per_s_1w, each with
// --miss-interleaving on against off). The run after a probe lasts kMinRunEpochs when the probe
// changed the choice, twice the previous run when it confirmed it, up to kMaxRunEpochs, so a
// settled workload probes ever less; then the next probe begins.
//
// Regimes. The caller also names, at each clock reading, the regime the worker runs in, or
// none where nothing can be timed: with adaptive STEPS (steps/steps.h) a worker alternates
// epochs with teams, where no descent interleaves, and without, and an interleaving epoch that
// saw teams would credit their rate to whichever mode it was probing (a probe whose epochs
// with interleaving fell into STEPS' team epochs would find interleaving no faster and turn
// it off). An epoch counts only if it began and ended in the same measurable regime; any
// other is dropped and the next one timed in its place.
//
// Invariants: current() is the mode of the epoch in progress; a probe's epochs alternate,
// starting without, so epoch i of a probe fills slot i / 2 of its mode's rates.
//
// Thread/fiber safety: none; one per worker thread (thread_local in btree.cc). Constructed by
// constant initialization, so such a thread_local needs no initialization guard.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

namespace sm::index {

class InterleaveChooser {
 public:
  static constexpr int64_t kEpochNs = 20'000'000;  // an epoch, in nanoseconds
  static constexpr uint32_t kClockEvery = 64;
  static constexpr uint32_t kProbeEpochs = 8;
  static constexpr uint32_t kMinRunEpochs = 25;   // the run after a probe that changed the mode
  static constexpr uint32_t kMaxRunEpochs = 100;  // a changed workload waits no longer
  static constexpr double kMargin = 0.05;

  // Whether the descent at hand interleaves.
  bool current() const { return current_; }

  // The regime of a worker whose epochs can always be timed.
  static std::optional<uint32_t> OneRegime() { return 0; }

  // Counts one descent to a leaf; once every kClockEvery descents, now_ns() (a monotonic
  // clock in nanoseconds) and regime() (the worker's regime, or nullopt where it cannot be
  // timed: see "Regimes") are called.
  template <typename NowNs, typename Regime = decltype(&OneRegime)>
  void CountDescent(NowNs now_ns, Regime regime = &OneRegime) {
    if (++descents_ % kClockEvery != 0) return;
    const int64_t now = now_ns();
    const std::optional<uint32_t> r = regime();
    if (epoch_start_ns_ == 0) {  // the first clock reading starts the first epoch
      StartEpoch(now, r);
      return;
    }
    if (now - epoch_start_ns_ < kEpochNs) return;
    if (r.has_value() && r == epoch_regime_) {
      EndEpoch(static_cast<double>(descents_) / static_cast<double>(now - epoch_start_ns_));
    } else {
      ++dropped_;  // timed again, in the same mode
    }
    StartEpoch(now, r);
  }

  // Tests and statistics.
  bool probing() const { return probe_epoch_ < kProbeEpochs; }
  uint32_t run_epochs() const { return run_epochs_; }
  uint64_t probes() const { return probes_; }
  uint64_t dropped_epochs() const { return dropped_; }

 private:
  void StartEpoch(int64_t now, std::optional<uint32_t> regime) {
    epoch_start_ns_ = now;
    epoch_regime_ = regime;
    descents_ = 0;
  }

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
  std::optional<uint32_t> epoch_regime_;  // the regime the epoch in progress began in
  uint64_t dropped_ = 0;            // epochs not counted (regime changed or not measurable)
  uint32_t probe_epoch_ = 0;        // epochs of the probe done; kProbeEpochs: not probing
  Rates rates_off_{}, rates_on_{};  // the probe's epochs' rates (descents per ns)
  uint32_t run_epochs_ = kMinRunEpochs;
  uint32_t run_left_ = 0;
  uint64_t probes_ = 0;
  bool current_ = false;
  bool chosen_ = false;
};

}  // namespace sm::index
