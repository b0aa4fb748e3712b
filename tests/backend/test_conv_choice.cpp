// The CPU convolution chooser (backend/cpu/conv_choice.h): it picks a candidate that can run the
// problem; every candidate agrees with the plain-loop reference (Winograd within its stated
// tolerance); pins round-trip through a file with nothing timed; the direct switch and the
// determinism mode restrict the candidates; a corrupt pin file names its file and line; the
// first call times (and returns the winner's result), later calls run once; concurrent first
// calls time once; a Winograd result out of tolerance never reaches the caller. Measured times
// are never asserted on; the schedule tests use a fake candidate that sleeps 25 ms against one
// that returns at once, the margin tests simulated times.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/cpu_isa.h"
#include "backend/cpu/reference_conv.h"
#include "backend/determinism.h"
#include "backend/memory_stats.h"
#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "backend/random.h"
#include "backend/threads.h"
#include "tests/support/tensor_compare.h"

using namespace keras;
using cpu::ConvCandidate;

namespace {

using keras::testing::relative_error;

struct Case {
  std::string name;
  Shape x, kernel;
  int64_t stride = 1;
  std::string padding = "same";
  std::string activation = "linear";
};

std::vector<Case> cases() {
  return {
      {"3x3 16 -> 32 same (direct, maybe Winograd)", {2, 12, 12, 16}, {3, 3, 16, 32}},
      {"3x3 32 -> 64 valid relu", {2, 10, 11, 32}, {3, 3, 32, 64}, 1, "valid", "relu"},
      {"3x3 3 -> 16 (first layer: oneDNN forward only)", {2, 10, 10, 3}, {3, 3, 3, 16}},
      {"1x1 stride 2 16 -> 32", {2, 9, 9, 16}, {1, 1, 16, 32}, 2, "valid"},
  };
}

ConvParams params_of(const Case& c) {
  ConvParams p;
  p.stride_h = p.stride_w = c.stride;
  std::tie(p.pad_top, p.pad_bottom) = ops::conv_pads(c.x[1], c.kernel[0], c.padding, c.stride, 1);
  std::tie(p.pad_left, p.pad_right) = ops::conv_pads(c.x[2], c.kernel[1], c.padding, c.stride, 1);
  return p;
}

struct Tensors {
  Tensor x, k, b, dy;
};

Tensors inputs_of(const Case& c, uint64_t seed) {
  Tensors t{random::normal(c.x, 0, 1, seed), random::normal(c.kernel, 0, 1, seed + 1),
            random::normal({c.kernel[3]}, 0, 1, seed + 2), Tensor()};
  Shape ys = cpu::reference_conv2d(t.x, t.k, Tensor(), params_of(c)).shape();
  t.dy = random::normal(ys, 0, 1, seed + 3);
  return t;
}

// The three directions through the ops: y, dx, dk, db.
TensorList run_all(const Case& c, const Tensors& t) {
  ConvParams p = params_of(c);
  TensorList g = ops::conv2d_backward_weights(t.x, t.dy, c.kernel, p, true);
  return {ops::conv2d_explicit(t.x, t.k, t.b, p, c.activation), ops::conv2d_backward_data(t.dy, t.k, c.x, p), g[0],
          g[1]};
}

TensorList references(const Case& c, const Tensors& t) {
  ConvParams p = params_of(c);
  return {cpu::reference_conv2d(t.x, t.k, t.b, p, c.activation), cpu::reference_conv2d_backward_data(t.dy, t.k, c.x, p),
          cpu::reference_conv2d_backward_weights(t.x, t.dy, c.kernel, p), ops::sum(t.dy, {0, 1, 2})};
}

bool has(const std::vector<ConvCandidate>& v, ConvCandidate c) { return std::find(v.begin(), v.end(), c) != v.end(); }

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("keras_conv_choice_" + std::to_string(getpid()) + "_" + name))
      .string();
}

