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
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "backend/determinism.h"
#include "backend/errors.h"

namespace keras::cpu {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kMaxRounds = 5;

struct Entry {
  std::mutex mutex;  // held while the key is being decided: concurrent first calls wait for it
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

// "<key> <candidate>" lines; blank lines and '#' comments skipped.
std::vector<std::pair<std::string, ConvCandidate>> parse_pin_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail<IOError>("load_conv_choices", "a readable pin file", "'" + path + "'", "check the path (KERAS_CONV_CHOICES)");
  std::vector<std::pair<std::string, ConvCandidate>> pins;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream fields(line);
    std::string key, name, extra;
    if (!(fields >> key) || key[0] == '#') continue;
    std::string where = path + ":" + std::to_string(number);
    const char* hint = "each line is '<key> <candidate>' as save_conv_choices writes it; delete the line (or the "
                       "file) to choose by timing again";
    if (!(fields >> name) || (fields >> extra))
      fail<IOError>(where, "two fields '<key> <candidate>'", "'" + line + "'", hint);
    auto c = conv_candidate_from_name(name);
    if (!c) fail<IOError>(where, "a candidate (direct, onednn_direct or onednn_winograd)", "'" + name + "'", hint);
    pins.emplace_back(key, *c);
  }
  return pins;
}

void write_choices(const std::vector<ConvChoice>& choices, const std::string& path) {
  // Written beside the target and renamed: a reader never sees half a file.
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    if (!out) fail<IOError>("save_conv_choices", "a writable file", "'" + path + "'", "check the folder exists");
    out << "# keras CPU convolution choices, '<key> <candidate>' per line; KERAS_CONV_CHOICES=<this file> pins them.\n"
           "# key: direction|x|kernel|y|strides|dilation|pads|groups|dtype|activation|bias|prop|threads[|deterministic]\n";
    for (const ConvChoice& c : choices) out << c.key << ' ' << conv_candidate_name(c.chosen) << '\n';
    if (!out.flush())
      fail<IOError>("save_conv_choices", "the file written", "a write error on '" + tmp + "'", "check the disk space");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::string got = "'";  // appended piecewise: "'" + a temporary trips GCC 12's -Wrestrict
    got += ec.message();
    got += "' for '" + path + "'";
    fail<IOError>("save_conv_choices", "a file renamed into place", got);
  }
}

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

double run_ms(const ConvTrial& trial, ConvCandidate c) {
  auto t0 = std::chrono::steady_clock::now();
  trial.run(c);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Fills choice.ms / rejected / chosen / cost_ms by timing choice.candidates (exact ones first).
void time_candidates(const ConvTrial& trial, ConvChoice& choice) {
  const auto& cands = choice.candidates;
  size_t n = cands.size();
  choice.ms.assign(n, kNaN);
  choice.rejected.assign(n, false);
  double cost = 0;
  // Warm-up pass: JIT and weight reorders happen here; Winograd is checked against the first
  // exact candidate's outputs.
  std::vector<std::vector<float>> ref;
  for (size_t i = 0; i < n; ++i) {
    cost += run_ms(trial, cands[i]);
    if (cands[i] != ConvCandidate::onednn_winograd) {
      if (ref.empty())
        for (auto [p, count] : trial.outputs) ref.emplace_back(p, p + count);
    } else {
      choice.winograd_deviation = ref.empty() ? std::numeric_limits<double>::infinity() : deviation(trial, ref);
      choice.rejected[i] = !(choice.winograd_deviation <= kWinogradTolerance);
    }
  }
  double timed = 0;
  for (int round = 0; round < kMaxRounds && timed < kTimingBudgetMs; ++round)
    for (size_t i = 0; i < n; ++i) {
      if (choice.rejected[i]) continue;
      double t = run_ms(trial, cands[i]);
      timed += t;
      choice.ms[i] = std::isnan(choice.ms[i]) ? t : std::min(choice.ms[i], t);
    }
  choice.cost_ms = cost + timed;
  size_t best = n;
  for (size_t i = 0; i < n; ++i)
    if (!choice.rejected[i] && (best == n || choice.ms[i] < choice.ms[best])) best = i;
  choice.chosen = cands[best == n ? 0 : best];
}

void log_choice(const ConvChoice& c) {
  std::string line = "keras conv choice: " + c.key + " -> " + conv_candidate_name(c.chosen) + " [" + c.how;
  char buf[96];
  for (size_t i = 0; c.how == "timed" && i < c.ms.size(); ++i) {
    if (c.rejected[i])
      std::snprintf(buf, sizeof buf, "%s %s rejected (deviation %.2g)", i ? "," : ":", conv_candidate_name(c.candidates[i]),
                    c.winograd_deviation);
    else
      std::snprintf(buf, sizeof buf, "%s %s %.3f ms", i ? "," : ":", conv_candidate_name(c.candidates[i]), c.ms[i]);
    line += buf;
  }
  if (c.how == "timed") std::snprintf(buf, sizeof buf, "; one-time cost %.1f ms", c.cost_ms), line += buf;
  std::fprintf(stderr, "%s]\n", line.c_str());
}

}  // namespace

const char* conv_candidate_name(ConvCandidate c) {
  switch (c) {
    case ConvCandidate::direct: return "direct";
    case ConvCandidate::onednn_direct: return "onednn_direct";
    case ConvCandidate::onednn_winograd: return "onednn_winograd";
  }
  return "?";
}

std::optional<ConvCandidate> conv_candidate_from_name(const std::string& name) {
  for (auto c : {ConvCandidate::direct, ConvCandidate::onednn_direct, ConvCandidate::onednn_winograd})
    if (name == conv_candidate_name(c)) return c;
  return std::nullopt;
}

bool thread_count_independent(ConvCandidate c) { return c == ConvCandidate::direct; }

ConvCandidate choose_conv(const std::string& problem_key, const std::vector<ConvCandidate>& candidates,
                          const ConvTrial& trial) {
  State& s = state();
  std::vector<ConvCandidate> allowed = candidates;
  std::string key = problem_key + "|t" + std::to_string(omp_in_parallel() ? 1 : omp_get_max_threads());
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
  {
    std::lock_guard lock(s.mutex);
    if (s.forced && contains(candidates, *s.forced)) return *s.forced;
    load_env(s);
    auto& slot = s.entries[key];
    if (!slot) slot = std::make_shared<Entry>();
    entry = slot;
  }
  std::lock_guard entry_lock(entry->mutex);
  if (entry->decided && contains(allowed, entry->choice.chosen)) return entry->choice.chosen;
  ConvChoice choice;
  choice.key = key;
  choice.candidates = allowed;
  std::optional<ConvCandidate> pin;
  {
    std::lock_guard lock(s.mutex);
    auto it = s.pins.find(key);
    if (it != s.pins.end() && contains(allowed, it->second)) pin = it->second;
  }
  if (pin) {
    choice.chosen = *pin, choice.how = "pinned";
  } else if (allowed.size() == 1) {
    choice.chosen = allowed.front(), choice.how = "only candidate";
  } else {
    time_candidates(trial, choice);
    choice.how = "timed";
  }
  if (choice.ms.empty()) choice.ms.assign(allowed.size(), kNaN), choice.rejected.assign(allowed.size(), false);
  {
    std::lock_guard lock(s.mutex);
    (choice.how == "timed" ? s.stats.timed : choice.how == "pinned" ? s.stats.pinned : s.stats.fixed)++;
  }
  if (log_enabled()) log_choice(choice);
  entry->choice = choice;
  entry->decided = true;
  return choice.chosen;
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
