// The convolution kernel chooser (see conv_choice.h): a per-process map from problem key to
// decision, filled by timing the candidates on first use or from a pin file.
#include "backend/cpu/conv_choice.h"

#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/cpu/conv_choice_file.h"
#include "backend/determinism.h"
#include "backend/errors.h"

namespace keras::cpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Entry {
  std::mutex mutex;  // held while the problem is being timed: concurrent first calls wait for it
  bool decided = false;
  ConvChoice choice;
};

// Never destroyed, so that the exit-time save (an atexit handler) can still use it.
struct State {
  std::mutex mutex;  // guards everything below; never held while timing
  std::map<std::string, std::shared_ptr<Entry>> entries;
  std::unordered_map<std::string, ConvCandidate> pins;
  bool env_loaded = false;
  std::string save_at_exit;  // KERAS_CONV_CHOICES when that file did not exist
  ConvChoiceStats stats;
  std::optional<ConvCandidate> forced;
};

State& state() {
  static State* s = new State;
  return *s;
}

bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("KERAS_CONV_CHOICE_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

bool contains(const std::vector<ConvCandidate>& v, ConvCandidate c) { return std::find(v.begin(), v.end(), c) != v.end(); }

void save_at_exit() {
  std::string path;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    path = s.save_at_exit;
  }
  if (path.empty() || conv_choices().empty()) return;
  try {
    save_conv_choices(path);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "keras: KERAS_CONV_CHOICES not written: %s\n", e.what());
  }
}

// Under s.mutex: reads KERAS_CONV_CHOICES once (again after reset_conv_choices).
void load_env(State& s) {
  if (s.env_loaded) return;
  const char* v = std::getenv("KERAS_CONV_CHOICES");
  std::string path = v ? v : "";
  if (!path.empty() && std::filesystem::exists(path)) {
    for (auto& [key, c] : parse_pin_file(path)) s.pins[key] = c;  // throws: retried, and fails, on the next call
  } else if (!path.empty()) {
    s.save_at_exit = path;
    static bool registered = (std::atexit(save_at_exit), true);
    (void)registered;
  }
  s.env_loaded = true;
}

// Relative deviation max|a - ref| / max|ref| over all outputs; infinite where NaNs differ.
double deviation(const ConvTrial& trial, const std::vector<std::vector<float>>& ref) {
  double diff = 0, scale = 0;
  for (size_t o = 0; o < ref.size(); ++o) {
    const float* a = trial.outputs[o].first;
    for (size_t i = 0; i < ref[o].size(); ++i) {
      float r = ref[o][i];
      if (std::isnan(r) != std::isnan(a[i])) return std::numeric_limits<double>::infinity();
      if (std::isnan(r)) continue;
      diff = std::max(diff, std::fabs(static_cast<double>(a[i]) - r));
      scale = std::max(scale, std::fabs(static_cast<double>(r)));
    }
  }
  return scale > 0 ? diff / scale : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
}

// Pushes the problem's tensors out of the private caches before a timed run. In a training step a
// convolution's input was written several megabytes of other work ago, and Winograd pays two
// NHWC <-> blocked reorders per tensor that a hot-cache loop makes look free: timed hot, oneDNN's
// Winograd won ResNet-20's 32-channel layers, which ran 20-45% slower than its direct kernels in
// real steps (AMX Xeon). So each timed run starts after writing twice the threads' L2 capacity.
// The buffer lives as long as one decision: a process keeps no megabytes for it.
class CacheFlusher {
 public:
  void flush() {
    if (junk_.empty()) {  // allocated on first use: warm trials never flush
      long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
      size_t bytes = 2 * static_cast<size_t>(l2 > 0 ? l2 : 2 << 20) * omp_get_max_threads();
      junk_.resize(std::clamp<size_t>(bytes, 8 << 20, 64 << 20));
    }
    const char step = ++salt_;
    const long n = static_cast<long>(junk_.size());
    char* p = junk_.data();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i += 64) p[i] = static_cast<char>(p[i] + step);
  }

 private:
  std::vector<char> junk_;
  char salt_ = 0;
};

