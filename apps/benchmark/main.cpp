// benchmark: our framework against PyTorch on the reference workloads of shared/bench, in one
// run, interleaved (ours, torch, ours, torch, ...), medians over the rounds, ratios ours/torch.
//
//   build/apps/benchmark --workload mlp --rounds 3
//
// Each side runs in its own process (child_process.h) so that its peak RSS is its own: ours is this program
// re-executed with the hidden --worker flag (KERAS_NUM_THREADS set), torch is
// `<bench-dir>/with_config.sh <config> <python> <script> ...` with the workload's script:
// <bench-dir>/torch_bench.py for the small workloads, apps/benchmark/torchvision_bench.py for the
// torchvision networks. Both print one JSON line, parsed here. Prints a table, then one JSON line
// for scripts.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/bf16_compute.h"
#include "bench.h"
#include "child_process.h"
#include "options.h"

namespace {

namespace fs = std::filesystem;
using bench::ChildResult;
using bench::check_exit;
using bench::last_json_line;
using bench::Options;
using bench::source_dir;
using bench::run_child;
using nlohmann::json;

// with_config.sh's malloc settings of "tuned" (large blocks kept instead of returned).
constexpr const char* kTunedMalloc = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296";

struct Sample {
  double train = 0, infer = 0, rss_mib = 0;  // 0: the phase was not timed
  int64_t macs_per_sample = 0;               // the torch side's own count
  double core_before = 0, core_after = 0;    // core round trips measured around it (ns)
};

// samples_per_s_median of `phase` in a side's JSON line; 0 when that phase was not timed.
double phase_rate(const json& j, const char* phase) {
  return j.contains(phase) ? j[phase]["samples_per_s_median"].get<double>() : 0.0;
}

Sample run_ours(const Options& o) {
  std::vector<std::string> args = {fs::read_symlink("/proc/self/exe").string(), "--worker", "--workload", o.workload,
                                   "--mode", o.mode, "--policy", o.policy,
                                   "--repeats", std::to_string(o.timing.repeats), "--warmup",
                                   std::to_string(o.timing.warmup), "--min-time", std::to_string(o.timing.min_time)};
  std::string t = std::to_string(o.threads);
  std::vector<std::pair<std::string, std::string>> env = {{"KERAS_NUM_THREADS", t}, {"OMP_NUM_THREADS", t}};
  if (!o.wait_policy.empty()) env.emplace_back("OMP_WAIT_POLICY", o.wait_policy);
  if (o.check_numerics) env.emplace_back("KERAS_CHECK_NUMERICS", "1");
  ChildResult r = run_child(args, env);
  check_exit(r, "our worker", "Run it alone with --worker to see why.");
  json j = last_json_line(r.out, "our worker");
  return {phase_rate(j, "train"), phase_rate(j, "infer"), j["peak_rss_mib"]};
}

Sample run_torch(const Options& o, const bench::Workload& w, double peak_gflops) {
  fs::path dir(o.bench_dir);
  const bool autocast = o.policy == "mixed_bfloat16";
  const fs::path script = autocast                     ? source_dir() / "torch_autocast_bench.py"
                          : w.torch_script_in_bench_dir ? dir / w.torch_script
                                                        : source_dir() / w.torch_script;
  // "openblas+malloc": the tuned config minus the AVX-512 core type, for CPUs without AVX-512.
  const bool plus_malloc = o.config == "openblas+malloc";
  std::vector<std::string> args = {(dir / "with_config.sh").string(), plus_malloc ? "openblas" : o.config, o.python,
                                   script.string(), "--workload", o.workload, "--mode", o.mode,
                                   "--threads", std::to_string(o.threads), "--repeats", std::to_string(o.timing.repeats),
                                   "--warmup", std::to_string(o.timing.warmup), "--min-time",
                                   std::to_string(o.timing.min_time)};
  if (peak_gflops > 0) args.insert(args.end(), {"--peak-gflops", std::to_string(peak_gflops)});
  if (autocast) args.insert(args.end(), {"--bench-dir", dir.string()});
  // PyTorch's best configuration for convolutions is channels_last (our layout is NHWC too).
  if (o.workload != "mlp") args.insert(args.end(), {"--memory-format", "channels_last"});
  std::vector<std::pair<std::string, std::string>> env;
  if (plus_malloc) env.emplace_back("GLIBC_TUNABLES", kTunedMalloc);
  if (!o.wait_policy.empty()) env.emplace_back("OMP_WAIT_POLICY", o.wait_policy);
  ChildResult r = run_child(args, env);
  if (WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGILL)
    throw std::runtime_error(w.torch_script + " (" + o.config + "): illegal instruction. The tuned and openblas-skx configs "
                             "need AVX-512 (OPENBLAS_CORETYPE=SKYLAKEX); use --config auto or openblas.");
  check_exit(r, w.torch_script + " (" + o.config + ")",
             "Needs " + o.python + " with torch (and torchvision for the torchvision networks): scripts/setup.sh "
             "--bench; or point --bench-dir at shared/bench.");
  json j = last_json_line(r.out, w.torch_script);
  // ru_maxrss of a waited-for child is in KiB, like RUSAGE_SELF.
  return {phase_rate(j, "train"), phase_rate(j, "infer"), static_cast<double>(r.usage.ru_maxrss) / 1024.0,
          j["flops"]["macs_per_sample"].get<int64_t>()};
}

// ONNX Runtime (CPU, o.threads intra-op threads) running our export of the workload's model:
// apps/benchmark/onnxruntime_bench.py with the test venv's Python, which has onnxruntime.
Sample run_onnxruntime(const Options& o, const bench::Workload& w, const std::string& model_path, int64_t macs) {
  std::vector<std::string> args = {o.ort_python, (source_dir() / "onnxruntime_bench.py").string(), "--model", model_path,
                                   "--batch", std::to_string(w.batch), "--threads", std::to_string(o.threads),
                                   "--repeats", std::to_string(o.timing.repeats), "--warmup",
                                   std::to_string(o.timing.warmup), "--min-time", std::to_string(o.timing.min_time)};
  std::vector<std::pair<std::string, std::string>> env;
  if (!o.wait_policy.empty()) env.emplace_back("OMP_WAIT_POLICY", o.wait_policy);
  ChildResult r = run_child(args, env);
  check_exit(r, "onnxruntime_bench.py", "Needs " + o.ort_python + " with onnxruntime (bash scripts/setup.sh).");
  json j = last_json_line(r.out, "onnxruntime_bench.py");
  return {0, phase_rate(j, "infer"), static_cast<double>(r.usage.ru_maxrss) / 1024.0, macs};
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Side {
  std::string name;
  bool enabled;
  std::vector<Sample> rounds;
  double train() const { return median(collect(&Sample::train)); }
  double infer() const { return median(collect(&Sample::infer)); }
  double rss() const {
    double m = 0;
    for (const auto& s : rounds) m = std::max(m, s.rss_mib);
    return m;
  }
  std::vector<double> collect(double Sample::*f) const {
    std::vector<double> v;
    for (const auto& s : rounds) v.push_back(s.*f);
    return v;
  }
};

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

// The 1-minute load average: how much other work competes for the cores during the run.
double load_average() {
  double l[1] = {0};
  return getloadavg(l, 1) == 1 ? l[0] : -1;
}

// `value` with `decimals` decimals, or "-" for a phase that was not timed.
std::string fixed_or_dash(double value, bool timed, int decimals = 1) {
  if (!timed) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}
std::string rate_str(double rate) { return fixed_or_dash(rate, rate > 0); }

// Where the rounds ran at two core distances (round trips more than 2x apart: a VM's vCPUs moved
// between sharing a cache and not), the medians mix two machines. Splits the round trips at their
// geometric middle and prints, for each class that both sides ran in, the medians and ratios of
// the rounds measured in that class before and after (out["by_core_distance"]); a round that
// changed class on the way is in neither.
void report_core_distance_classes(const Side& ours, const Side& torch, bool train, bool infer, json& out) {
  std::vector<double> all;
  for (const Side* s : {&ours, &torch})
    for (const Sample& x : s->rounds) all.insert(all.end(), {x.core_before, x.core_after});
  if (std::any_of(all.begin(), all.end(), [](double v) { return !(v > 0); })) return;
  auto [lo, hi] = std::minmax_element(all.begin(), all.end());
  if (*hi <= 2 * *lo) return;
  const double split = std::sqrt(*lo * *hi);
  std::printf("warning: the core round trip ranged %.0f..%.0f ns: the rounds ran at two core distances (the two "
              "threads' CPUs sharing a cache or not); compare rounds of one distance:\n",
              *lo, *hi);
  json classes;
  for (const bool near : {true, false}) {
    auto pick = [&](const Side& s) {
      Side kept{s.name, true, {}};
      for (const Sample& x : s.rounds)
        if ((x.core_before <= split) == near && (x.core_after <= split) == near) kept.rounds.push_back(x);
      return kept;
    };
    const Side a = pick(ours), b = pick(torch);
    if (a.rounds.empty() || b.rounds.empty()) continue;
    const double rt = ratio(a.train(), b.train()), ri = ratio(a.infer(), b.infer());
    std::printf("  %-5s (%s %.0f ns): %zu+%zu rounds, ours/%s train %s infer %s\n", near ? "near" : "far",
                near ? "<=" : ">", split, a.rounds.size(), b.rounds.size(), torch.name.c_str(),
                fixed_or_dash(rt, train, 3).c_str(), fixed_or_dash(ri, infer, 3).c_str());
    json c = {{"rounds_ours", a.rounds.size()}, {"rounds_other", b.rounds.size()}};
    if (train) c["ratio_train"] = rt;
    if (infer) c["ratio_infer"] = ri;
    classes[near ? "near" : "far"] = c;
  }
  out["by_core_distance"] = {{"split_ns", split}, {"classes", classes}};
}

int run_driver(const Options& o, const bench::Workload& w) {
  std::string isa;
  double peak = bench::measure_fma_peak_gflops(o.threads, o.peak_seconds, isa);
  const bool train = o.mode != "infer", infer = o.mode != "train";
  // MACs of our model as built; the torch side reports its own network's count.
  const int64_t macs = bench::count_macs(*w.build());
  std::printf("workload %s: %s | input %s | batch %lld | %s | cross-entropy on logits | timed: %s\n", w.name.c_str(),
              w.description.c_str(), keras::shape_str(w.input).c_str(), static_cast<long long>(w.batch),
              w.optimizer.c_str(), o.mode.c_str());
  const double load_before = load_average();
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string policy = o.wait_policy.empty() ? "inherited" : o.wait_policy;
  std::printf("%.2f MMAC/sample (train %.2f MFLOP, infer %.2f MFLOP) | %d threads per side | FMA peak %.1f GFLOP/s "
              "(%s, %d threads)\n",
              static_cast<double>(macs) / 1e6, 6e-6 * static_cast<double>(macs), 2e-6 * static_cast<double>(macs),
              o.threads, peak, isa.c_str(), o.threads);
  std::printf("torch config %s | OMP_WAIT_POLICY %s | load average %.2f on %ld cores\n", o.config.c_str(),
              policy.c_str(), load_before, cores);
  if (o.policy != "float32")
    std::printf("policy %s: ours %s, torch under torch.autocast(bfloat16); this CPU %s bfloat16 instructions%s\n",
                o.policy.c_str(),
                keras::bf16_kernels_enabled(keras::DeviceKind::cpu) ? "on oneDNN's bfloat16 kernels"
                                                                    : "converting to float32 (no bfloat16 kernels)",
                keras::cpu_has_bf16_instructions() ? "has" : "lacks",
                keras::cpu_has_bf16_instructions() ? "" : " (oneDNN emulates them: figures say nothing of bf16 hardware)");
  if (o.wait_policy.empty() && load_before > static_cast<double>(cores))
    std::printf("note: the machine is busy; OpenMP spin-waiting makes both sides slow and noisy here. "
                "--omp-wait-policy passive gives figures closer to an idle machine's.\n");
  std::printf("\n");
  std::printf("%-6s %-6s %16s %16s %14s %12s\n", "round", "side", "train samples/s", "infer samples/s", "peak RSS MiB",
              "core rt ns");
  std::fflush(stdout);

  const bool ort = o.against == "onnxruntime";
  Side ours{"ours", o.side != "torch", {}}, torch{ort ? "onnxruntime" : "torch", o.side != "ours", {}};
  int64_t torch_macs = macs;
  // The ONNX Runtime side runs the very model our side builds, exported once (random weights;
  // inference time does not depend on their values).
  const std::string onnx_path =
      (fs::temp_directory_path() / ("keras_bench_" + std::to_string(getpid()) + "_" + w.name + ".onnx")).string();
  if (ort && torch.enabled) keras::export_model(*w.build(), onnx_path);
  for (int round = 1; round <= o.rounds; ++round) {
    for (Side* s : {&ours, &torch}) {
      if (!s->enabled) continue;
      const double core_before = bench::measure_core_roundtrip_ns();
      Sample x = s == &ours ? run_ours(o) : ort ? run_onnxruntime(o, w, onnx_path, macs) : run_torch(o, w, peak);
      x.core_before = core_before;
      x.core_after = bench::measure_core_roundtrip_ns();
      if (s == &torch) torch_macs = x.macs_per_sample;
      s->rounds.push_back(x);
      std::printf("%-6d %-6s %16s %16s %14.1f %7.0f/%.0f\n", round, s->name.c_str(), rate_str(x.train).c_str(),
                  rate_str(x.infer).c_str(), x.rss_mib, x.core_before, x.core_after);
      std::fflush(stdout);
    }
  }

  // The best of two peak measurements, the least disturbed one (the machine may be shared).
  std::string isa_end;
  peak = std::max(peak, bench::measure_fma_peak_gflops(o.threads, o.peak_seconds, isa_end));
  if (ort) fs::remove(onnx_path);
  std::printf("\nFMA peak (best of start and end) %.1f GFLOP/s; load average now %.2f\n", peak, load_average());
  std::printf("%-14s %16s %16s %12s %10s %12s %10s %14s\n", "median", "train samples/s", "infer samples/s",
              "train GFLOP/s", "% of peak", "infer GFLOP/s", "% of peak", "peak RSS MiB");
  json sides;
  for (const Side* s : {&ours, &torch}) {
    if (!s->enabled) continue;
    // Each side's GFLOP/s counts its own network's MACs (resnet50: torchvision's v1.5 has more).
    const double m = static_cast<double>(s == &ours ? macs : torch_macs);
    const double train_gflops = s->train() * 6 * m / 1e9, infer_gflops = s->infer() * 2 * m / 1e9;
    std::printf("%-14s %16s %16s %12s %10s %12s %10s %14.1f\n", s->name.c_str(), rate_str(s->train()).c_str(),
                rate_str(s->infer()).c_str(), fixed_or_dash(train_gflops, train).c_str(),
                fixed_or_dash(100 * ratio(train_gflops, peak), train).c_str(), fixed_or_dash(infer_gflops, infer).c_str(),
                fixed_or_dash(100 * ratio(infer_gflops, peak), infer).c_str(), s->rss());
    json side = {{"macs_per_sample", s == &ours ? macs : torch_macs}, {"peak_rss_mib", s->rss()}};
    if (train)
      side.update({{"train_samples_per_s", s->train()},
                   {"train_gflops", train_gflops},
                   {"frac_fma_peak_train", ratio(train_gflops, peak)},
                   {"train_rounds", s->collect(&Sample::train)}});
    if (infer)
      side.update({{"infer_samples_per_s", s->infer()},
                   {"infer_gflops", infer_gflops},
                   {"frac_fma_peak_infer", ratio(infer_gflops, peak)},
                   {"infer_rounds", s->collect(&Sample::infer)}});
    side["core_roundtrip_ns_before"] = s->collect(&Sample::core_before);
    side["core_roundtrip_ns_after"] = s->collect(&Sample::core_after);
    sides[s->name] = side;
  }
  json out = {{"bench", ort ? "ours_vs_onnxruntime" : "ours_vs_torch"},
              {"workload", w.name},
              {"batch", w.batch},
              {"mode", o.mode},
              {"threads", o.threads},
              {"rounds", o.rounds},
              {"torch_config", o.config},
              {"macs_per_sample", macs},
              {"train_flops_per_sample", 6.0 * static_cast<double>(macs)},
              {"fma_peak_gflops", peak},
              {"fma_isa", isa},
              {"omp_wait_policy", policy},
              {"policy", o.policy},
              {"bf16_kernels", keras::bf16_kernels_enabled(keras::DeviceKind::cpu)},
              {"cpu_bf16", keras::cpu_has_bf16_instructions()},
              {"load_average_start", load_before},
              {"load_average_end", load_average()}};
  for (const auto& [name, v] : sides.items()) out[name] = v;
  // Rounds that disagree wildly mean the figures measure the scheduler more than the code.
  for (const Side* s : {&ours, &torch}) {
    for (auto [phase, field] : {std::pair{"train", &Sample::train}, std::pair{"infer", &Sample::infer}}) {
      std::vector<double> t = s->collect(field);
      if (t.size() < 2 || t.front() <= 0) continue;
      auto [lo, hi] = std::minmax_element(t.begin(), t.end());
      if (*hi > 1.5 * *lo)
        std::printf("warning: %s's %s rounds range %.1f..%.1f samples/s (> 1.5x apart): the machine is busy%s\n",
                    s->name.c_str(), phase, *lo, *hi,
                    o.wait_policy.empty() ? "; try --omp-wait-policy passive (OpenMP spin-waiting under contention)" : "");
    }
  }
  if (ours.enabled && torch.enabled) {
    double rt = ratio(ours.train(), torch.train()), ri = ratio(ours.infer(), torch.infer());
    std::printf("%-14s %16s %16s\n", ("ours/" + torch.name).c_str(), fixed_or_dash(rt, train, 3).c_str(),
                fixed_or_dash(ri, infer, 3).c_str());
    if (train) out["ratio_train"] = rt;
    if (infer) out["ratio_infer"] = ri;
    // Networks of different size (torchvision's resnet50 is v1.5): the ratio of FLOP rates too.
    const double flop_scale = static_cast<double>(macs) / static_cast<double>(torch_macs);
    if (std::abs(flop_scale - 1) > 0.005) {
      std::printf("%-14s %16s %16s   (MACs/sample: ours %.3f G, torch %.3f G)\n", "  per FLOP",
                  fixed_or_dash(rt * flop_scale, train, 3).c_str(), fixed_or_dash(ri * flop_scale, infer, 3).c_str(),
                  1e-9 * static_cast<double>(macs), 1e-9 * static_cast<double>(torch_macs));
      out["torch_macs_per_sample"] = torch_macs;
      if (train) out["ratio_train_per_flop"] = rt * flop_scale;
      if (infer) out["ratio_infer_per_flop"] = ri * flop_scale;
    }
  }
  if (ours.enabled && torch.enabled) report_core_distance_classes(ours, torch, train, infer, out);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = bench::parse_options(argc, argv);
  try {
    bench::Workload w = bench::find_workload(o.workload);
    if (o.batch > 0) w.batch = o.batch;
    if (o.mode.empty()) o.mode = w.mode;
    if (o.policy != "float32") keras::mixed_precision::set_global_policy(o.policy);
    if (o.worker) return bench::run_worker(w, o.timing, o.mode);
    // The GPU side is ours alone: torch_gpu.py times PyTorch on the same card, and
    // apps/benchmark/gpu_compare.py puts the two side by side.
    if (!o.tf32.empty()) keras::cuda::set_allow_tf32(o.tf32 == "on");
    if (o.breakdown_steps > 0)
      return bench::run_breakdown(w, o.breakdown_steps, o.mode,
                                  o.device.empty() ? keras::Device::cpu() : keras::Device::parse(o.device));
    if (!o.device.empty()) return bench::run_worker(w, o.timing, o.mode, keras::Device::parse(o.device));
    if (o.profile_rounds > 0) return bench::run_profile_overhead(w, o.profile_rounds, o.profile_steps);
    return run_driver(o, w);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark: %s\n", e.what());
    return 1;
  }
}
