// benchmark: our framework against PyTorch on the reference workloads of shared/bench, in one
// run, interleaved (ours, torch, ours, torch, ...), medians over the rounds, ratios ours/torch.
//
//   build/apps/benchmark --workload mlp --rounds 3
//
// Each side runs in its own process so that its peak RSS is its own: ours is this program
// re-executed with the hidden --worker flag (KERAS_NUM_THREADS set), torch is
// `<bench-dir>/with_config.sh <config> <python> <bench-dir>/torch_bench.py ...`. Both print one
// JSON line, parsed here. Prints a table, then one JSON line for scripts.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// shared/bench beside the repository this file was compiled from (CMake passes absolute paths).
std::string default_bench_dir() {
  return (fs::path(__FILE__).parent_path() / ".." / ".." / ".." / "shared" / "bench").lexically_normal().string();
}

struct Options {
  std::string workload = "mlp";
  int rounds = 3;
  int threads = 2;
  bench::TimingOptions timing;
  std::string bench_dir = default_bench_dir();
  std::string python = "/usr/bin/python3";
  std::string config = "auto";  // tuned where the CPU has AVX-512, else openblas + tuned malloc
  std::string wait_policy;       // OMP_WAIT_POLICY for both sides; empty = inherited
  std::string side = "both";  // both | ours | torch
  double peak_seconds = 0.3;
  bool worker = false;
  int breakdown_steps = 0;
};

const char* kUsage =
    "usage: benchmark [--workload mlp|cnn|resnet] [--rounds N] [--threads N] [--repeats N]\n"
    "                 [--warmup N] [--min-time S] [--bench-dir DIR] [--python PATH]\n"
    "                 [--config stock|openblas|openblas-skx|tuned] [--side both|ours|torch]\n"
    "                 [--omp-wait-policy passive|active] [--peak-seconds S]\n"
    "       benchmark [--workload W] --breakdown STEPS   (times the phases of a train step and its kernels per op, ours only)\n"
    "Runs our framework and PyTorch (torch_bench.py) interleaved, --rounds times each, and\n"
    "reports medians, ratios ours/torch, train GFLOP/s against the measured FMA peak and each\n"
    "side's peak RSS. --repeats/--warmup/--min-time are passed to both sides (torch_bench's\n"
    "defaults: 5, 10, 2.0). --config auto = tuned where the CPU has AVX-512 (tuned forces\n"
    "OpenBLAS's SKYLAKEX kernels, which die with SIGILL elsewhere), else openblas with tuned's\n"
    "malloc settings. --omp-wait-policy sets OMP_WAIT_POLICY for BOTH sides: on a machine shared\n"
    "with other work, libgomp's default spin-waiting makes both sides' figures mostly\n"
    "scheduler noise; passive makes them meaningful. Default bench dir: ";

[[noreturn]] void usage_error(const std::string& message) {
  std::fprintf(stderr, "benchmark: %s\n%s%s\n", message.c_str(), kUsage, default_bench_dir().c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
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
    else if (a == "--omp-wait-policy") o.wait_policy = value(i);
    else if (a == "--peak-seconds") o.peak_seconds = number(i, 0.01);
    else if (a == "--worker") o.worker = true;
    else if (a == "--breakdown") o.breakdown_steps = static_cast<int>(number(i, 1));
    else if (a == "-h" || a == "--help") std::printf("%s%s\n", kUsage, default_bench_dir().c_str()), std::exit(0);
    else usage_error("unknown argument '" + a + "'");
  }
  if (o.side != "both" && o.side != "ours" && o.side != "torch") usage_error("--side: expected both, ours or torch, got '" + o.side + "'");
  if (!o.wait_policy.empty() && o.wait_policy != "passive" && o.wait_policy != "active")
    usage_error("--omp-wait-policy: expected passive or active, got '" + o.wait_policy + "'");
  if (o.config == "auto") {
    __builtin_cpu_init();
    o.config = __builtin_cpu_supports("avx512f") ? "tuned" : "openblas+malloc";
  }
  return o;
}

// with_config.sh's malloc settings of "tuned" (large blocks kept instead of returned).
constexpr const char* kTunedMalloc = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=4294967296";

struct ChildResult {
  int status = 0;
  std::string out;  // stdout; stderr goes straight to ours
  rusage usage{};
};

