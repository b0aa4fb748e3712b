// The benchmark's command line: its options and their parsing (usage errors exit with status 2).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "bench.h"

namespace bench {

// This program's source folder (apps/benchmark), where the Python scripts of the other sides live.
std::filesystem::path source_dir();
// shared/bench beside the repository this program was compiled from.
std::string default_bench_dir();

struct Options {
  std::string workload = "mlp";
  int rounds = 3;
  int threads = 2;
  TimingOptions timing;
  std::string bench_dir = default_bench_dir();
  std::string python = "/usr/bin/python3";
  std::string config = "auto";  // tuned where the CPU has AVX-512, else openblas + tuned malloc
  std::string wait_policy;       // OMP_WAIT_POLICY for both sides; empty = inherited
  std::string side = "both";  // both | ours | torch
  std::string mode;           // both | train | infer; empty: the workload's
  double peak_seconds = 0.3;
  bool worker = false;
  int64_t batch = 0;   // --batch: overrides the workload's batch size (0 = the workload's)
  std::string device;  // --device: time our side alone on that device (cuda:N); empty = the CPU driver
  // --tf32 on|off: float32 convolutions and matmuls on the GPU in TF32 or exact float32
  // (keras::cuda::set_allow_tf32); empty: the library's default (on, as Keras). PyTorch's defaults
  // use TF32 in cuDNN's convolutions only, so the mlp row compares with off.
  std::string tf32;
  int breakdown_steps = 0;
  bool check_numerics = false;  // our side runs with keras::debugging check-numerics on
  int profile_rounds = 0;
  int profile_steps = 20;
  // The other side: "torch", or "onnxruntime" (ONNX Runtime on our exported model, inference).
  std::string against = "torch";
  std::string ort_python = std::string(KERAS_SOURCE_DIR) + "/.venv/bin/python3";
  // Our side's global dtype policy; mixed_bfloat16 times PyTorch under torch.autocast(bfloat16).
  std::string policy = "float32";
};

// Parses argv; prints the usage and exits with status 2 on a bad option.
Options parse_options(int argc, char** argv);

}  // namespace bench
