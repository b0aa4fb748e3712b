#include "options.h"

#include <cstdio>
#include <cstdlib>

#include "backend/cpu/cpu_isa.h"

namespace bench {
namespace fs = std::filesystem;

// apps/CMakeLists.txt defines KERAS_SOURCE_DIR.
fs::path source_dir() { return fs::path(KERAS_SOURCE_DIR) / "apps" / "benchmark"; }

std::string default_bench_dir() {
  return (source_dir() / ".." / ".." / ".." / "shared" / "bench").lexically_normal().string();
}

namespace {

const char* kUsage =
    "usage: benchmark [--workload mlp|cnn|resnet|mobilenet_v2|mobilenet_v2_b1|resnet50|lstm|transformer]\n"
    "                 [--rounds N]\n"
    "                 [--mode both|train|infer] [--threads N] [--repeats N]\n"
    "                 [--warmup N] [--min-time S] [--bench-dir DIR] [--python PATH]\n"
    "                 [--config stock|openblas|openblas-skx|tuned] [--side both|ours|torch]\n"
    "                 [--omp-wait-policy passive|active] [--peak-seconds S] [--check-numerics]\n"
    "                 [--policy float32|mixed_bfloat16]   (mlp, cnn, resnet: ours under Keras's policy,\n"
    "                 PyTorch under torch.autocast(\"cpu\", bfloat16), apps/benchmark/torch_autocast_bench.py)\n"
    "       benchmark [--workload W] --device cuda[:N] [--batch N] [--tf32 on|off]   (ours alone on a GPU: one JSON line; see gpu_compare.py)\n"
    "       benchmark [--workload W] --against onnxruntime [--ort-python PATH]   (inference: ours vs ONNX Runtime on our export)\n"
    "       benchmark [--workload W] --breakdown STEPS [--device cuda:N]   (times the phases of a train step and its kernels\n"
    "                 per op, ours only; on a GPU the op rows are the host's time issuing each op)\n"
    "       benchmark [--workload W] --profile-overhead ROUNDS [--profile-steps N]   (a training epoch of N\n"
    "                 batches (default 20) with keras::profiler off and on, alternated ROUNDS times, ours only)\n"
    "Runs our framework and PyTorch (torch_bench.py) interleaved, --rounds times each, and\n"
    "reports medians, ratios ours/torch, train GFLOP/s against the measured FMA peak and each\n"
    "side's peak RSS. --mode picks what is timed; default: the workload's (both, except\n"
    "mobilenet_v2 and mobilenet_v2_b1: infer; resnet50, lstm and transformer: train).\n"
    "--repeats/--warmup/--min-time are passed to both sides (torch_bench's\n"
    "defaults: 5, 10, 2.0). --config auto = tuned where AVX-512 is allowed (the CPU has it and\n"
    "ONEDNN_MAX_CPU_ISA does not cap it; tuned forces\n"
    "OpenBLAS's SKYLAKEX kernels, which die with SIGILL elsewhere), else openblas with tuned's\n"
    "malloc settings. --omp-wait-policy sets OMP_WAIT_POLICY for BOTH sides: on a machine shared\n"
    "with other work, libgomp's default spin-waiting makes both sides' figures mostly\n"
    "scheduler noise; passive makes them meaningful. KERAS_CONV_CHOICE_LOG=1 in the environment\n"
    "prints, on stderr, the kernel our side chose for each convolution problem and the timings\n"
    "that decided it (KERAS_CONV_CHOICES=FILE pins them, KERAS_CONV_DIRECT=0 excludes our direct\n"
    "kernels; see README). Each round's \"core rt ns\" is the cache-line round trip between the\n"
    "first two CPUs around it: where it moves between tens and hundreds of ns (a VM's vCPUs\n"
    "sharing a cache or not), the run also prints the ratios of each distance's rounds alone.\n"
    "Default bench dir: ";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "benchmark: %s\n%s%s\n", message.c_str(), kUsage, default_bench_dir().c_str());
  std::exit(2);
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage_error(std::string("expected a value after ") + argv[i] + ", got none");
    return argv[++i];
  };
  auto number = [&](int& i, double lo) {
    std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    if (end == v.c_str() || *end || !(d >= lo)) usage_error(flag + ": expected a number >= " + std::to_string(lo) + ", got '" + v + "'");
    return d;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--workload") o.workload = value(i);
    else if (a == "--rounds") o.rounds = static_cast<int>(number(i, 1));
    else if (a == "--threads") o.threads = static_cast<int>(number(i, 1));
    else if (a == "--repeats") o.timing.repeats = static_cast<int>(number(i, 1));
    else if (a == "--warmup") o.timing.warmup = static_cast<int>(number(i, 0));
    else if (a == "--min-time") o.timing.min_time = number(i, 0);
    else if (a == "--bench-dir") o.bench_dir = value(i);
    else if (a == "--python") o.python = value(i);
    else if (a == "--config") o.config = value(i);
    else if (a == "--side") o.side = value(i);
    else if (a == "--mode") o.mode = value(i);
    else if (a == "--omp-wait-policy") o.wait_policy = value(i);
    else if (a == "--peak-seconds") o.peak_seconds = number(i, 0.01);
    else if (a == "--worker") o.worker = true;
    else if (a == "--device") o.device = value(i);
    else if (a == "--tf32") o.tf32 = value(i);
    else if (a == "--batch") o.batch = static_cast<int64_t>(number(i, 1));
    else if (a == "--breakdown") o.breakdown_steps = static_cast<int>(number(i, 1));
    else if (a == "--check-numerics") o.check_numerics = true;  // our worker: KERAS_CHECK_NUMERICS=1
    else if (a == "--profile-overhead") o.profile_rounds = static_cast<int>(number(i, 1));
    else if (a == "--profile-steps") o.profile_steps = static_cast<int>(number(i, 1));
    else if (a == "--against") o.against = value(i);
    else if (a == "--ort-python") o.ort_python = value(i);
    else if (a == "--policy") o.policy = value(i);
    else if (a == "-h" || a == "--help") std::printf("%s%s\n", kUsage, default_bench_dir().c_str()), std::exit(0);
    else usage_error("unknown argument '" + a + "'");
  }
  if (o.side != "both" && o.side != "ours" && o.side != "torch") usage_error("--side: expected both, ours or torch, got '" + o.side + "'");
  if (!o.mode.empty() && o.mode != "both" && o.mode != "train" && o.mode != "infer")
    usage_error("--mode: expected both, train or infer, got '" + o.mode + "'");
  if (!o.wait_policy.empty() && o.wait_policy != "passive" && o.wait_policy != "active")
    usage_error("--omp-wait-policy: expected passive or active, got '" + o.wait_policy + "'");
  if (o.policy != "float32" && o.policy != "mixed_bfloat16")
    usage_error("--policy: expected float32 or mixed_bfloat16, got '" + o.policy + "'");
  if (o.policy != "float32" && o.workload != "mlp" && o.workload != "cnn" && o.workload != "resnet")
    usage_error("--policy " + o.policy + ": expected the workload mlp, cnn or resnet, got '" + o.workload + "'");
  if (!o.tf32.empty() && o.tf32 != "on" && o.tf32 != "off") usage_error("--tf32: expected on or off, got '" + o.tf32 + "'");
  if (!o.tf32.empty() && o.device.empty()) usage_error("--tf32: expected --device cuda[:N] with it, got no --device. TF32 is a GPU math mode; add --device cuda:0.");
  if (o.against != "torch" && o.against != "onnxruntime")
    usage_error("--against: expected torch or onnxruntime, got '" + o.against + "'");
  if (o.against == "onnxruntime") {
    if (!o.mode.empty() && o.mode != "infer") usage_error("--against onnxruntime times inference only (--mode infer)");
    o.mode = "infer";
  }
  if (o.config == "auto") {
    __builtin_cpu_init();
    o.config = keras::cpu::isa_allows_avx512() ? "tuned" : "openblas+malloc";
  }
  return o;
}

}  // namespace bench
