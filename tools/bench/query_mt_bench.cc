// The multithreaded operators of query/mt_ops.h at 1 and 2 workers against their model
// (query/mt_model.h), after Figures 5-10 of Krikellas, Cintra and Viglas (VLDB 2009), on
// synthetic NSM tables (a key and a value column plus filler up to the tuple size; values
// uniform in [0, 2^31), so a selection `value < s * 2^31` keeps the fraction s):
//   agg_tuple     aggregation by tuple size (Fig. 5): K tuples, D = 1,000, sort/partition/map
//   agg_sel       aggregation by selectivity (Fig. 6): 72-byte tuples
//   agg_distinct  aggregation by distinct keys (Fig. 7): 72-byte tuples
//   join_size     joins by inner tuple size (Figs. 8a, 9a): outer 72 bytes, 10 matches each
//   join_sel      joins by inner selectivity (Figs. 8b, 9b): inner 4x the outer
//   join_matches  joins by matches per outer tuple (Figs. 8c, 9c)
//   pipeline      join, join, aggregation (Fig. 10): 4 then 10 matches; partition joins and
//                 map aggregation over D = 1,000, and sort-merge joins and merge aggregation
//                 over the second join's key (D = |C| / 10)
// Joins count and sum their pairs without materializing them (the paper's OUT = 0 runs), except
// in the pipeline, whose joins feed the next operator.
//
// At start it calibrates the model (CalibrateModel). Times are medians over --repeat runs.
// The heap keeps the memory operators free (mallopt), so a run's staged copies land on pages
// an earlier run mapped, as the paper's partitions land on buffer-pool pages: page faults,
// which the kernel serializes across workers, are then no part of what is measured.
//
// JSON keys: {experiment}_{algorithm}_{point}_speedup_2t (1-worker time / 2-worker time) and
// {...}_model_speedup_2t (the model's), {...}_ms_1t, {...}_ms_2t, {...}_model_ms_1t;
// agg_speedup_2t_best, join_speedup_2t_best, model_error_pct (the median over all points of
// |model speedup - measured speedup| / measured speedup), model_error_pct_max,
// model_time_error_pct (the median |model time - measured time| / measured time at 1 worker),
// model_error_pct_free_cores (model_error_pct over the experiments that began with both cores
// free, cpu_speedup_2t >= 1.9) and points_free_cores (how many points those were),
// pipeline_tuples_per_s_1t, pipeline_tuples_per_s_2t, pipeline_speedup_2t (and the same with
// pipeline_merge_ for the sort-merge plan), the calibrated
// constants (cal_*), cpu_speedup_2t_before and cpu_speedup_2t_after (what a pure computation
// gains from a second worker at the start and the end of the run: below 2 when other
// processes hold a core, which caps every other speedup), {experiment}_cpu_speedup_2t (the same
// just before each experiment), and repeat, quick.
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "query/machine.h"
#include "query/mt_model.h"
#include "query/mt_ops.h"
#include "tools/bench/bench_util.h"

