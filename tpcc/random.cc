// Random input of TPC-C: see random.h.
#include "tpcc/random.h"

#include <cmath>
#include <cstdlib>

namespace sm::tpcc {

double Rng::Exponential(double mean) {
  if (mean <= 0) return 0;
  // 53 random bits in (0, 1].
  double u = (static_cast<double>(Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double x = -std::log(u) * mean;
  return x > 10 * mean ? 10 * mean : x;
}

uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed ^ (stream * 0xD1B54A32D192ED03ull);
  z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDull;
  z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ull;
  return z ^ (z >> 33);
}

bool ValidCLastDelta(uint32_t c_load, uint32_t c_run) {
  int delta = std::abs(static_cast<int>(c_load) - static_cast<int>(c_run));
  return delta >= 65 && delta <= 119 && delta != 96 && delta != 112;
}

NuConstants NuConstants::ForLoad(Rng& rng) {
  NuConstants c;
  c.c_last = static_cast<uint32_t>(rng.Uniform(0, kNuLast));
  c.c_id = static_cast<uint32_t>(rng.Uniform(0, kNuCId));
  c.ol_i_id = static_cast<uint32_t>(rng.Uniform(0, kNuItem));
  return c;
}

NuConstants NuConstants::ForRun(const NuConstants& load, Rng& rng) {
  NuConstants c;
  // Some C_load values have valid partners on one side only; drawing until one fits ends fast
  // (at least 50 of the 256 values are valid for every C_load).
  do {
    c.c_last = static_cast<uint32_t>(rng.Uniform(0, kNuLast));
  } while (!ValidCLastDelta(load.c_last, c.c_last));
  c.c_id = static_cast<uint32_t>(rng.Uniform(0, kNuCId));
  c.ol_i_id = static_cast<uint32_t>(rng.Uniform(0, kNuItem));
  return c;
}

std::string AString(Rng& rng, int lo, int hi) {
  static constexpr char kAlnum[] =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  int n = static_cast<int>(rng.Uniform(lo, hi));
  std::string s(n, ' ');
  for (char& ch : s) ch = kAlnum[rng.Uniform(0, sizeof(kAlnum) - 2)];
  return s;
}

std::string NString(Rng& rng, int lo, int hi) {
  int n = static_cast<int>(rng.Uniform(lo, hi));
  std::string s(n, '0');
  for (char& ch : s) ch = static_cast<char>('0' + rng.Uniform(0, 9));
  return s;
}

std::string DataWithOriginal(Rng& rng, bool* original) {
  std::string s = AString(rng, 26, 50);
  bool orig = rng.Uniform(1, 100) <= 10;
  if (orig) s.replace(rng.Uniform(0, static_cast<int64_t>(s.size()) - 8), 8, "ORIGINAL");
  if (original != nullptr) *original = orig;
  return s;
}

std::string Zip(Rng& rng) { return NString(rng, 4, 4) + "11111"; }

std::string LastName(uint32_t number) {
  static constexpr const char* kSyllables[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                               "ESE", "ANTI",  "CALLY", "ATION", "EING"};
  std::string s = kSyllables[(number / 100) % 10];
  s += kSyllables[(number / 10) % 10];
  s += kSyllables[number % 10];
  return s;
}

}  // namespace sm::tpcc
