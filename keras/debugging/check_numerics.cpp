#include "keras/debugging/check_numerics.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <strings.h>

#include "backend/instrumentation.h"
#include "keras/debugging/tensor_stats.h"

namespace keras::debugging {
namespace {

// Ops run by the check itself (the host copy of a CUDA output, a strided input made contiguous
// for a message) are not themselves checked.
thread_local bool t_checking = false;

struct Busy {
  Busy() { t_checking = true; }
  ~Busy() { t_checking = false; }
};

std::string tensor_str(const Tensor& t) { return dtype_name(t.dtype()) + " " + shape_str(t.shape()); }

std::string step_str() {
  const instrumentation::StepInfo s = instrumentation::step();
  if (s.mode.empty()) return "";
  std::string out = "; " + s.mode;
  if (s.epoch >= 0) out += " epoch " + std::to_string(s.epoch) + ",";
  if (s.step >= 0) out += " step " + std::to_string(s.step);
  return out;
}

// "check_numerics: op 'log' in layer 'seq/log' (forward; train epoch 0, step 2)"
std::string where_str(const instrumentation::OpRecord& r) {
  std::string where = "check_numerics: op '" + r.op.name + "' ";
  where += r.layer_path.empty() ? "outside any layer" : "in layer '" + r.layer_path + "'";
  std::string phase = r.op.mutates_inputs ? "update" : "forward";  // in-place ops are optimizer updates
  if (r.phase == instrumentation::Phase::gradient)
    phase = r.forward_op.empty() ? "gradient accumulation" : "gradient of '" + r.forward_op + "'";
  return where + " (" + phase + step_str() + ")";
}

[[noreturn]] void report(const instrumentation::OpRecord& r, const Tensor& bad, const std::string& what,
                         bool in_place = false) {
  const TensorStats s = tensor_stats(bad);
  std::string got = std::to_string(s.nan) + " NaN and " + std::to_string(s.inf()) + " Inf among " +
                    std::to_string(s.size) + " values, the first at " + index_str(bad.shape(), s.first_non_finite);
  std::string hint;
  std::string bad_inputs;
  if (r.inputs.empty()) hint = "No inputs.";
  else hint = in_place ? "Inputs after the update:" : "Inputs:";
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const Tensor& in = r.inputs[i];
    hint += i ? "; #" : " #";
    hint += std::to_string(i) + " " + tensor_str(in);
    if (!is_floating(in.dtype())) continue;
    const TensorStats is = tensor_stats(in);
    hint += " ";
    hint += min_max_counts_str(is);
    if (is.nan + is.inf() > 0) {
      bad_inputs += bad_inputs.empty() ? "#" : ", #";
      bad_inputs += std::to_string(i);
    }
  }
  if (!r.inputs.empty()) hint += ".";
  if (in_place)
    hint += " The in-place update wrote them (a learning rate too large for the gradient?).";
  else if (!bad_inputs.empty())
    hint += " Input " + bad_inputs +
            " already held non-finite values, which no checked op made: they came from data, a weight or a "
            "tensor made before check-numerics was enabled.";
  else
    hint += " The inputs are finite, so '" + r.op.name + "' made the first non-finite value.";
  fail<NumericsError>(where_str(r), "finite values in " + what + " (" + tensor_str(bad) + ")", got, hint);
}

class CheckNumerics : public instrumentation::Observer {
 public:
  void op_run(const instrumentation::OpRecord& r) override {
    if (t_checking || r.op.kernel_allocates) return;  // views hold another op's checked values
    Busy busy;
    for (size_t k = 0; k < r.outputs.size(); ++k)
      if (!all_finite(r.outputs[k])) report(r, r.outputs[k], std::string("output ").append(std::to_string(k)));
    if (r.op.mutates_inputs)  // optimizer updates write their results into the variables
      for (size_t i = 0; i < r.inputs.size(); ++i)
        if (!all_finite(r.inputs[i])) report(r, r.inputs[i], std::string("input ").append(std::to_string(i)).append(" (updated in place)"), true);
  }
};

std::mutex g_mutex;
std::shared_ptr<CheckNumerics> g_observer;  // non-null while enabled

bool env_requests_checking() {
  const char* v = std::getenv("KERAS_CHECK_NUMERICS");
  return v && *v && std::strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0;
}

// Read when the library loads, so that it applies before a program's first op.
[[maybe_unused]] const bool g_from_environment = [] {
  if (env_requests_checking()) enable_check_numerics();
  return true;
}();

}  // namespace

void enable_check_numerics() {
  std::lock_guard lock(g_mutex);
  if (g_observer) return;
  g_observer = std::make_shared<CheckNumerics>();
  instrumentation::set_split_fused_activations(true);  // a fused oneDNN relu would hide a NaN
  instrumentation::attach(g_observer);
}

void disable_check_numerics() {
  std::lock_guard lock(g_mutex);
  if (!g_observer) return;
  instrumentation::detach(g_observer.get());
  instrumentation::set_split_fused_activations(false);
  g_observer.reset();
}

bool check_numerics_enabled() {
  std::lock_guard lock(g_mutex);
  return g_observer != nullptr;
}

}  // namespace keras::debugging
