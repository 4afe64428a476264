// Shared helpers for benchmark binaries: timing, medians, and the closing JSON line.
//
// Every benchmark prints readable figures and ends its output with exactly one line holding a
// JSON object of its figures (the keys its header comment lists), so scripts can take the last
// line.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sm::bench {

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

inline double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline void PrintJsonLine(const nlohmann::json& figures) {
  std::printf("%s\n", figures.dump().c_str());
  std::fflush(stdout);
}

}  // namespace sm::bench
