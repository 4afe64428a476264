// Helpers shared by tests: seeds for [random] tests and a fiber runtime.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>

#include "threads/runtime.h"

namespace sm::test {

// True in the sanitizer builds (-DSM_SANITIZE=...), where heavy randomized tests run fewer
// iterations to stay inside the per-test timeout.
#if defined(SM_ASAN) || defined(SM_TSAN)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

// The seed of a [random] test: SM_SEED from the environment if set (to replay a failure),
// else a fresh one. Always printed, so every failing run can be replayed.
inline uint64_t TestSeed(const char* test_name) {
  uint64_t seed;
  if (const char* env = std::getenv("SM_SEED")) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = std::random_device{}();
    seed = (seed << 32) ^ std::random_device{}();
  }
  std::printf("[%s] seed %llu (replay with SM_SEED=%llu)\n", test_name,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  return seed;
}

// A fiber runtime with `workers` workers (REQUIREs that it starts).
inline std::unique_ptr<threads::Runtime> MakeRuntime(unsigned workers) {
  threads::RuntimeOptions options;
  options.workers = workers;
  std::unique_ptr<threads::Runtime> rt;
  REQUIRE(threads::Runtime::Create(options, &rt).ok());
  return rt;
}

}  // namespace sm::test
