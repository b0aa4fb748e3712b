#include "backend/random.h"

#include <cmath>

namespace keras {

void philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u, kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * c0;
    uint64_t p1 = static_cast<uint64_t>(kM1) * c2;
    uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0;
    uint32_t n1 = static_cast<uint32_t>(p1);
    uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    uint32_t n3 = static_cast<uint32_t>(p0);
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += kW0;
    k1 += kW1;
  }
  out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

uint64_t Generator::next_seed() {
  uint32_t w[4];
  philox4x32(seed_, advance(1), w);
  return (static_cast<uint64_t>(w[0]) << 32) | w[1];
}

Generator& global_generator() {
  static Generator gen(1337);
  return gen;
}

void set_random_seed(uint64_t seed) { global_generator() = Generator(seed); }

namespace random {
namespace {
// Uniform in (0, 1): 24 random bits, never exactly 0 so that log() is finite.
inline double unit(uint32_t w) { return (static_cast<double>(w >> 8) + 0.5) / 16777216.0; }

template <class Fill>
Tensor make(const Shape& shape, DType dtype, const char* where, Fill fill) {
  if (!is_floating(dtype)) fail<TypeError>(where, "a floating dtype", dtype_name(dtype));
  Tensor t = Tensor::empty(shape, dtype, Device::cpu());
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) fill(static_cast<T*>(t.raw_data()), t.numel());
  });
  return default_device() == Device::cpu() ? t : t.to(default_device());
}

void normals(Generator& gen, int64_t n, double mean, double stddev, bool truncated, auto* out) {
  int64_t i = 0;
  while (i < n) {
    uint32_t w[4];
    philox4x32(gen.seed(), gen.advance(1), w);
    for (int pair = 0; pair < 2 && i < n; ++pair) {
      double u1 = unit(w[2 * pair]), u2 = unit(w[2 * pair + 1]);
      double r = std::sqrt(-2.0 * std::log(u1));
      for (double z : {r * std::cos(2 * M_PI * u2), r * std::sin(2 * M_PI * u2)}) {
        if (i >= n) break;
        if (truncated && std::abs(z) > 2.0) continue;
        out[i++] = static_cast<std::remove_pointer_t<decltype(out)>>(mean + stddev * z);
      }
    }
  }
}
}  // namespace

Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype) {
  if (stddev < 0) fail<ValueError>("random::normal", "stddev >= 0", std::to_string(stddev));
  return make(shape, dtype, "random::normal", [&](auto* p, int64_t n) { normals(gen, n, mean, stddev, false, p); });
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype) {
  if (stddev < 0) fail<ValueError>("random::truncated_normal", "stddev >= 0", std::to_string(stddev));
  return make(shape, dtype, "random::truncated_normal",
              [&](auto* p, int64_t n) { normals(gen, n, mean, stddev, true, p); });
}

Tensor uniform(const Shape& shape, double minval, double maxval, Generator& gen, DType dtype) {
  if (minval > maxval)
    fail<ValueError>("random::uniform", "minval <= maxval", std::to_string(minval) + " > " + std::to_string(maxval));
  return make(shape, dtype, "random::uniform", [&](auto* p, int64_t n) {
    using T = std::remove_pointer_t<decltype(p)>;
    for (int64_t i = 0; i < n; i += 4) {
      uint32_t w[4];
      philox4x32(gen.seed(), gen.advance(1), w);
      for (int64_t j = 0; j < 4 && i + j < n; ++j) p[i + j] = static_cast<T>(minval + (maxval - minval) * unit(w[j]));
    }
  });
}

Tensor normal(const Shape& shape, double mean, double stddev, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return normal(shape, mean, stddev, gen, dtype);
}
Tensor uniform(const Shape& shape, double minval, double maxval, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return uniform(shape, minval, maxval, gen, dtype);
}
Tensor truncated_normal(const Shape& shape, double mean, double stddev, uint64_t seed, DType dtype) {
  Generator gen(seed);
  return truncated_normal(shape, mean, stddev, gen, dtype);
}
}  // namespace random

}  // namespace keras
