// The TF32 switch of keras::cuda (contract: backend/cuda.h), in one place for builds with and
// without the CUDA backend. On by default, as in Keras on TensorFlow (and JAX) on Ampere and
// later GPUs, and as PyTorch's cuDNN convolutions: float32 training at tensor-core speed, at the
// cost of a 10-bit mantissa in the products. KERAS_ALLOW_TF32=0 turns it off from the start
// (the test suite does, to compare GPU kernels with the CPU at float32 precision).
#include <atomic>
#include <cstdlib>
#include <string>

#include "backend/cuda.h"
#include "backend/errors.h"

namespace keras::cuda {
namespace {
std::atomic<int> g_tf32{-1};  // -1: the environment not read yet; else 0 or 1
}

bool tf32_from_environment(const char* value) {
  if (value == nullptr || *value == '\0') return true;
  const std::string v = value;
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  fail<ValueError>("KERAS_ALLOW_TF32", "0 or 1", "'" + v + "'", "Unset it for the default (TF32 on, as in Keras).");
}

void set_allow_tf32(bool allow) { g_tf32.store(allow ? 1 : 0); }

bool allow_tf32() {
  int v = g_tf32.load(std::memory_order_relaxed);
  if (v >= 0) return v == 1;
  // A bad value throws here and is not remembered: every later call throws the same.
  int from_env = tf32_from_environment(std::getenv("KERAS_ALLOW_TF32")) ? 1 : 0;
  g_tf32.compare_exchange_strong(v, from_env);  // a set_allow_tf32 in between wins
  return g_tf32.load() == 1;
}

}  // namespace keras::cuda
