// Shared declarations of the side-by-side benchmark (apps/benchmark): the workload table, the
// worker that measures our framework, and the in-process FMA peak.
//
// The small workloads mirror /work/shared/bench/torch_models.py exactly (same layers, input,
// batch, optimizer, loss); the ImageNet-size ones are torchvision's networks, timed on the PyTorch
// side by apps/benchmark/torchvision_bench.py. FLOP counts follow torch_models.flops_info: MACs of
// the Dense/Conv layers only (count_macs), forward = 2 * MACs, training = 3 * forward.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <keras/keras.h>

namespace bench {

struct Workload {
  std::string name;         // the --workload value, as torch_bench.py names it
  std::string description;  // one line for the table header
  keras::Shape input;       // without the batch axis (channels_last for images)
  int64_t batch;
  std::string optimizer;    // for the header only
  int64_t classes = 10;     // labels are uniform in [0, classes)
  // What is timed unless --mode says otherwise: "both", "train" or "infer".
  std::string mode = "both";
  // The PyTorch side: torch_bench.py of the shared bench dir, or a script of apps/benchmark.
  std::string torch_script = "torch_bench.py";
  bool torch_script_in_bench_dir = true;
  // A compiled model; empty while the workload is not implemented on our side.
  std::function<std::shared_ptr<keras::Model>()> build;
};

// Multiply-accumulates of one sample through the model's Conv1D/2D, DepthwiseConv2D,
// SeparableConv2D and Dense layers (nested models included), as torch_models.count_macs counts
// PyTorch's Conv2d/Linear: output elements x kernel elements per output channel. Needs a built
// model with static spatial input extents.
int64_t count_macs(const keras::Model& model);

const std::vector<Workload>& workloads();
// Throws std::invalid_argument naming the workload and listing the known/implemented ones.
const Workload& find_workload(const std::string& name);

// How torch_bench.py times a phase: `warmup` untimed steps, then `repeats` repeats of S steps
// each, S = max(5, ceil(min_time / warm-up time per step)).
struct TimingOptions {
  int warmup = 10;
  int repeats = 5;
  double min_time = 2.0;
};

// The hidden `--worker` mode: builds the workload, times training (train_on_batch) and
// inference (predict_on_batch) over a pool of 8 pre-built batches, and prints ONE JSON line:
//   {"side": "ours", "workload", "batch", "threads",
//    "train": {"samples_per_s_median", "samples_per_s_min", "samples_per_s_max", "cv",
//              "repeats", "steps_per_repeat", "all"}, "infer": {...}, "peak_rss_mib"}
// Returns the process exit code.
// `mode` ("both", "train" or "infer") says which of "train" and "infer" are timed and present.
// `device` cuda:N moves the model and the batch pool there, waits for the device at the end of
// each timed run, and adds "device" and "peak_gpu_mib" (the caching allocator's peak) to the line.
int run_worker(const Workload& workload, const TimingOptions& timing, const std::string& mode,
               keras::Device device = keras::Device::cpu());

// The hidden `--breakdown STEPS` mode: mean wall and CPU milliseconds of each phase of a
// training step (forward, loss, backward, optimizer, metrics, as Model::train_step runs them),
// then of whole train_on_batch and predict_on_batch calls, in this process, and the kernels per
// op of the phased training steps, or of the predict_on_batch calls when `mode` is "infer". For
// finding where a step's time goes; run it under `perf record` for the kernels. On a GPU `device`
// (--device cuda:N) the phases are waited for and the op rows are the host's time issuing each op.
int run_breakdown(const Workload& workload, int steps, const std::string& mode,
                  keras::Device device = keras::Device::cpu());

// The hidden `--profile-overhead ROUNDS` mode: a training epoch of `steps` batches with
// keras::profiler off and on, alternated ROUNDS times; prints the profile's summary table and ONE
// JSON line with the median epoch times, their ratio, the events per epoch and the trace's size.
int run_profile_overhead(const Workload& workload, int rounds, int steps);

// Attainable FP32 FMA throughput with `threads` threads (best of a few short runs), in
// GFLOP/s; `isa` receives "avx512", "avx2" or "none" (0 is returned for "none").
double measure_fma_peak_gflops(int threads, double seconds, std::string& isa);

// Nanoseconds for a cache line to travel between the process's first two allowed CPUs and back
// (best of three runs of 5,000 round trips, each cut at ~20 ms for a busy machine; a few ms on
// an idle one; the caller's affinity is left alone); NaN with fewer than two CPUs. Tens of ns: the two share a cache (one core complex);
// hundreds: they do not, and data one thread writes and the other reads crosses the fabric.
double measure_core_roundtrip_ns();

}  // namespace bench
