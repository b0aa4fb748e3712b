// A small deterministic mutation fuzzer for the file readers, run briefly by the tests.
//
// A fuzz target is `void(const std::string& bytes)`: it parses the bytes and may throw only
// keras::Error (a typed, explained rejection). Any other exception is a test failure; a crash
// kills the test. Seeds are valid files (the real-Keras fixtures); mutations are reproducible
// from the seed number the failure message prints.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/errors.h"

namespace keras::testing {

using FuzzTarget = std::function<void(const std::string& bytes)>;

struct FuzzStats {
  int accepted = 0;  // inputs the target read without error
  int rejected = 0;  // inputs it rejected with keras::Error
};

// splitmix64: enough randomness for mutations, fully reproducible from `seed`.
class FuzzRng {
 public:
  explicit FuzzRng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(next() % n); }

 private:
  uint64_t state_;
};

// One mutation of `input`: a truncation, bit flips, "interesting" bytes or words (0, 0xFF..,
// 0x7F.., 0x80..) written at a random offset, or a chunk deleted or duplicated.
inline std::string mutate(const std::string& input, FuzzRng& rng) {
  std::string s = input;
  if (s.empty()) return std::string(1, static_cast<char>(rng.next()));
  switch (rng.below(6)) {
    case 0:
      s.resize(rng.below(s.size()));
      break;
    case 1:
      for (size_t k = 1 + rng.below(8); k > 0; --k) s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
      break;
    case 2: {
      static const unsigned char bytes[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0xFE};
      for (size_t k = 1 + rng.below(4); k > 0; --k) s[rng.below(s.size())] = static_cast<char>(bytes[rng.below(6)]);
      break;
    }
    case 3: {
      static const uint64_t words[] = {0, ~0ull, 0x7FFFFFFFFFFFFFFFull, 0x80000000ull, 0xFFFFFFFFull, 1ull << 40};
      const uint64_t w = words[rng.below(6)];
      const size_t width = rng.below(2) ? 4 : 8, at = rng.below(s.size());
      for (size_t b = 0; b < width && at + b < s.size(); ++b) s[at + b] = static_cast<char>((w >> (8 * b)) & 0xFF);
      break;
    }
    case 4: {
      const size_t at = rng.below(s.size()), len = 1 + rng.below(std::min<size_t>(64, s.size() - at));
      s.erase(at, len);
      break;
    }
    default: {
      const size_t at = rng.below(s.size()), len = 1 + rng.below(std::min<size_t>(64, s.size() - at));
      s.insert(at, s.substr(at, len));
      break;
    }
  }
  return s;
}

// Runs `target` on every seed and on `iterations` mutations of them. Fails the current test
// (naming the iteration, so it reproduces) when the target throws anything but keras::Error.
inline FuzzStats run_fuzz(const std::vector<std::string>& seeds, int iterations, uint64_t rng_seed,
                          const FuzzTarget& target) {
  FuzzStats stats;
  FuzzRng rng(rng_seed);
  auto one = [&](const std::string& bytes, int iteration) {
    try {
      target(bytes);
      ++stats.accepted;
    } catch (const keras::Error&) {
      ++stats.rejected;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "fuzz iteration " << iteration << " (seed " << rng_seed << "): untyped exception: " << e.what();
    }
  };
  for (const auto& s : seeds) one(s, -1);
  for (int i = 0; i < iterations && !seeds.empty(); ++i) {
    std::string input = seeds[rng.below(seeds.size())];
    for (size_t k = 1 + rng.below(3); k > 0; --k) input = mutate(input, rng);
    one(input, i);
  }
  return stats;
}

}  // namespace keras::testing