// Every test starts and ends with a clean chooser and the defaults.
class ConvChoice : public ::testing::Test {
 protected:
  void SetUp() override { reset(); }
  void TearDown() override { reset(); }
  static void reset() {
    unsetenv("KERAS_CONV_CHOICES");
    cpu::force_conv_candidate(std::nullopt);
    cpu::set_conv_direct(true);
    set_op_determinism(false);
    cpu::reset_conv_choices();
  }
};

}  // namespace

TEST_F(ConvChoice, PicksACandidateThatCanRunTheProblem) {
  uint64_t seed = 1;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensors t = inputs_of(c, seed += 10);
    TensorList ref = references(c, t);
    // The first call (which times) and a later one give the same bits, within tolerance of the
    // reference.
    TensorList first = run_all(c, t), later = run_all(c, t);
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_LT(relative_error(first[i], ref[i]), cpu::kWinogradTolerance) << i;
      EXPECT_EQ(relative_error(first[i], later[i]), 0.0) << i;
    }
  }
  auto choices = cpu::conv_choices();
  EXPECT_EQ(choices.size(), 3 * cases().size());
  for (const auto& ch : choices) {
    SCOPED_TRACE(ch.key);
    ASSERT_FALSE(ch.candidates.empty());
    EXPECT_TRUE(has(ch.candidates, ConvCandidate::onednn_direct));
    auto it = std::find(ch.candidates.begin(), ch.candidates.end(), ch.chosen);
    ASSERT_NE(it, ch.candidates.end());
    EXPECT_FALSE(ch.rejected[it - ch.candidates.begin()]);
    EXPECT_EQ(ch.how, ch.candidates.size() > 1 ? "timed" : "only candidate");
  }
  auto stats = cpu::conv_choice_stats();
  EXPECT_EQ(stats.timed + stats.fixed, choices.size());
}

TEST_F(ConvChoice, EveryCandidateMatchesTheReference) {
  uint64_t seed = 100;
  int winograd_checked = 0;
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    Tensors t = inputs_of(c, seed += 10);
    TensorList ref = references(c, t);
    cpu::reset_conv_choices();
    run_all(c, t);
    std::vector<ConvCandidate> all;  // every candidate of any of the three directions
    for (const auto& ch : cpu::conv_choices())
      for (auto cand : ch.candidates)
        if (!has(all, cand)) all.push_back(cand);
    for (auto cand : all) {
      SCOPED_TRACE(cpu::conv_candidate_name(cand));
      cpu::force_conv_candidate(cand);
      TensorList got = run_all(c, t);
      cpu::force_conv_candidate(std::nullopt);
      // Exact candidates differ from the double-accumulated reference by float32 rounding only;
      // Winograd's transforms are allowed the chooser's tolerance.
      double tol = cpu::is_winograd(cand) ? cpu::kWinogradTolerance : 1e-5;
      const char* names[] = {"forward", "backward data", "backward weights", "bias gradient"};
      for (size_t i = 0; i < ref.size(); ++i) EXPECT_LT(relative_error(got[i], ref[i]), tol) << names[i];
      winograd_checked += cpu::is_winograd(cand);
    }
  }
  std::printf("Winograd offered and checked on %d of %zu cases\n", winograd_checked, cases().size());
}

