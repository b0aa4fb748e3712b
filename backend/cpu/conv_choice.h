// Which kernel runs a float32 CPU convolution, chosen by measurement (and a bfloat16 weight
// gradient: the project's AVX512-BF16 kernel against oneDNN's, conv_backward_weights_bf16.h). Float32
// products use the same chooser, `direct` being the project's GEMM and `onednn_direct` oneDNN's
// matmul: a Dense layer's outside a recording tape on its packed weight (dense_panels.h, keys
// "dense;"), inside one on the weight as it lies (gemm_direct.h, "dense_train;"), and matmuls
// that are one product with B as it lies (gemm_direct.h, "matmul;").
//
// Why: the project's direct AVX2 kernels (conv_direct.h, conv_backward_weights_direct.h) beat
// oneDNN 2.6 on AVX2-only CPUs and lose badly to its AVX-512 kernels (cnn inference 0.55x against
// 1.50x of PyTorch on an AVX-512 Xeon); fixed rules tuned on one machine are wrong on another.
// So every convolution problem (direction, shapes, geometry, activation, bias, propagation kind,
// thread count) with more than one candidate is timed on the machine that runs it, and the
// fastest candidate runs it for the rest of the process.
//
// Candidates: `direct` (the project's AVX2 kernels, or their AVX-512 version on CPUs that have it
// (conv_direct_avx512.h), where their support predicate holds),
// `onednn_direct` (oneDNN's convolution_direct: always there), `onednn_winograd` (oneDNN's
// convolution_winograd: float32 3x3 stride 1, where oneDNN offers it - AVX-512 CPUs) and
// `winograd` (the project's F(2x2, 3x3) in AVX2, conv_winograd.h: 3x3 stride 1 with channels in
// multiples of 8; the only Winograd on AVX2 CPUs). A Winograd candidate runs only where its
// result on its first call stays within kWinogradTolerance of an exact candidate's.
//
// How: the first call of a problem times the candidates on its real tensors, each run after the
// private caches were flushed (as a training step finds them; conv_choice.cpp says why): one
// untimed warm-up run each (it pays oneDNN's JIT and the weight reorder, which the winner pays
// anyway), then kTimedRuns rounds of one timed run per candidate, interleaved so that a noisy
// neighbour slows all alike; a candidate slower than kDropFactor times the fastest so far leaves
// the rounds. The fastest run decides (Winograd by kWinogradMargin; `direct` keeps a tie within
// kDirectMargin), and the winner runs last, so the first call's result is
// already the winner's: every call of a problem gives the same bits (a choice that changed from
// call to call would make predict(x) differ from predict(x) in the last bits). So a decision
// costs about 2 + 2 runs per candidate, once per problem and process.
//
// Environment:
//   KERAS_CONV_CHOICES=<path>  an existing file pins choices ("<key> <candidate>" per line,
//                              '#' comments): nothing is timed for the keys it names. A missing
//                              file is written at exit with every choice made (dump, then pin).
//   KERAS_CONV_CHOICE_LOG=1    one line per decision on stderr: key, winner, each candidate's time.
//   KERAS_CONV_DIRECT=0        excludes `direct` (as set_conv_direct(false)).
// Determinism (keras::set_op_determinism(true)): nothing is timed (a timed choice could differ
// between two runs); `direct` runs where it can, as it alone gives the same bits for any thread
// count, else `onednn_direct` (see thread_count_independent).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace keras::cpu {

enum class ConvCandidate { direct, onednn_direct, onednn_winograd, winograd };

// "direct", "onednn_direct", "onednn_winograd", "winograd": the names of the pin file and the log.
const char* conv_candidate_name(ConvCandidate c);
std::optional<ConvCandidate> conv_candidate_from_name(const std::string& name);

// True for `direct` only. Each output element of the direct kernels is summed by one thread in a
// fixed order (the forward and input-gradient kernels split output rows, the weight-gradient
// kernel output tiles), or from chunk sums added in an order fixed by the shapes (the bfloat16
// weight gradient, conv_backward_weights_bf16.h). oneDNN's backward-weights kernels add per-thread partial sums, and its
// forward and backward-data kernels pick their blockings (hence the summation order) from the
// thread count, so oneDNN's results may change with it.
// The project's `winograd` also sums each output in one thread in a fixed order, but rounds
// otherwise than the exact kernels: the deterministic mode keeps to `direct`.
bool thread_count_independent(ConvCandidate c);
// onednn_winograd and winograd: checked against kWinogradTolerance and held to kWinogradMargin.
bool is_winograd(ConvCandidate c);

