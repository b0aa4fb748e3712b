// Which kernel runs a float32 CPU convolution, chosen by measurement.
//
// Why: the project's direct AVX2 kernels (conv_direct.h, conv_backward_weights_direct.h) beat
// oneDNN 2.6 on AVX2-only CPUs and lose badly to its AVX-512 kernels (cnn inference 0.55x against
// 1.50x of PyTorch on an AVX-512 Xeon); fixed rules tuned on one machine are wrong on another.
// So every convolution problem (direction, shapes, geometry, activation, bias, propagation kind,
// thread count) with more than one candidate times each candidate once, on its first use, on the
// real tensors, and keeps the fastest for the rest of the process.
//
// Candidates: `direct` (the project's AVX2 kernels, where their support predicate holds),
// `onednn_direct` (oneDNN's convolution_direct: always there) and `onednn_winograd` (oneDNN's
// convolution_winograd: float32 3x3 stride 1, where oneDNN offers it - AVX-512 CPUs - and where its
// result on the first call stays within kWinogradTolerance of an exact candidate's).
//
// Cost: one warm-up run of each candidate (it pays oneDNN's JIT and the weight reorder, which
// the chosen candidate would pay anyway), then rounds of one timed run per candidate, interleaved
// so that a noisy neighbour slows all alike, until kTimingBudgetMs of timed runs or 5 rounds;
// the fastest run decides. So about 30-60 ms once per problem, or 2 runs per candidate where a
// run takes longer than that.
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

enum class ConvCandidate { direct, onednn_direct, onednn_winograd };

// "direct", "onednn_direct", "onednn_winograd": the names of the pin file and the log.
const char* conv_candidate_name(ConvCandidate c);
std::optional<ConvCandidate> conv_candidate_from_name(const std::string& name);

// True for `direct` only. Each output element of the direct kernels is summed by one thread in a
// fixed order (the forward and input-gradient kernels split output rows, the weight-gradient
// kernel output tiles). oneDNN's backward-weights kernels add per-thread partial sums, and its
// forward and backward-data kernels pick their blockings (hence the summation order) from the
// thread count, so oneDNN's results may change with it.
bool thread_count_independent(ConvCandidate c);

// Winograd's transforms round differently: accepted where max|winograd - exact| <= this times
// max|exact| over the outputs of the first call.
inline constexpr double kWinogradTolerance = 1e-4;
inline constexpr double kTimingBudgetMs = 30.0;

// What the chooser needs to time candidates on a problem's real tensors.
struct ConvTrial {
  // Computes the problem's outputs with candidate c (overwriting them).
  std::function<void(ConvCandidate)> run;
  // The float32 buffers `run` writes (pointer, element count): compared between candidates.
  std::vector<std::pair<const float*, size_t>> outputs;
};

// The candidate to run for the problem `problem_key` (no spaces; the caller's full parameter
// key, to which the thread count is added here). `candidates`: those that can run it, exact ones
// first, not empty. Times them through `trial` on the first call for a key (the outputs are then
// left as the last run wrote them: the caller runs the winner afterwards as on any call), and
// returns the cached choice after. A cached or pinned choice that is no longer among
// `candidates` (set_conv_direct(false) since) is decided again. Thread-safe: concurrent first
// calls of one key time once, the others wait for the result.
ConvCandidate choose_conv(const std::string& problem_key, const std::vector<ConvCandidate>& candidates,
                          const ConvTrial& trial);

// One decision: the key (thread count and determinism included), the candidates considered,
// the winner, each candidate's best time in ms (NaN: not timed; rejected: Winograd out of
// tolerance) and how it was decided ("timed", "pinned", "only candidate").
struct ConvChoice {
  std::string key;
  std::vector<ConvCandidate> candidates;
  ConvCandidate chosen = ConvCandidate::onednn_direct;
  std::vector<double> ms;
  std::vector<bool> rejected;
  std::string how;
  double winograd_deviation = 0;  // max|winograd - exact| / max|exact| when Winograd was tried
  double cost_ms = 0;             // all runs of the timing, warm-up included
};
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
