// Single-op GPU timings, the rows of ../shared/gpu/README.md's first table plus the kernels a
// convnet's step spends its time in, on random float32 data already on the device. Prints one
// JSON line per op ({"op", "ms"}: the median over 5 timed runs of the mean time per call, with
// the device synchronised around each run) and the same rows come from gpu_op_bench.py for
// PyTorch on the same card.
//   gpu_op_bench [--ops add,sum_all,...]
#include <keras/keras.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backend/ops_conv.h"
#include "backend/ops_nn.h"

namespace k = keras;
using Clock = std::chrono::steady_clock;

namespace {

double median_ms(const std::function<void()>& op) {
  for (int i = 0; i < 3; ++i) op();  // warm-up: handles, algorithm searches, cached blocks
  k::cuda::synchronize(0);
  // Calls per run: enough for ~50 ms.
  auto t0 = Clock::now();
  op();
  k::cuda::synchronize(0);
  double once = std::chrono::duration<double>(Clock::now() - t0).count();
  int calls = std::clamp(static_cast<int>(0.05 / std::max(once, 1e-6)), 1, 2000);
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    auto t = Clock::now();
    for (int i = 0; i < calls; ++i) op();
    k::cuda::synchronize(0);
    runs.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t).count() / calls);
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

k::Tensor randn(const k::Shape& s, uint64_t seed) {
  return k::random::normal(s, 0.0, 1.0, seed).to(k::Device::cuda(0));
}

}  // namespace

int main(int argc, char** argv) {
  std::string only = argc > 2 && std::string(argv[1]) == "--ops" ? "," + std::string(argv[2]) + "," : "";
  if (k::cuda::device_count() == 0) {
    std::fprintf(stderr, "gpu_op_bench: expected a CUDA device, got none: %s\n", k::cuda::unavailable_reason().c_str());
    return 77;
  }
  k::cuda::set_allow_tf32(false);  // every row but the last in exact float32
  const int64_t big = 64 << 20;
  k::Tensor a = randn({big}, 1), b = randn({big}, 2);
  k::Tensor m = randn({8192, 8192}, 3), m2 = randn({8192, 8192}, 4);
  k::Tensor xd = randn({128, 784}, 5), wd = randn({784, 256}, 6), bd = randn({256}, 7);
  k::Tensor xc = randn({128, 32, 32, 64}, 8), wc = randn({3, 3, 64, 64}, 9), bc = randn({64}, 10);
  k::Tensor logits = randn({4096, 1000}, 11);
  k::Tensor gamma = randn({64}, 12), beta = randn({64}, 13);
  struct Row {
    std::string name;
    std::function<void()> fn;
  };
  std::vector<Row> rows = {
      {"add_64M", [&] { k::ops::add(a, b); }},
      {"relu_64M", [&] { k::ops::relu(a); }},
      {"sum_all_64M", [&] { k::ops::sum(a); }},
      {"max_all_64M", [&] { k::ops::max(a); }},
      {"sum_axis0_8192sq", [&] { k::ops::sum(m, {0}); }},
      {"sum_axis1_8192sq", [&] { k::ops::sum(m, {1}); }},
      {"matmul_8192_fp32", [&] { k::ops::matmul(m, m2); }},
      {"dense_128x784x256_relu", [&] { k::ops::dense(xd, wd, bd, "relu"); }},
      {"conv3x3_128x32x32x64", [&] { k::ops::conv2d(xc, wc, bc, {.padding = "same", .activation = "relu"}); }},
      {"conv3x3_128x32x32x64_train",
       [&] {
         k::GradientTape tape;
         k::Tensor w = wc;
         tape.watch(w);
         k::Tensor x = xc;
         tape.watch(x);
         k::Tensor y = k::ops::conv2d(x, w, {}, {.padding = "same"});
         tape.gradient(k::ops::sum(y), {x, w});
       }},
      {"max_pool2x2_128x32x32x64", [&] { k::ops::max_pool2d(xc, {2, 2}, {2, 2}); }},
      {"softmax_4096x1000", [&] { k::ops::softmax(logits); }},
  };
  for (const Row& r : rows) {
    if (!only.empty() && only.find("," + r.name + ",") == std::string::npos) continue;
    try {
      std::printf("{\"op\": \"%s\", \"ms\": %.4f}\n", r.name.c_str(), median_ms(r.fn));
    } catch (const std::exception& e) {
      std::printf("{\"op\": \"%s\", \"error\": \"%s\"}\n", r.name.c_str(), e.what());
    }
    std::fflush(stdout);
  }
  k::cuda::set_allow_tf32(true);
  if (only.empty() || only.find(",matmul_8192_tf32,") != std::string::npos)
    std::printf("{\"op\": \"matmul_8192_tf32\", \"ms\": %.4f}\n", median_ms([&] { k::ops::matmul(m, m2); }));
  return 0;
}
