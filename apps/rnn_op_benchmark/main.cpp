// rnn_op_benchmark: forward + backward time of a stack of LSTM layers through the fused op
// ops::rnn_sequence (oneDNN path for float32), the C++ side of apps/benchmark/lstm_torch.py.
//
//   build/apps/rnn_op_benchmark [--batch 64] [--time 50] [--input 128] [--units 256] [--layers 2]
//                               [--repeats 5] [--min-time 2] [--threads N] [--implementation auto]
//                               [--profile 1]
//
// One step: the layers in sequence (return_sequences, zero initial states), loss = mean of the
// last layer's last output squared, gradients of every kernel, recurrent kernel and bias (and x)
// through the tape. Prints one JSON line: samples/s median, min and max over the repeats.
// --profile 1 then runs 3 more steps with op profiling and prints each op's share of the kernel
// CPU time to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/op_profile.h"
#include "backend/ops.h"
#include "backend/ops_rnn.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

int main(int argc, char** argv) {
  int64_t batch = 64, time = 50, input = 128, units = 256, layers = 2, repeats = 5;
  double min_time = 2;
  bool profile = false;
  std::string impl = "auto";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--batch") batch = std::stoll(v);
    else if (k == "--time") time = std::stoll(v);
    else if (k == "--input") input = std::stoll(v);
    else if (k == "--units") units = std::stoll(v);
    else if (k == "--layers") layers = std::stoll(v);
    else if (k == "--repeats") repeats = std::stoll(v);
    else if (k == "--min-time") min_time = std::stod(v);
    else if (k == "--threads") set_num_threads(std::stoi(v));
    else if (k == "--implementation") impl = v;
    else if (k == "--profile") profile = v == "1";
    else return std::fprintf(stderr, "unknown option %s\n", k.c_str()), 2;
  }
  Tensor x = random::normal({batch, time, input}, 0, 1, uint64_t{1});
  TensorList weights;
  for (int64_t l = 0; l < layers; ++l) {
    int64_t in = l == 0 ? input : units;
    weights.push_back(random::normal({in, 4 * units}, 0, 0.05, uint64_t(10 + l)).set_requires_grad(true));
    weights.push_back(random::normal({units, 4 * units}, 0, 0.05, uint64_t(20 + l)).set_requires_grad(true));
    weights.push_back(Tensor::zeros({4 * units}).set_requires_grad(true));
  }
  bool onednn = true;
  auto step = [&] {
    GradientTape tape;
    Tensor h = x;
    for (int64_t l = 0; l < layers; ++l) {
      ops::RnnSequenceArgs a;
      a.kind = ops::RnnKind::lstm;
      a.x = h, a.kernel = weights[3 * l], a.recurrent_kernel = weights[3 * l + 1], a.bias = weights[3 * l + 2];
      a.implementation = impl;
      onednn = onednn && ops::rnn_sequence_uses_onednn(a);
      h = ops::rnn_sequence(a)[0];
    }
    Tensor last = ops::slice(h, {0, time - 1, 0}, {batch, 1, units});
    Tensor loss = ops::multiply(ops::sum(ops::square(last)), 1.0 / static_cast<double>(batch * units));
    compute_gradients(loss, weights);
  };
  for (int i = 0; i < 3; ++i) step();  // warm-up: primitives, allocator
  using clock = std::chrono::steady_clock;
  std::vector<double> rates;
  for (int64_t r = 0; r < repeats; ++r) {
    auto t0 = clock::now();
    int64_t steps = 0;
    double dt = 0;
    while (dt < min_time) {
      step();
      ++steps;
      dt = std::chrono::duration<double>(clock::now() - t0).count();
    }
    rates.push_back(static_cast<double>(steps * batch) / dt);
  }
  std::sort(rates.begin(), rates.end());
  std::printf("{\"bench\": \"rnn_op\", \"kind\": \"lstm\", \"onednn\": %s, \"threads\": %d, \"batch\": %ld, "
              "\"time\": %ld, \"input\": %ld, \"units\": %ld, \"layers\": %ld, \"fwd_bwd\": {\"samples_per_s_median\": "
              "%.2f, \"samples_per_s_min\": %.2f, \"samples_per_s_max\": %.2f}}\n",
              onednn ? "true" : "false", num_threads(), static_cast<long>(batch), static_cast<long>(time),
              static_cast<long>(input), static_cast<long>(units), static_cast<long>(layers), rates[rates.size() / 2],
              rates.front(), rates.back());
  if (!profile) return 0;
  set_op_profiling(true);
  for (int i = 0; i < 3; ++i) step();
  double total = 0;
  for (const auto& e : op_profile()) total += e.cpu_seconds;
  for (const auto& e : op_profile())
    std::fprintf(stderr, "%5.1f%%  %-24s %-16s %llu calls\n", 100 * e.cpu_seconds / total, e.op.c_str(), e.shape.c_str(),
                 static_cast<unsigned long long>(e.calls));
}