double run_ms(const ConvTrial& trial, ConvCandidate c, CacheFlusher& flusher) {
  if (!trial.warm) flusher.flush();
  auto t0 = std::chrono::steady_clock::now();
  trial.run(c);
  if (trial.simulated_ms) return trial.simulated_ms(c);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool active(const ConvChoice& c, size_t i) { return !c.rejected[i] && !c.dropped[i]; }

size_t fastest(const ConvChoice& c) {
  size_t best = c.candidates.size();
  for (size_t i = 0; i < c.candidates.size(); ++i)
    if (active(c, i) && !std::isnan(c.ms[i]) && (best == c.candidates.size() || c.ms[i] < c.ms[best])) best = i;
  return best;
}

// Times c.candidates (exact ones first) on the problem's tensors and fills c's decision: a
// warm-up run each (Winograd's checked against the first exact candidate's outputs), then
// kTimedRuns rounds of one timed run per candidate still in, a candidate dropping out when
// slower than kDropFactor times the best so far. The winner runs last, so its outputs are left.
void decide_by_timing(const ConvTrial& trial, ConvChoice& c) {
  const auto& cands = c.candidates;
  size_t n = cands.size();
  double total = 0;
  ConvCandidate last = cands.front();
  CacheFlusher flusher;
  auto run = [&](size_t i) {
    double t = run_ms(trial, cands[i], flusher);
    total += t;
    ++c.calls;
    last = cands[i];
    return t;
  };
  std::vector<std::vector<float>> ref;
  for (size_t i = 0; i < n; ++i) {
    run(i);
    if (!is_winograd(cands[i])) {
      if (ref.empty())
        for (auto [p, count] : trial.outputs) ref.emplace_back(p, p + count);
    } else {
      c.deviations[i] = ref.empty() ? std::numeric_limits<double>::infinity() : deviation(trial, ref);
      c.rejected[i] = !(c.deviations[i] <= kWinogradTolerance);
      c.winograd_deviation = std::max(c.winograd_deviation, c.deviations[i]);
    }
  }
  for (int round = 0; round < kTimedRuns; ++round) {
    for (size_t i = 0; i < n; ++i)
      if (active(c, i)) {
        double t = run(i);
        c.ms[i] = std::isnan(c.ms[i]) ? t : std::min(c.ms[i], t);
      }
    size_t best = fastest(c);
    for (size_t i = 0; i < n; ++i)
      if (i != best && active(c, i) && c.ms[i] > kDropFactor * c.ms[best]) c.dropped[i] = true;
  }
  size_t best = fastest(c);
  if (is_winograd(cands[best])) {
    size_t exact = n;  // the fastest exact candidate still in
    for (size_t i = 0; i < n; ++i)
      if (!is_winograd(cands[i]) && active(c, i) && !std::isnan(c.ms[i]) && (exact == n || c.ms[i] < c.ms[exact]))
        exact = i;
    if (exact < n && c.ms[exact] <= kWinogradMargin * c.ms[best]) best = exact;
  }
  for (size_t i = 0; i < n; ++i)
    if (cands[i] == ConvCandidate::direct && i != best && active(c, i) && c.ms[i] <= kDirectMargin * c.ms[best]) best = i;
  c.chosen = cands[best];
  if (last != c.chosen) run(best);
  c.cost_ms = std::max(0.0, total - c.ms[best]);
  c.how = "timed";
}

void log_choice(const ConvChoice& c) {
  std::string line = "keras conv choice: " + c.key + " -> " + conv_candidate_name(c.chosen) + " [" + c.how;
  char buf[96];
  for (size_t i = 0; c.how == "timed" && i < c.ms.size(); ++i) {
    if (c.rejected[i])
      std::snprintf(buf, sizeof buf, "%s %s rejected (deviation %.2g)", i ? "," : ":", conv_candidate_name(c.candidates[i]),
                    c.deviations[i]);
    else
      std::snprintf(buf, sizeof buf, "%s %s %.3f ms%s", i ? "," : ":", conv_candidate_name(c.candidates[i]), c.ms[i],
                    c.dropped[i] ? " (dropped)" : "");
    line += buf;
    if (is_winograd(c.candidates[i]) && !c.rejected[i]) {
      std::snprintf(buf, sizeof buf, " (deviation %.2g)", c.deviations[i]);
      line += buf;
    }
  }
  if (c.how == "timed")
    std::snprintf(buf, sizeof buf, "; %d runs, %.1f ms beyond one run of the winner", c.calls, c.cost_ms), line += buf;
  std::fprintf(stderr, "%s]\n", line.c_str());
}

}  // namespace

const char* conv_candidate_name(ConvCandidate c) {
  switch (c) {
    case ConvCandidate::direct: return "direct";
    case ConvCandidate::onednn_direct: return "onednn_direct";
    case ConvCandidate::onednn_winograd: return "onednn_winograd";
    case ConvCandidate::winograd: return "winograd";
  }
  return "?";
}

std::optional<ConvCandidate> conv_candidate_from_name(const std::string& name) {
  for (auto c : {ConvCandidate::direct, ConvCandidate::onednn_direct, ConvCandidate::onednn_winograd, ConvCandidate::winograd})
    if (name == conv_candidate_name(c)) return c;
  return std::nullopt;
}

bool thread_count_independent(ConvCandidate c) { return c == ConvCandidate::direct; }

bool is_winograd(ConvCandidate c) { return c == ConvCandidate::onednn_winograd || c == ConvCandidate::winograd; }