// Winograd's transforms round differently: accepted where max|winograd - exact| <= this times
// max|exact| over the outputs of the first call.
inline constexpr double kWinogradTolerance = 1e-4;
// Timed runs per candidate after its warm-up run, and the slowness that ends a candidate's
// timing early (a candidate twice as slow as the best does not win on noise).
inline constexpr int kTimedRuns = 2;
inline constexpr double kDropFactor = 2.0;
// Winograd wins only when its best run beats the fastest exact candidate's by this factor: its
// results round differently, and its layout copies cost more in a training step than even a
// flushed-cache trial shows (ResNet-20's 32-channel input gradient timed 4% faster with Winograd,
// then ran 20% slower in steps).
inline constexpr double kWinogradMargin = 1.05;
// `direct` wins unless another candidate beats it by this factor. Flushed trials put the AVX-512
// direct kernels within a few percent of oneDNN on ResNet-20's 16- and 32-channel layers, so noise
// decided each run's choice; pinned, the direct kernels made whole training steps 4% faster
// (AMX Xeon, 1,075 against 1,033 samples/s, four alternated runs each). And `direct` alone gives
// the same bits for any thread count while rounding as the exact kernels do.
inline constexpr double kDirectMargin = 1.03;

// What the chooser needs to time candidates on a problem's real tensors.
struct ConvTrial {
  // Computes the problem's outputs with candidate c (overwriting them).
  std::function<void(ConvCandidate)> run;
  // The float32 buffers `run` writes (pointer, element count): compared between candidates.
  std::vector<std::pair<const float*, size_t>> outputs;
  // Timed runs start from the caches as the previous run left them instead of flushed: for a
  // problem repeated on the same operands (a Dense layer in inference reads the same weight on
  // every call, which flushed trials would time from memory).
  bool warm = false;
  // Tests: when set, what a run of candidate c counts as, in ms, instead of the clock's reading
  // (the run is still made), so that margins are tested exactly on a loaded machine.
  std::function<double(ConvCandidate)> simulated_ms;
};

// Runs one call of the problem `problem_key` (no spaces; the caller's full parameter key, to
// which the thread count is added here) through `trial` with the candidate chosen for it, timing
// the candidates first when the problem is new (see above). `candidates`: those that can run the
// problem, exact ones first, not empty. A cached or pinned choice that is no longer among
// `candidates` (set_conv_direct(false) since) is decided again. Thread-safe: concurrent first
// calls of one problem time once, the others wait for the decision. Rethrows what `trial` throws.
void run_conv(const std::string& problem_key, const std::vector<ConvCandidate>& candidates, const ConvTrial& trial);

// The candidate already decided (timed or pinned) for `problem_key` at the current thread count,
// deciding nothing: nullopt while undecided or being decided, and in deterministic mode. For
// callers that prepare a candidate's operands (a packed weight) only while it can still win.
std::optional<ConvCandidate> conv_choice_for(const std::string& problem_key);

// One decision: the key (thread count and determinism included), the candidates considered,
// the winner, each candidate's best time in ms (NaN: not timed; rejected: Winograd out of
// tolerance; dropped: timing ended early) and how it was decided ("timed", "pinned",
// "only candidate").
struct ConvChoice {
  std::string key;
  std::vector<ConvCandidate> candidates;
  ConvCandidate chosen = ConvCandidate::onednn_direct;
  std::vector<double> ms;
  std::vector<bool> rejected;
  std::vector<bool> dropped;
  std::string how;
  std::vector<double> deviations;  // per candidate: max|winograd - exact| / max|exact| (NaN: exact)
  double winograd_deviation = 0;   // the largest of `deviations` over the Winograd candidates tried
  int calls = 0;                  // runs the timing took, warm-ups included
  double cost_ms = 0;             // what those runs took beyond one run of the winner
};
// Every decision so far (waits for decisions in progress).
std::vector<ConvChoice> conv_choices();

struct ConvChoiceStats {
  uint64_t timed = 0;   // decisions made by timing candidates
  uint64_t pinned = 0;  // decisions taken from a pin file
  uint64_t fixed = 0;   // decisions with a single candidate (nothing to time)
};
ConvChoiceStats conv_choice_stats();

// Writes every decision as "<key> <candidate>" lines (the pin file format). IOError when the
// file cannot be written.
void save_conv_choices(const std::string& path);
// Pins the choices of a file (adds to, and overrides, earlier pins). IOError naming the file and
// line for a malformed line or unknown candidate; a missing file is an IOError too.
void load_conv_choices(const std::string& path);
// Forgets every decision, pin and counter; the next choice reads KERAS_CONV_CHOICES again.
void reset_conv_choices();

// Tests: while set, every convolution whose candidates include `c` runs with it, bypassing the
// cache (nothing recorded). nullopt restores the normal choice.
void force_conv_candidate(std::optional<ConvCandidate> c);

}  // namespace keras::cpu