// Winograd's nChw16c copies of the activations come from the caching allocator (oneDNN's own
// allocation was a fresh malloc per call, page-faulting in every training step): a Winograd run
// of the three directions takes more bytes from it than a direct run of the same problem, whose
// only allocations are the outputs.
TEST_F(ConvChoice, WinogradLayoutCopiesComeFromTheCachingAllocator) {
  Case c = cases()[0];
  Tensors t = inputs_of(c, 21);
  run_all(c, t);
  bool offered = false;
  for (const auto& ch : cpu::conv_choices()) offered = offered || has(ch.candidates, ConvCandidate::onednn_winograd);
  if (!offered) GTEST_SKIP() << "oneDNN offers no Winograd on this CPU (it does on AVX-512)";
  auto bytes_taken = [&](ConvCandidate cand) {
    cpu::force_conv_candidate(cand);
    run_all(c, t);  // creates the primitives and their cached weights
    uint64_t before = memory_stats(Device::cpu()).allocated_bytes;
    run_all(c, t);
    cpu::force_conv_candidate(std::nullopt);
    return memory_stats(Device::cpu()).allocated_bytes - before;
  };
  uint64_t direct = bytes_taken(ConvCandidate::onednn_direct), winograd = bytes_taken(ConvCandidate::onednn_winograd);
  // At least the input and the output-gradient copies (x, dy: 2 * 12 * 12 * 16 floats) beyond direct.
  EXPECT_GE(winograd, direct + 2 * 12 * 12 * 16 * sizeof(float)) << "direct " << direct << " bytes";
}

TEST_F(ConvChoice, PinFileRoundTripTimesNothing) {
  Case c = cases()[0];
  Tensors t = inputs_of(c, 7);
  run_all(c, t);
  if (cpu::conv_choice_stats().timed == 0) GTEST_SKIP() << "no problem here has two candidates";
  auto before = cpu::conv_choices();
  std::string path = temp_path("pins.txt");
  cpu::save_conv_choices(path);

  cpu::reset_conv_choices();
  setenv("KERAS_CONV_CHOICES", path.c_str(), 1);
  TensorList got = run_all(c, t);
  auto stats = cpu::conv_choice_stats();
  EXPECT_EQ(stats.timed, 0u);
  EXPECT_EQ(stats.pinned, before.size());
  auto after = cpu::conv_choices();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].key, before[i].key);
    EXPECT_EQ(after[i].chosen, before[i].chosen);
    EXPECT_EQ(after[i].how, "pinned");
  }
  TensorList ref = references(c, t);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_LT(relative_error(got[i], ref[i]), cpu::kWinogradTolerance);

  // The same through load_conv_choices, without the environment.
  unsetenv("KERAS_CONV_CHOICES");
  cpu::reset_conv_choices();
  cpu::load_conv_choices(path);
  run_all(c, t);
  EXPECT_EQ(cpu::conv_choice_stats().timed, 0u);
  std::filesystem::remove(path);
}

TEST_F(ConvChoice, MissingPinFileIsOnlyWrittenAtExit) {
  std::string path = temp_path("missing.txt");
  std::filesystem::remove(path);
  setenv("KERAS_CONV_CHOICES", path.c_str(), 1);
  Case c = cases()[2];
  run_all(c, inputs_of(c, 9));
  EXPECT_EQ(cpu::conv_choice_stats().pinned, 0u);
  EXPECT_FALSE(std::filesystem::exists(path));  // written at exit, not before
  cpu::reset_conv_choices();                     // forgets the exit-time path
}

TEST_F(ConvChoice, DirectSwitchExcludesTheDirectKernels) {
  cpu::set_conv_direct(false);  // what KERAS_CONV_DIRECT=0 sets at start-up
  uint64_t seed = 300;
  for (const auto& c : cases()) run_all(c, inputs_of(c, seed += 10));
  EXPECT_EQ(cpu::conv_choices().size(), 3 * cases().size());
  for (const auto& ch : cpu::conv_choices()) {  // the switch holds the project's Winograd too
    EXPECT_FALSE(has(ch.candidates, ConvCandidate::direct)) << ch.key;
    EXPECT_FALSE(has(ch.candidates, ConvCandidate::winograd)) << ch.key;
  }
  // A choice of `direct` made before the switch is decided again, not reused.
  cpu::set_conv_direct(true);
  cpu::reset_conv_choices();
  Case c = cases()[0];
  Tensors t = inputs_of(c, 5);
  cpu::force_conv_candidate(std::nullopt);
  run_all(c, t);
  cpu::set_conv_direct(false);
  TensorList got = run_all(c, t);
  for (const auto& ch : cpu::conv_choices()) EXPECT_NE(ch.chosen, ConvCandidate::direct) << ch.key;
  TensorList ref = references(c, t);
  for (size_t i = 0; i < ref.size(); ++i) EXPECT_LT(relative_error(got[i], ref[i]), cpu::kWinogradTolerance);
}