namespace sm::bench {
namespace {

namespace mt = query::mt;

constexpr uint32_t kValueRange = 1u << 31;
// A pure-compute 2-worker speedup at least this high means both cores were free.
constexpr double kFreeCores = 1.9;

struct Env {
  query::MachineInfo machine;
  mt::MtModelParams model;
  mt::WorkerPool* pools[2];
  int repeat = 3;
  nlohmann::json* json;
  std::vector<double> speedup_errors, time_errors;
  double cpu_speedup = 0;                   // of the experiment running now
  std::vector<double> free_speedup_errors;  // of points measured with both cores free
  double agg_best = 0, join_best = 0;
};

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

// Keys uniform over `distinct` values, values uniform below kValueRange.
mt::NsmTable MakeTable(size_t n, uint32_t tuple_bytes, uint64_t distinct, uint64_t seed) {
  mt::NsmTable table;
  Check(mt::NsmTable::Make(tuple_bytes, n, &table), "table");
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n; ++i) {
    table.Set(
        i, {static_cast<uint32_t>(rng() % distinct), static_cast<uint32_t>(rng() % kValueRange)});
  }
  return table;
}

// An inner table holding each of n / matches keys `matches` times, in random order.
mt::NsmTable MakeInner(size_t n, uint32_t tuple_bytes, uint64_t matches, uint64_t seed) {
  mt::NsmTable table;
  Check(mt::NsmTable::Make(tuple_bytes, n, &table), "table");
  std::mt19937_64 rng(seed);
  const uint64_t distinct = std::max<uint64_t>(1, n / matches);
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = static_cast<uint32_t>(i % distinct);
  std::shuffle(keys.begin(), keys.end(), rng);
  for (size_t i = 0; i < n; ++i)
    table.Set(i, {keys[i], static_cast<uint32_t>(rng() % kValueRange)});
  return table;
}

mt::Selection SelectionOf(double fraction) {
  return {static_cast<uint64_t>(fraction * kValueRange)};
}

struct Times {
  double ms_1t;
  double ms_2t;
};

// Medians of `repeat` runs at 1 and at 2 workers, the two alternating, so that a burst of load
// from other processes falls on both rather than on one.
Times TimeBoth(Env& env, const std::function<void(mt::WorkerPool&)>& run) {
  std::vector<double> ms[2];
  for (mt::WorkerPool* pool : env.pools) run(*pool);  // untimed: maps the pages later runs reuse
  for (int r = 0; r < env.repeat; ++r) {
    for (int t = 0; t < 2; ++t) {
      const double start = NowSeconds();
      run(*env.pools[t]);
      ms[t].push_back((NowSeconds() - start) * 1e3);
    }
  }
  return {Median(ms[0]), Median(ms[1])};
}

// One experiment point: measured at 1 and 2 workers, predicted, printed and recorded.
void Record(Env& env, const std::string& key, bool is_join, double ms1, double ms2,
            double model_ns1, double model_ns2) {
  const double speedup = ms1 / ms2, model_speedup = model_ns1 / model_ns2;
  std::printf("  %-34s %9.1f %9.1f %8.2f %8.2f %9.1f\n", key.c_str(), ms1, ms2, speedup,
              model_speedup, model_ns1 / 1e6);
  nlohmann::json& j = *env.json;
  j[key + "_ms_1t"] = ms1;
  j[key + "_ms_2t"] = ms2;
  j[key + "_model_ms_1t"] = model_ns1 / 1e6;
  j[key + "_speedup_2t"] = speedup;
  j[key + "_model_speedup_2t"] = model_speedup;
  env.speedup_errors.push_back(std::abs(model_speedup - speedup) / speedup * 100);
  env.time_errors.push_back(std::abs(model_ns1 / 1e6 - ms1) / ms1 * 100);
  if (env.cpu_speedup >= kFreeCores) env.free_speedup_errors.push_back(env.speedup_errors.back());
  double& best = is_join ? env.join_best : env.agg_best;
  best = std::max(best, speedup);
}

// What two workers can get from this machine now: the same pure computation per worker (no
// memory traffic) at 1 and 2 workers; 2 when both cores are free, less when other processes
// hold one.
double CpuSpeedup2t(Env& env) {
  const auto spin = [](int) {
    uint64_t x = 1;
    for (int i = 0; i < 50'000'000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
    static std::atomic<uint64_t> sink;
    sink.store(x, std::memory_order_relaxed);  // relaxed: only keeps the loop
  };
  const Times t = TimeBoth(env, [&](mt::WorkerPool& pool) { pool.Run(spin); });
  return 2 * t.ms_1t / t.ms_2t;  // two workers did twice the work
}

// Starts experiment `name`: its title, what a second worker gains on a pure computation just
// now ({name}_cpu_speedup_2t), and the column heads.
void Header(Env& env, const char* name, const char* title) {
  const double cpu = CpuSpeedup2t(env);
  env.cpu_speedup = cpu;
  (*env.json)[std::string(name) + "_cpu_speedup_2t"] = cpu;
  std::printf("\n%s (pure-compute 2-worker speedup now %.2f)\n  %-34s %9s %9s %8s %8s %9s\n", title,
              cpu, "point", "ms 1t", "ms 2t", "speedup", "model", "model ms");
}

void RunAgg(Env& env, const std::string& key, mt::AggAlgorithm a, const mt::NsmTable& table,
            double selectivity, uint64_t distinct) {
  mt::AggOptions options;
  options.map_distinct = distinct;
  const mt::Selection sel = SelectionOf(selectivity);
  auto run = [&](mt::WorkerPool& pool) {
    mt::GroupResult out;
    Check(mt::Aggregate(a, pool, table, sel, env.machine, options, &out), "aggregate");
  };
  mt::MtWorkload w;
  w.k = static_cast<double>(table.size());
  w.t = table.tuple_bytes();
  w.k_staged = w.k * selectivity;
  w.distinct = static_cast<double>(distinct);
  const Times t = TimeBoth(env, run);
  Record(env, key + "_" + mt::AggAlgorithmName(a), false, t.ms_1t, t.ms_2t,
         mt::ModelAggregationNs(env.model, a, w, 1), mt::ModelAggregationNs(env.model, a, w, 2));
}

const mt::AggAlgorithm kAggs[] = {mt::AggAlgorithm::kSort, mt::AggAlgorithm::kPartition,
                                  mt::AggAlgorithm::kMap};
const mt::MtJoinAlgorithm kJoins[] = {mt::MtJoinAlgorithm::kPartition,
                                      mt::MtJoinAlgorithm::kSortMerge};

void AggBySize(Env& env, size_t k) {
  Header(env, "agg_tuple", "aggregation by tuple size (D = 1000, selectivity 1)");
  for (uint32_t t : {8u, 16u, 32u, 64u, 128u, 256u}) {
    const mt::NsmTable table = MakeTable(k, t, 1000, t);
    for (auto a : kAggs) RunAgg(env, "agg_tuple_" + std::to_string(t), a, table, 1.0, 1000);
  }
}

void AggBySelectivity(Env& env, size_t k) {
  Header(env, "agg_sel", "aggregation by selectivity (72-byte tuples, D = 1000)");
  const mt::NsmTable table = MakeTable(k, 72, 1000, 1);
  for (int pct : {10, 25, 50, 100}) {
    for (auto a : kAggs) RunAgg(env, "agg_sel_" + std::to_string(pct), a, table, pct / 100.0, 1000);
  }
}

void AggByDistinct(Env& env, size_t k) {
  Header(env, "agg_distinct", "aggregation by distinct keys (72-byte tuples, selectivity 1)");
  for (uint64_t d : {10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull}) {
    const mt::NsmTable table = MakeTable(k, 72, d, d);
    for (auto a : kAggs) {
      if (a == mt::AggAlgorithm::kMap && d > 100000) continue;  // its arrays outgrow the caches
      RunAgg(env, "agg_distinct_" + std::to_string(d), a, table, 1.0, d);
    }
  }
}

void RunJoin(Env& env, const std::string& key, mt::MtJoinAlgorithm a, const mt::NsmTable& outer,
             const mt::NsmTable& inner, double inner_selectivity, double pairs, uint64_t distinct) {
  mt::MtJoinOptions options;
  options.materialize = false;
  const mt::Selection inner_sel = SelectionOf(inner_selectivity);
  auto run = [&](mt::WorkerPool& pool) {
    mt::JoinResult out;
    Check(mt::Join(a, pool, outer, {}, inner, inner_sel, env.machine, options, &out), "join");
  };
  mt::MtWorkload wo, wi;
  wo.k = wo.k_staged = static_cast<double>(outer.size());
  wo.t = outer.tuple_bytes();
  wi.k = static_cast<double>(inner.size());
  wi.k_staged = wi.k * inner_selectivity;
  wi.t = inner.tuple_bytes();
  wo.distinct = wi.distinct = static_cast<double>(distinct);
  const Times t = TimeBoth(env, run);
  Record(env, key + "_" + mt::MtJoinAlgorithmName(a), true, t.ms_1t, t.ms_2t,
         mt::ModelJoinNs(env.model, a, wo, wi, pairs, 1),
         mt::ModelJoinNs(env.model, a, wo, wi, pairs, 2));
}

void JoinBySize(Env& env, size_t k) {
  Header(env, "join_size",
         "joins by inner tuple size (outer 72 bytes, 10 matches per outer tuple)");
  const uint64_t distinct = k / 10;
  const mt::NsmTable outer = MakeTable(k, 72, distinct, 11);
  for (uint32_t t : {16u, 32u, 72u, 128u, 256u}) {
    const mt::NsmTable inner = MakeInner(k, t, 10, t);
    for (auto a : kJoins) {
      RunJoin(env, "join_size_" + std::to_string(t), a, outer, inner, 1.0, 10.0 * k, distinct);
    }
  }
}

void JoinBySelectivity(Env& env, size_t k) {
  Header(env, "join_sel",
         "joins by inner selectivity (72-byte tuples, inner 4x outer, 10 matches at 1)");
  const uint64_t distinct = 4 * k / 10;
  const mt::NsmTable outer = MakeTable(k, 72, distinct, 12);
  const mt::NsmTable inner = MakeInner(4 * k, 72, 10, 13);
  for (int pct : {10, 25, 50, 100}) {
    for (auto a : kJoins) {
      RunJoin(env, "join_sel_" + std::to_string(pct), a, outer, inner, pct / 100.0,
              10.0 * k * pct / 100, distinct);
    }
  }
}

void JoinByMatches(Env& env, size_t k) {
  Header(env, "join_matches", "joins by matches per outer tuple (72-byte tuples)");
  for (uint64_t m : {1ull, 4ull, 10ull, 100ull, 1000ull}) {
    const uint64_t distinct = std::max<uint64_t>(1, k / m);
    const mt::NsmTable outer = MakeTable(k, 72, distinct, 14 + m);
    const mt::NsmTable inner = MakeInner(k, 72, m, 15 + m);
    for (auto a : kJoins) {
      RunJoin(env, "join_matches_" + std::to_string(m), a, outer, inner, 1.0,
              static_cast<double>(k) * m, distinct);
    }
  }
}

// The pipeline's hand-off: worker t copies its part of a join's output into the next
// operator's table, at the offset the parts before it take.
void ToTable(mt::WorkerPool& pool, const mt::JoinResult& rows, bool key_from_inner,
             mt::NsmTable* out) {
  std::vector<size_t> offsets(rows.parts.size() + 1, 0);
  for (size_t t = 0; t < rows.parts.size(); ++t)
    offsets[t + 1] = offsets[t] + rows.parts[t].rows.size();
  Check(mt::NsmTable::Make(8, offsets.back(), out), "table");
  pool.Run([&](int t) {
    if (static_cast<size_t>(t) >= rows.parts.size()) return;
    size_t at = offsets[t];
    for (const mt::JoinRow& r : rows.parts[t].rows) {
      out->Set(at++, key_from_inner ? mt::Kv{r.inner_value, r.outer_value}
                                    : mt::Kv{r.key, r.outer_value});
    }
  });
}

struct PipelinePlan {
  const char* name;  // the JSON prefix
  mt::MtJoinAlgorithm join;
  bool group_on_join_key;  // group on C's key (D = |C| / 10), else on C's value (D = 1000)
};

// Two joins and an aggregation over tables A, B, C of k tuples: A joins B on A's key with 4
// matches, the result joins C on B's value with 10 matches, and the rows are summed per group.
// The aggregation is the one ChooseAggregation picks: map for 1,000 groups; merge when the
// groups are C's keys and the sort-merge join has left its output ordered on them.
void Pipeline(Env& env, size_t k) {
  Header(env, "pipeline", "pipeline: (A join B, 4 matches) join C (10 matches), then aggregation");
  const uint64_t c_distinct = k / 10;
  const mt::NsmTable a = MakeTable(k, 72, k / 4, 21);
  const mt::NsmTable b = MakeInner(k, 72, 4, 22);
  mt::NsmTable b_fixed, c;
  Check(mt::NsmTable::Make(72, k, &b_fixed), "table");
  std::mt19937_64 rng(23);
  for (size_t i = 0; i < k; ++i) {
    b_fixed.Set(i, {b.Get(i).key, static_cast<uint32_t>(rng() % c_distinct)});
  }
  Check(mt::NsmTable::Make(72, k, &c), "table");
  const mt::NsmTable c_keys = MakeInner(k, 72, 10, 24);
  for (size_t i = 0; i < k; ++i) c.Set(i, {c_keys.Get(i).key, static_cast<uint32_t>(rng() % 1000)});
  const PipelinePlan plans[] = {{"pipeline", mt::MtJoinAlgorithm::kPartition, false},
                                {"pipeline_merge", mt::MtJoinAlgorithm::kSortMerge, true}};
  for (const PipelinePlan& plan : plans) {
    const uint64_t groups_expected = plan.group_on_join_key ? c_distinct : 1000;
    const mt::AggAlgorithm agg =
        mt::ChooseAggregation(groups_expected, plan.group_on_join_key, env.machine);
    uint64_t tuples = 0;
    auto run = [&](mt::WorkerPool& pool) {
      mt::JoinResult ab, abc;
      mt::NsmTable ab_table, abc_table;
      Check(mt::Join(plan.join, pool, a, {}, b_fixed, {}, env.machine, {}, &ab), "join");
      ToTable(pool, ab, true, &ab_table);  // key: B's value, C's key
      Check(mt::Join(plan.join, pool, ab_table, {}, c, {}, env.machine, {}, &abc), "join");
      ToTable(pool, abc, !plan.group_on_join_key, &abc_table);
      mt::AggOptions options;
      options.map_distinct = groups_expected;
      mt::GroupResult groups;
      Check(mt::Aggregate(agg, pool, abc_table, {}, env.machine, options, &groups), "aggregate");
      tuples = abc_table.size();
    };
    const Times t = TimeBoth(env, run);
    const double per_s1 = tuples / (t.ms_1t / 1e3), per_s2 = tuples / (t.ms_2t / 1e3);
    const std::string name = std::string(plan.name) + "_" + mt::MtJoinAlgorithmName(plan.join) +
                             "_" + mt::AggAlgorithmName(agg);
    std::printf("  %-34s %9.1f %9.1f %8.2f   (%llu tuples into the aggregation; %.1fM/s at 2t)\n",
                name.c_str(), t.ms_1t, t.ms_2t, t.ms_1t / t.ms_2t,
                static_cast<unsigned long long>(tuples), per_s2 / 1e6);
    nlohmann::json& j = *env.json;
    const std::string key = plan.name;
    j[key + "_ms_1t"] = t.ms_1t;
    j[key + "_ms_2t"] = t.ms_2t;
    j[key + "_tuples"] = tuples;
    j[key + "_tuples_per_s_1t"] = per_s1;
    j[key + "_tuples_per_s_2t"] = per_s2;
    j[key + "_speedup_2t"] = t.ms_1t / t.ms_2t;
  }
}

}  // namespace
}  // namespace sm::bench

