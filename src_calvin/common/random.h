// Cheap seeded randomness for load generation: splitmix64 plus a Gray et al.
// zipfian sampler (one pow() per key, constants computed once).
#pragma once
#include <cmath>
#include <cstdint>

namespace paxflow {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by multiply-shift (Lemire); n > 0.
  uint64_t Uniform(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }
  // Uniform in [0, 1).
  double UnitDouble() { return (Next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

// Ranks in [0, n) with P(rank i) proportional to 1 / (i + 1)^theta, 0 < theta < 1.
class ZipfianSampler {
 public:
  ZipfianSampler(uint64_t n, double theta) : n_(n), theta_(theta) {
    double zeta2 = Zeta(2, theta);
    zetan_ = Zeta(n, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta);
  }
  uint64_t Sample(SplitMix64& rng) const {
    double u = rng.UnitDouble();
    double uz = u * zetan_;
    if (uz < 1.0) return 0;
    if (uz < half_pow_theta_) return n_ > 1 ? 1 : 0;
    uint64_t rank = static_cast<uint64_t>(static_cast<double>(n_) *
                                          std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return rank < n_ ? rank : n_ - 1;
  }
  uint64_t n() const { return n_; }

 private:
  static double Zeta(uint64_t n, double theta) {
    double sum = 0;
    for (uint64_t i = 1; i <= n; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
    return sum;
  }
  uint64_t n_;
  double theta_;
  double zetan_, alpha_, eta_, half_pow_theta_;
};

}  // namespace paxflow