TEST_F(ConvChoice, DeterministicModeTimesNothingAndPrefersThreadCountIndependentKernels) {
  EXPECT_TRUE(cpu::thread_count_independent(ConvCandidate::direct));
  EXPECT_FALSE(cpu::thread_count_independent(ConvCandidate::onednn_direct));
  EXPECT_FALSE(cpu::thread_count_independent(ConvCandidate::onednn_winograd));
  EXPECT_FALSE(cpu::thread_count_independent(ConvCandidate::winograd));
  set_op_determinism(true);
  uint64_t seed = 400;
  for (const auto& c : cases()) run_all(c, inputs_of(c, seed += 10));
  EXPECT_EQ(cpu::conv_choice_stats().timed, 0u);
  bool avx2 = cpu::isa_allows_avx2();
  for (const auto& ch : cpu::conv_choices()) {
    SCOPED_TRACE(ch.key);
    EXPECT_NE(ch.key.find("|deterministic"), std::string::npos);
    ASSERT_EQ(ch.candidates.size(), 1u);
    EXPECT_FALSE(cpu::is_winograd(ch.chosen));
    // The first case runs the direct kernels in all three directions where the CPU has them.
    if (avx2 && ch.key.find("|2x12x12x16|") != std::string::npos) EXPECT_EQ(ch.chosen, ConvCandidate::direct);
    // The 3-channel forward pass has no direct kernel: oneDNN's direct algorithm, fixed.
    if (ch.key.rfind("forward|2x10x10x3|", 0) == 0) EXPECT_EQ(ch.chosen, ConvCandidate::onednn_direct);
  }
  if (!avx2) return;
  // Bit-identical for any thread count where the direct kernels run.
  Case c = cases()[0];
  Tensors t = inputs_of(c, 11);
  int threads = num_threads();
  set_num_threads(1);
  TensorList one = run_all(c, t);
  set_num_threads(3);
  TensorList three = run_all(c, t);
  set_num_threads(threads);
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(relative_error(one[i], three[i]), 0.0) << i;
}

TEST_F(ConvChoice, CorruptPinFileNamesFileAndLine) {
  std::string path = temp_path("corrupt.txt");
  {
    std::ofstream out(path);
    out << "# a comment\n\nforward|1x4x4x8|3x3x8x8|1x4x4x8|s1x1|d1x1|p1x1x1x1|g1|f32|linear|bias0|inference|t2 "
           "onednn_direct\nthis line has three fields\nforward|x fastest\n";
  }
  try {
    cpu::load_conv_choices(path);
    FAIL() << "no error";
  } catch (const IOError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path + ":4: expected two fields '<key> <candidate>', got 'this line has three fields'."),
              std::string::npos)
        << m;
  }
  {
    std::ofstream out(path);
    out << "forward|x fastest\n";
  }
  try {
    cpu::load_conv_choices(path);
    FAIL() << "no error";
  } catch (const IOError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path + ":1: expected a candidate (direct, onednn_direct, onednn_winograd or winograd), got 'fastest'."),
              std::string::npos)
        << m;
  }
  // Through the environment: the first convolution reports it.
  setenv("KERAS_CONV_CHOICES", path.c_str(), 1);
  Case c = cases()[0];
  EXPECT_THROW(run_all(c, inputs_of(c, 3)), IOError);
  std::filesystem::remove(path);
}

