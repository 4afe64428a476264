// Random input of TPC-C (clause 2.1, clause 4.3.2): uniform numbers, NURand with its C
// constants and the C-load / C-run rule, random strings, and customer last names.
//
// Owns: the random generator every part of the workload uses (xoshiro256**, seeded through
// splitmix64, so a seed replays a load or a run exactly) and the text rules of clause 4.3.2.
//
// Thread/fiber safety: a Rng is used by one fiber at a time; the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sm::tpcc {

class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (uint64_t& s : state_) s = SplitMix(&seed);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }
  // Uniform in [lo, hi] (both inclusive), as the specification's random(x, y).
  int64_t Uniform(int64_t lo, int64_t hi) {
    uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
    // Lemire's multiply-shift; the bias for spans this small is far below what matters here.
    return lo + static_cast<int64_t>((static_cast<unsigned __int128>(Next()) * span) >> 64);
  }
  // Clause 2.1.6: NURand(A, x, y) = (((random(0, A) | random(x, y)) + C) % (y - x + 1)) + x.
  int64_t NURand(int64_t a, int64_t x, int64_t y, int64_t c) {
    return (((Uniform(0, a) | Uniform(x, y)) + c) % (y - x + 1)) + x;
  }
  // A negative exponential with the given mean, truncated at 10 means (clause 5.2.5.4).
  double Exponential(double mean);

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  static uint64_t SplitMix(uint64_t* x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint64_t state_[4];
};

// A seed for stream `stream` derived from a base seed (independent loader units, terminals).
uint64_t DeriveSeed(uint64_t seed, uint64_t stream);

// The NURand A values of clause 2.1.6.
inline constexpr int64_t kNuLast = 255;   // C_LAST
inline constexpr int64_t kNuCId = 1023;   // C_ID
inline constexpr int64_t kNuItem = 8191;  // OL_I_ID

// The C constants: chosen at load, and for the run derived from the load's by the rule of
// clause 2.1.6.1 (C_LAST: |C_run - C_load| in [65, 119] and not 96 or 112; C_ID and OL_I_ID:
// any value in [0, A]).
struct NuConstants {
  uint32_t c_last = 0, c_id = 0, ol_i_id = 0;
  static NuConstants ForLoad(Rng& rng);
  static NuConstants ForRun(const NuConstants& load, Rng& rng);
};
// The rule above for C_LAST.
bool ValidCLastDelta(uint32_t c_load, uint32_t c_run);

// Clause 4.3.2.2: a-string (alphanumeric) and n-string (digits) of random length [lo, hi].
std::string AString(Rng& rng, int lo, int hi);
std::string NString(Rng& rng, int lo, int hi);
// I_DATA / S_DATA: an a-string of [26, 50] with "ORIGINAL" at a random position in 10 % of
// the rows (clause 4.3.3.1).
std::string DataWithOriginal(Rng& rng, bool* original = nullptr);
// Clause 4.3.2.7: zip = 4 random digits followed by "11111".
std::string Zip(Rng& rng);
// Clause 4.3.2.3: the last name of number 0..999, from the syllables
// BAR OUGHT ABLE PRI PRES ESE ANTI CALLY ATION EING.
std::string LastName(uint32_t number);
// The last name of a customer at run time: LastName(NURand(255, 0, 999)).
inline std::string RandomLastName(Rng& rng, const NuConstants& c) {
  return LastName(static_cast<uint32_t>(rng.NURand(kNuLast, 0, 999, c.c_last)));
}

}  // namespace sm::tpcc