// Runs argv[0] (a path) with extra environment variables; its stdout is captured and its
// resource usage (peak RSS included) comes from wait4.
ChildResult run_child(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& env) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargs;
    for (const auto& a : args) cargs.push_back(const_cast<char*>(a.c_str()));
    cargs.push_back(nullptr);
    execv(cargs[0], cargs.data());
    std::fprintf(stderr, "benchmark: cannot run %s: %s\n", cargs[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    r.out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  while (wait4(pid, &r.status, 0, &r.usage) < 0 && errno == EINTR) {}
  return r;
}

// The last line of `out` that parses as a JSON object.
json last_json_line(const std::string& out, const std::string& who) {
  size_t end = out.size();
  while (end > 0) {
    size_t start = out.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = out.substr(start, end - start);
    if (!line.empty() && line[0] == '{') {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded()) return j;
    }
    end = start == 0 ? 0 : start - 1;
  }
  throw std::runtime_error(who + ": expected a JSON line on stdout, got:\n" + out);
}

void check_exit(const ChildResult& r, const std::string& who, const std::string& hint) {
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0) return;
  std::string how = WIFEXITED(r.status) ? "exit status " + std::to_string(WEXITSTATUS(r.status))
                                        : "signal " + std::to_string(WTERMSIG(r.status));
  throw std::runtime_error(who + ": expected a clean exit, got " + how + ". " + hint + "\nstdout:\n" + r.out);
}

struct Sample {
  double train = 0, infer = 0, rss_mib = 0;
};

Sample run_ours(const Options& o) {
  std::vector<std::string> args = {fs::read_symlink("/proc/self/exe").string(), "--worker", "--workload", o.workload,
                                   "--repeats", std::to_string(o.timing.repeats), "--warmup",
                                   std::to_string(o.timing.warmup), "--min-time", std::to_string(o.timing.min_time)};
  std::string t = std::to_string(o.threads);
  std::vector<std::pair<std::string, std::string>> env = {{"KERAS_NUM_THREADS", t}, {"OMP_NUM_THREADS", t}};
  if (!o.wait_policy.empty()) env.emplace_back("OMP_WAIT_POLICY", o.wait_policy);
  ChildResult r = run_child(args, env);
  check_exit(r, "our worker", "Run it alone with --worker to see why.");
  json j = last_json_line(r.out, "our worker");
  return {j["train"]["samples_per_s_median"], j["infer"]["samples_per_s_median"], j["peak_rss_mib"]};
}

