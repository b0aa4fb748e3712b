// Counter-based random numbers (Philox-4x32-10): a (seed, counter) pair names every draw, so a
// run is reproducible bit for bit from one seed, on any thread count and later on any device.
#pragma once
#include <atomic>
#include <cstdint>

#include "backend/tensor.h"

namespace keras {

// A stream of random numbers; each call advances the counter by what it consumed. Draws from
// several threads at once (random ops in a parallel Dataset.map) are safe, in no fixed order.
class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : seed_(seed) {}
  Generator(const Generator& other) : seed_(other.seed_), counter_(other.counter_.load()) {}
  Generator& operator=(const Generator& other) {
    seed_ = other.seed_;
    counter_.store(other.counter_.load());
    return *this;
  }
  uint64_t seed() const { return seed_; }
  // Reserves `n` 128-bit blocks and returns the first counter value.
  uint64_t advance(uint64_t n) { return counter_.fetch_add(n, std::memory_order_relaxed); }
  // A fresh 64-bit seed derived from this stream (for seeding sub-generators).
  uint64_t next_seed();

 private:
  uint64_t seed_;
  std::atomic<uint64_t> counter_{0};
};

// Philox-4x32-10 block for (seed, counter): four uniform 32-bit words.
void philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]);

// The process-wide generator used when no seed is given (keras.utils.set_random_seed).
Generator& global_generator();
void set_random_seed(uint64_t seed);

namespace random {
// Floating outputs (float32 default). Throw ValueError for stddev < 0 or minval > maxval.
Tensor normal(const Shape& shape, double mean, double stddev, Generator& gen, DType dtype = DType::float32);
Tensor uniform(const Shape& shape, double minval, double maxval, Generator& gen, DType dtype = DType::float32);
// Normal redrawn until within two standard deviations of the mean (Keras TruncatedNormal).
Tensor truncated_normal(const Shape& shape, double mean, double stddev, Generator& gen,
                        DType dtype = DType::float32);
// Seeded convenience forms: a fresh Generator(seed).
Tensor normal(const Shape& shape, double mean, double stddev, uint64_t seed, DType dtype = DType::float32);
Tensor uniform(const Shape& shape, double minval, double maxval, uint64_t seed, DType dtype = DType::float32);
Tensor truncated_normal(const Shape& shape, double mean, double stddev, uint64_t seed,
                        DType dtype = DType::float32);
}  // namespace random

}  // namespace keras