namespace {

// Under e.mutex: decides the problem for `allowed`: from a pin, the only candidate, or by timing
// (which leaves the winner's outputs: `ran` is then set).
void decide(State& s, Entry& e, const std::string& key, const std::vector<ConvCandidate>& allowed,
            const ConvTrial& trial, bool& ran) {
  size_t n = allowed.size();
  e.choice = ConvChoice{};
  e.choice.key = key;
  e.choice.candidates = allowed;
  e.choice.ms.assign(n, kNaN);
  e.choice.rejected.assign(n, false);
  e.choice.dropped.assign(n, false);
  e.choice.deviations.assign(n, kNaN);
  std::optional<ConvCandidate> pin;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.pins.find(key);
    if (it != s.pins.end() && contains(allowed, it->second)) pin = it->second;
  }
  if (pin) {
    e.choice.chosen = *pin, e.choice.how = "pinned";
  } else if (n == 1) {
    e.choice.chosen = allowed.front(), e.choice.how = "only candidate";
  } else {
    decide_by_timing(trial, e.choice);
    ran = true;
  }
  e.decided = true;
  {
    std::lock_guard lock(s.mutex);
    (e.choice.how == "timed" ? s.stats.timed : e.choice.how == "pinned" ? s.stats.pinned : s.stats.fixed)++;
  }
  if (log_enabled()) log_choice(e.choice);
}

std::string key_at_thread_count(const std::string& problem_key) {
  return problem_key + "|t" + std::to_string(omp_in_parallel() ? 1 : omp_get_max_threads());
}

}  // namespace

std::optional<ConvCandidate> conv_choice_for(const std::string& problem_key) {
  if (op_determinism()) return std::nullopt;
  const std::string key = key_at_thread_count(problem_key);
  State& s = state();
  std::shared_ptr<Entry> entry;
  {
    std::lock_guard lock(s.mutex);
    if (s.forced) return std::nullopt;
    load_env(s);
    if (auto pin = s.pins.find(key); pin != s.pins.end()) return pin->second;
    auto it = s.entries.find(key);
    if (it == s.entries.end()) return std::nullopt;
    entry = it->second;
  }
  std::unique_lock lock(entry->mutex, std::try_to_lock);  // held: being decided now
  if (!lock.owns_lock() || !entry->decided) return std::nullopt;
  return entry->choice.chosen;
}

void run_conv(const std::string& problem_key, const std::vector<ConvCandidate>& candidates, const ConvTrial& trial) {
  State& s = state();
  std::vector<ConvCandidate> allowed = candidates;
  std::string key = key_at_thread_count(problem_key);
  if (op_determinism()) {
    allowed.clear();
    for (auto c : candidates)
      if (thread_count_independent(c)) allowed.push_back(c);
    // No thread-count-independent candidate: still a fixed one, so runs repeat bit for bit.
    if (allowed.empty())
      allowed.push_back(contains(candidates, ConvCandidate::onednn_direct) ? ConvCandidate::onednn_direct
                                                                           : candidates.front());
    key += "|deterministic";
  }
  std::shared_ptr<Entry> entry;
  std::optional<ConvCandidate> forced;
  {
    std::lock_guard lock(s.mutex);
    if (s.forced && contains(candidates, *s.forced)) {
      forced = s.forced;
    } else {
      load_env(s);
      auto& slot = s.entries[key];
      if (!slot) slot = std::make_shared<Entry>();
      entry = slot;
    }
  }
  if (forced) return trial.run(*forced);
  ConvCandidate chosen;
  {
    std::lock_guard lock(entry->mutex);
    if (!entry->decided || !contains(allowed, entry->choice.chosen)) {
      bool ran = false;
      decide(s, *entry, key, allowed, trial, ran);
      if (ran) return;
    }
    chosen = entry->choice.chosen;
  }
  trial.run(chosen);
}

std::vector<ConvChoice> conv_choices() {
  std::vector<std::shared_ptr<Entry>> entries;
  {
    State& s = state();
    std::lock_guard lock(s.mutex);
    for (auto& [key, e] : s.entries) entries.push_back(e);
  }
  std::vector<ConvChoice> out;
  for (auto& e : entries) {
    std::lock_guard lock(e->mutex);  // waits for a decision in progress
    if (e->decided) out.push_back(e->choice);
  }
  return out;
}

ConvChoiceStats conv_choice_stats() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return s.stats;
}

void save_conv_choices(const std::string& path) { write_choices(conv_choices(), path); }

void load_conv_choices(const std::string& path) {
  auto pins = parse_pin_file(path);
  State& s = state();
  std::lock_guard lock(s.mutex);
  for (auto& [key, c] : pins) s.pins[key] = c;
}

void reset_conv_choices() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.entries.clear();
  s.pins.clear();
  s.stats = {};
  s.env_loaded = false;
  s.save_at_exit.clear();
}

void force_conv_candidate(std::optional<ConvCandidate> c) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.forced = c;
}

}  // namespace keras::cpu