Sample run_torch(const Options& o, double peak_gflops) {
  fs::path dir(o.bench_dir);
  // "openblas+malloc": the tuned config minus the AVX-512 core type, for CPUs without AVX-512.
  const bool plus_malloc = o.config == "openblas+malloc";
  std::vector<std::string> args = {(dir / "with_config.sh").string(), plus_malloc ? "openblas" : o.config, o.python,
                                   (dir / "torch_bench.py").string(), "--workload", o.workload,
                                   "--threads", std::to_string(o.threads), "--repeats", std::to_string(o.timing.repeats),
                                   "--warmup", std::to_string(o.timing.warmup), "--min-time",
                                   std::to_string(o.timing.min_time)};
  if (peak_gflops > 0) args.insert(args.end(), {"--peak-gflops", std::to_string(peak_gflops)});
  // PyTorch's best configuration for convolutions is channels_last (our layout is NHWC too).
  if (o.workload != "mlp") args.insert(args.end(), {"--memory-format", "channels_last"});
  std::vector<std::pair<std::string, std::string>> env;
  if (plus_malloc) env.emplace_back("GLIBC_TUNABLES", kTunedMalloc);
  if (!o.wait_policy.empty()) env.emplace_back("OMP_WAIT_POLICY", o.wait_policy);
  ChildResult r = run_child(args, env);
  if (WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGILL)
    throw std::runtime_error("torch_bench.py (" + o.config + "): illegal instruction. The tuned and openblas-skx configs "
                             "need AVX-512 (OPENBLAS_CORETYPE=SKYLAKEX); use --config auto or openblas.");
  check_exit(r, "torch_bench.py (" + o.config + ")",
             "Needs " + o.python + " with torch: apt-get install -y python3-torch python3-numpy libopenblas0-openmp; "
             "or point --bench-dir at shared/bench.");
  json j = last_json_line(r.out, "torch_bench.py");
  // ru_maxrss of a waited-for child is in KiB, like RUSAGE_SELF.
  return {j["train"]["samples_per_s_median"], j["infer"]["samples_per_s_median"],
          static_cast<double>(r.usage.ru_maxrss) / 1024.0};
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

int run_driver(const Options& o, const bench::Workload& w) {
  std::string isa;
  double peak = bench::measure_fma_peak_gflops(o.threads, o.peak_seconds, isa);
  const double train_flops = w.train_flops_per_sample();
  std::printf("workload %s: %s | input %s | batch %lld | %s | cross-entropy on logits\n", w.name.c_str(),
              w.description.c_str(), keras::shape_str(w.input).c_str(), static_cast<long long>(w.batch),
              w.optimizer.c_str());
  const double load_before = load_average();
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string policy = o.wait_policy.empty() ? "inherited" : o.wait_policy;
  std::printf("train %.2f MFLOP/sample | %d threads per side | FMA peak %.1f GFLOP/s (%s, %d threads)\n", train_flops / 1e6,
              o.threads, peak, isa.c_str(), o.threads);
  std::printf("torch config %s | OMP_WAIT_POLICY %s | load average %.2f on %ld cores\n", o.config.c_str(),
              policy.c_str(), load_before, cores);
  if (o.wait_policy.empty() && load_before > static_cast<double>(cores))
    std::printf("note: the machine is busy; OpenMP spin-waiting makes both sides slow and noisy here. "
                "--omp-wait-policy passive gives figures closer to an idle machine's.\n");
  std::printf("\n");
  std::printf("%-6s %-6s %16s %16s %14s\n", "round", "side", "train samples/s", "infer samples/s", "peak RSS MiB");
  std::fflush(stdout);

  Side ours{"ours", o.side != "torch", {}}, torch{"torch", o.side != "ours", {}};
  for (int round = 1; round <= o.rounds; ++round) {
    for (Side* s : {&ours, &torch}) {
      if (!s->enabled) continue;
      Sample x = s == &ours ? run_ours(o) : run_torch(o, peak);
      s->rounds.push_back(x);
      std::printf("%-6d %-6s %16.0f %16.0f %14.1f\n", round, s->name.c_str(), x.train, x.infer, x.rss_mib);
      std::fflush(stdout);
    }
  }

  // The best of two peak measurements, the least disturbed one (the machine may be shared).
  std::string isa_end;
  peak = std::max(peak, bench::measure_fma_peak_gflops(o.threads, o.peak_seconds, isa_end));
  std::printf("\nFMA peak (best of start and end) %.1f GFLOP/s; load average now %.2f\n", peak, load_average());
  std::printf("%-14s %16s %16s %12s %10s %14s\n", "median", "train samples/s", "infer samples/s", "train GFLOP/s",
              "% of peak", "peak RSS MiB");
  json sides;
  for (const Side* s : {&ours, &torch}) {
    if (!s->enabled) continue;
    double gflops = s->train() * train_flops / 1e9;
    std::printf("%-14s %16.0f %16.0f %12.1f %9.1f%% %14.1f\n", s->name.c_str(), s->train(), s->infer(), gflops,
                100 * ratio(gflops, peak), s->rss());
    sides[s->name] = {{"train_samples_per_s", s->train()},
                      {"infer_samples_per_s", s->infer()},
                      {"train_gflops", gflops},
                      {"frac_fma_peak_train", ratio(gflops, peak)},
                      {"infer_gflops", s->infer() * w.fwd_flops_per_sample() / 1e9},
                      {"peak_rss_mib", s->rss()},
                      {"train_rounds", s->collect(&Sample::train)},
                      {"infer_rounds", s->collect(&Sample::infer)}};
  }
  json out = {{"bench", "ours_vs_torch"},
              {"workload", w.name},
              {"batch", w.batch},
              {"threads", o.threads},
              {"rounds", o.rounds},
              {"torch_config", o.config},
              {"train_flops_per_sample", train_flops},
              {"fma_peak_gflops", peak},
              {"fma_isa", isa},
              {"omp_wait_policy", policy},
              {"load_average_start", load_before},
              {"load_average_end", load_average()}};
  for (const auto& [name, v] : sides.items()) out[name] = v;
  // Rounds that disagree wildly mean the figures measure the scheduler more than the code.
  for (const Side* s : {&ours, &torch}) {
    std::vector<double> t = s->collect(&Sample::train);
    if (t.size() < 2) continue;
    auto [lo, hi] = std::minmax_element(t.begin(), t.end());
    if (*hi > 1.5 * *lo)
      std::printf("warning: %s's train rounds range %.0f..%.0f samples/s (> 1.5x apart): the machine is busy%s\n",
                  s->name.c_str(), *lo, *hi,
                  o.wait_policy.empty() ? "; try --omp-wait-policy passive (OpenMP spin-waiting under contention)" : "");
  }
  if (ours.enabled && torch.enabled) {
    double rt = ratio(ours.train(), torch.train()), ri = ratio(ours.infer(), torch.infer());
    std::printf("%-14s %16.3f %16.3f\n", "ours/torch", rt, ri);
    out["ratio_train"] = rt;
    out["ratio_infer"] = ri;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  try {
    const bench::Workload& w = bench::find_workload(o.workload);
    if (o.worker) return bench::run_worker(w, o.timing);
    if (o.breakdown_steps > 0) return bench::run_breakdown(w, o.breakdown_steps);
    return run_driver(o, w);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "benchmark: %s\n", e.what());
    return 1;
  }
}
