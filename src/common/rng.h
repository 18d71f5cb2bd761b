// A small, fast, reproducible random number generator (xoshiro256**, seeded by splitmix64).
// Its whole state is four 64-bit words, so checkpoints store it exactly and a resumed run draws
// the same numbers. Independent streams (per task, per trial, per rank) come from mixing a
// stream id into the seed, never from sharing one generator across owners.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>

namespace leap {

class Rng {
 public:
  using State = std::array<uint64_t, 4>;

  explicit Rng(uint64_t seed = 0, uint64_t stream = 0) { reseed(seed, stream); }

  void reseed(uint64_t seed, uint64_t stream = 0) {
    uint64_t x = seed ^ (stream * 0xD1B54A32D192ED03ull);
    for (auto& w : s_) w = splitmix64(&x);
    has_spare_ = false;
  }

  uint64_t next_u64() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Uniform integer in [0, n); n > 0. Lemire's multiply-shift with rejection: no modulo bias.
  uint64_t below(uint64_t n) {
    for (;;) {
      __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
      uint64_t low = static_cast<uint64_t>(m);
      if (low >= n || low >= (-n) % n) return static_cast<uint64_t>(m >> 64);
    }
  }
  // Standard normal (Box-Muller; the spare is part of the state).
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 0;
    while (u1 <= 0) u1 = uniform();
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * M_PI * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * M_PI * u2);
  }

  // Exact state, for checkpoints. The Box-Muller spare is dropped: callers that need bitwise
  // resume draw normals in pairs or reseed per use.
  State state() const { return s_; }
  void set_state(const State& s) {
    s_ = s;
    has_spare_ = false;
  }

  static uint64_t splitmix64(uint64_t* x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  State s_{};
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace leap