int main(int argc, char** argv) {
  using namespace sm::bench;
  CLI::App app{"multithreaded operators at 1 and 2 workers against their model"};
  int repeat = 3;
  bool quick = false;
  std::vector<std::string> only;
  app.add_option("--repeat", repeat, "runs per point; the median is reported")
      ->check(CLI::Range(1, 100));
  app.add_flag("--quick", quick, "small tables, one run per point: a smoke run");
  app.add_option("--only", only, "experiments to run, comma-separated; default all")
      ->delimiter(',')
      ->check(CLI::IsMember({"agg_tuple", "agg_sel", "agg_distinct", "join_size", "join_sel",
                             "join_matches", "pipeline"}));
  CLI11_PARSE(app, argc, argv);
  if (quick) repeat = 1;
  mallopt(M_MMAP_MAX, 0);  // every size from the heap, which keeps what is freed
  mallopt(M_TRIM_THRESHOLD, INT32_MAX);

  Env env;
  env.machine = sm::query::ReadMachine();
  mt::WorkerPool one(1), two(2);
  env.pools[0] = &one;
  env.pools[1] = &two;
  env.repeat = repeat;
  nlohmann::json json;
  env.json = &json;
  env.model = mt::CalibrateModel(env.machine, two);
  std::printf("machine: L1d %llu KiB, L2 %llu KiB, L3 %llu KiB, %d cpus\nmodel: %s\n",
              static_cast<unsigned long long>(env.machine.l1d_bytes >> 10),
              static_cast<unsigned long long>(env.machine.l2_bytes >> 10),
              static_cast<unsigned long long>(env.machine.l3_bytes >> 10), env.machine.cpu_count,
              env.model.Describe().c_str());

  const double cpu_before = CpuSpeedup2t(env);
  std::printf("pure-compute 2-worker speedup now: %.2f\n", cpu_before);
  const size_t k = quick ? 200'000 : 1'000'000;
  const auto want = [&](const char* name) {
    return only.empty() || std::find(only.begin(), only.end(), name) != only.end();
  };
  if (want("agg_tuple")) AggBySize(env, k);
  if (want("agg_sel")) AggBySelectivity(env, quick ? 400'000 : 4'000'000);
  if (want("agg_distinct")) AggByDistinct(env, quick ? 400'000 : 4'000'000);
  if (want("join_size")) JoinBySize(env, k);
  if (want("join_sel")) JoinBySelectivity(env, quick ? 100'000 : 1'000'000);
  if (want("join_matches")) JoinByMatches(env, quick ? 50'000 : 500'000);
  if (want("pipeline")) Pipeline(env, quick ? 100'000 : 1'000'000);

  const double cpu_after = CpuSpeedup2t(env);
  json["cpu_speedup_2t_before"] = cpu_before;
  json["cpu_speedup_2t_after"] = cpu_after;
  json["agg_speedup_2t_best"] = env.agg_best;
  json["join_speedup_2t_best"] = env.join_best;
  json["model_error_pct"] = Median(env.speedup_errors);
  json["model_error_pct_max"] =
      env.speedup_errors.empty()
          ? 0.0
          : *std::max_element(env.speedup_errors.begin(), env.speedup_errors.end());
  json["model_time_error_pct"] = Median(env.time_errors);
  json["model_error_pct_free_cores"] = Median(env.free_speedup_errors);
  json["points_free_cores"] = env.free_speedup_errors.size();
  json["cal_l1_ns"] = env.model.l1_ns;
  json["cal_block_l1_ns"] = env.model.block_l1_ns;
  json["cal_merge_l1_ns"] = env.model.merge_l1_ns;
  json["cal_map_l1_ns"] = env.model.map_l1_ns;
  json["cal_route_ns"] = env.model.route_ns;
  json["cal_l2_ns"] = env.model.l2_ns;
  json["cal_mem_ns"] = env.model.mem_ns;
  json["cal_mem_ns_2t"] = env.model.mem_ns_2t;
  json["cal_to_ns"] = env.model.to_ns;
  json["cal_out_ns"] = env.model.out_ns;
  json["repeat"] = repeat;
  json["quick"] = quick;
  std::printf("\npure-compute 2-worker speedup at the end: %.2f\n", cpu_after);
  std::printf(
      "best 2-worker speedup: aggregation %.2f, join %.2f; model speedup error %.1f %% "
      "(median), %.1f %% (max), %.1f %% over %zu points with both cores free; model time error "
      "%.1f %% (median)\n",
      env.agg_best, env.join_best, Median(env.speedup_errors),
      json["model_error_pct_max"].get<double>(), Median(env.free_speedup_errors),
      env.free_speedup_errors.size(), Median(env.time_errors));
  PrintJsonLine(json);
  return 0;
}