namespace {

// A fake problem for the schedule tests: `direct` returns at once, `onednn_direct` sleeps 25 ms,
// oneDNN's Winograd writes a wrong result, the project's `winograd` the right one; every run is
// counted per candidate.
struct FakeProblem {
  std::array<std::atomic<int>, 4> runs{};
  std::vector<float> out = std::vector<float>(8, 0.f);
  cpu::ConvTrial trial() {
    cpu::ConvTrial t;
    t.run = [this](ConvCandidate c) {
      ++runs[static_cast<size_t>(c)];
      if (c == ConvCandidate::onednn_direct) std::this_thread::sleep_for(std::chrono::milliseconds(25));
      std::fill(out.begin(), out.end(), c == ConvCandidate::onednn_winograd ? 2.f : 1.f);
    };
    t.outputs = {{out.data(), out.size()}};
    return t;
  }
  int total() const { return runs[0] + runs[1] + runs[2] + runs[3]; }
};

}  // namespace

TEST_F(ConvChoice, FirstCallTimesLaterCallsRunOnce) {
  FakeProblem fake;
  cpu::ConvTrial trial = fake.trial();
  std::vector<ConvCandidate> cands{ConvCandidate::direct, ConvCandidate::onednn_direct};
  cpu::run_conv("test|schedule", cands, trial);
  auto choices = cpu::conv_choices();
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].how, "timed");
  EXPECT_EQ(choices[0].chosen, ConvCandidate::direct);
  // The 25 ms candidate had its warm-up and one timed run, then was dropped (> kDropFactor times
  // the fastest); the fast one its warm-up and kTimedRuns timed runs, the last of them leaving
  // its result (no extra run).
  EXPECT_TRUE(choices[0].dropped[1]);
  EXPECT_EQ(fake.runs[1].load(), 2);
  EXPECT_EQ(fake.runs[0].load(), 1 + cpu::kTimedRuns);
  EXPECT_EQ(choices[0].calls, fake.total());
  for (float v : fake.out) EXPECT_EQ(v, 1.f);
  for (int call = 1; call <= 5; ++call) {
    int before = fake.total();
    cpu::run_conv("test|schedule", cands, trial);
    EXPECT_EQ(fake.total(), before + 1);
  }
  EXPECT_EQ(fake.runs[1].load(), 2);
}

TEST_F(ConvChoice, WinogradOutOfToleranceNeverReachesTheCaller) {
  FakeProblem fake;
  cpu::ConvTrial trial = fake.trial();
  std::vector<ConvCandidate> cands{ConvCandidate::direct, ConvCandidate::onednn_winograd};
  for (int call = 0; call < 10; ++call) {
    cpu::run_conv("test|winograd", cands, trial);
    for (float v : fake.out) ASSERT_EQ(v, 1.f) << "call " << call;
  }
  EXPECT_EQ(fake.runs[2].load(), 1);  // its checked warm-up run only
  auto choices = cpu::conv_choices();
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_TRUE(choices[0].rejected[1]);
  EXPECT_EQ(choices[0].chosen, ConvCandidate::direct);
  EXPECT_NEAR(choices[0].winograd_deviation, 1.0, 1e-12);
}

// With both Winograds among the candidates each is checked on its own: the wrong one is rejected
// (its deviation recorded), the right one is held to the exact candidate's results and wins on time.
TEST_F(ConvChoice, EachWinogradCheckedOnItsOwn) {
  FakeProblem fake;
  cpu::ConvTrial trial = fake.trial();
  std::vector<ConvCandidate> cands{ConvCandidate::onednn_direct, ConvCandidate::onednn_winograd, ConvCandidate::winograd};
  cpu::run_conv("test|two_winograds", cands, trial);
  for (float v : fake.out) EXPECT_EQ(v, 1.f);
  auto choices = cpu::conv_choices();
  ASSERT_EQ(choices.size(), 1u);
  EXPECT_EQ(choices[0].chosen, ConvCandidate::winograd);
  EXPECT_TRUE(choices[0].rejected[1]);
  EXPECT_FALSE(choices[0].rejected[2]);
  EXPECT_NEAR(choices[0].deviations[1], 1.0, 1e-12);
  EXPECT_EQ(choices[0].deviations[2], 0.0);
  EXPECT_TRUE(std::isnan(choices[0].deviations[0]));
  EXPECT_NEAR(choices[0].winograd_deviation, 1.0, 1e-12);
}

namespace {

// Decides problem `key` between candidates {a, b}, where a run of a counts as a_ms and one of b
// as 10 ms (simulated: busy-waits timed by the clock measured 10.1 ms as 13 on a loaded machine).
cpu::ConvChoice decide(const std::string& key, ConvCandidate a, ConvCandidate b, double a_ms) {
  std::vector<float> out(4, 0.f);
  cpu::ConvTrial trial;
  trial.run = [&](ConvCandidate) { std::fill(out.begin(), out.end(), 1.f); };
  trial.simulated_ms = [&](ConvCandidate c) { return c == a ? a_ms : 10.0; };
  trial.outputs = {{out.data(), out.size()}};
  cpu::reset_conv_choices();
  cpu::run_conv(key, {a, b}, trial);
  return cpu::conv_choices().at(0);
}

// Candidate a keeps the choice while at most `margin` times slower than b's 10 ms: a at 10.1 ms
// wins, at `slow_ms` (beyond the margin) b wins.
void expect_kept_within_margin(const std::string& key, ConvCandidate a, ConvCandidate b, double margin,
                               double slow_ms) {
  for (double a_ms : {10.1, slow_ms}) {
    const ConvCandidate expected = a_ms < 10.0 * margin ? a : b;
    cpu::ConvChoice choice = decide(key, a, b, a_ms);
    ASSERT_FALSE(choice.rejected[1]);
    EXPECT_EQ(choice.chosen, expected) << cpu::conv_candidate_name(a) << " " << a_ms << " ms against "
                                       << cpu::conv_candidate_name(b) << "'s 10, measured " << choice.ms[0] << " / "
                                       << choice.ms[1];
  }
}

}  // namespace

// Winograd (here exact, so accepted) must beat the exact candidate by kWinogradMargin: 1% faster
// leaves the exact one, 40% faster wins.
TEST_F(ConvChoice, WinogradWinsOnlyByTheMargin) {
  expect_kept_within_margin("test|margin", ConvCandidate::onednn_direct, ConvCandidate::onednn_winograd,
                            cpu::kWinogradMargin, 14.0);
  expect_kept_within_margin("test|own_margin", ConvCandidate::onednn_direct, ConvCandidate::winograd,
                            cpu::kWinogradMargin, 14.0);
}

// `direct` keeps a choice while within kDirectMargin of the fastest: 1% slower stays, 30% does not.
TEST_F(ConvChoice, DirectKeepsATieWithinItsMargin) {
  expect_kept_within_margin("test|direct_margin", ConvCandidate::direct, ConvCandidate::onednn_direct,
                            cpu::kDirectMargin, 13.0);
}

TEST_F(ConvChoice, ConcurrentFirstCallsTimeOnce) {
  FakeProblem fake;
  cpu::ConvTrial trial = fake.trial();
  std::vector<ConvCandidate> cands{ConvCandidate::direct, ConvCandidate::onednn_direct};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) cpu::run_conv("test|concurrent", cands, trial);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(cpu::conv_choice_stats().timed, 1u);  // one decision, however many first callers
  auto choice = cpu::conv_choices()[0];
  EXPECT_EQ(choice.chosen, ConvCandidate::direct);
  // The timing's runs, then one run for each of the other 59 calls.
  EXPECT_EQ(fake.total(), choice.calls + 59);
  EXPECT_EQ(fake.runs[1].load(), 2);  // the slow candidate ran in the timing only
}
