// Instrumentation: the hooks through which the debugging tools (check-numerics, tensor dumps, the
// profiler) watch ops and layers run. With no observer attached each op and each layer call pays
// one relaxed atomic load and nothing else; with one attached, every op run (forward, and inside
// the backward walk) and every eager layer call is reported to it, with the layer path it ran
// under ("model/block_3/conv" style: the names of the layers whose calls enclose it).
//
// Observers are called on the thread that runs the op (the user's thread, or a Dataset.map
// worker), so they must be thread-safe. An observer may throw (check-numerics does): the
// exception leaves run_op or the layer call as the op's own error would.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "backend/op_registry.h"

namespace keras::instrumentation {

enum class Phase { forward, gradient };

// One op run, as an observer sees it. References are valid during the call only.
struct OpRecord {
  const OpDef& op;
  const Attrs& attrs;
  const TensorList& inputs;   // as the kernel saw them (contiguous unless op.strided_inputs)
  const TensorList& outputs;
  Phase phase;
  // Forward: the enclosing layers' path ("" outside any layer call). Gradient: the path the
  // differentiated forward op ran under.
  const std::string& layer_path;
  const std::string& forward_op;  // gradient phase: the op being differentiated ("" for the walk's own sums)
  int64_t start_ns;               // steady clock around the kernel alone
  int64_t end_ns;
};

// Where the training loop is; set by Model's loops, read by error messages and traces.
struct StepInfo {
  std::string mode;  // "train", "test", "predict" or "" outside the loops
  int epoch = -1;
  int64_t step = -1;  // batch index within the epoch (or pass)
};

class Observer {
 public:
  virtual ~Observer() = default;
  virtual void op_run(const OpRecord&) {}
  // An eager Layer::operator() call; `path` includes the layer's own name.
  virtual void layer_begin(const std::string& path, const std::string& class_name) { (void)path, (void)class_name; }
  virtual void layer_end(const std::string& path, const std::string& class_name, const TensorList& outputs) {
    (void)path, (void)class_name, (void)outputs;
  }
};

// Attaching the same observer twice is a no-op; detach of an unknown one too.
void attach(std::shared_ptr<Observer> observer);
void detach(const Observer* observer);
// True while any observer is attached (one relaxed atomic load).
bool active();

// The layer path of the calling thread ("" outside any layer call).
const std::string& layer_path();
// A shared handle to it, for tape nodes to remember (null when inactive or outside layers).
std::shared_ptr<const std::string> layer_path_handle();

void set_step(StepInfo info);
StepInfo step();

// Restores the step that was current at construction when it ends (Model's loops use one, so a
// step does not outlive its loop, and a validation pass inside fit hands "train" back). Two
// lock/unlock pairs per loop, so it runs whether or not an observer is attached (one may be
// attached by a callback mid-loop).
class StepScope {
 public:
  StepScope();
  ~StepScope();
  StepScope(const StepScope&) = delete;
  StepScope& operator=(const StepScope&) = delete;

 private:
  bool on_ = false;
  StepInfo previous_;
};

// Calls `fn` with the gradient of a backward walk's target with respect to `t` when a walk
// reaches the op that produced `t` (with the gradient complete, before that op's own gradient
// runs), once per walk. Lets a tool see d(loss)/d(layer output) without changing the walk.
// No-op unless `t` was recorded on a tape (has a grad_fn) and an observer is attached; the
// watch ends when the tape node is freed. `fn` runs on the walk's thread and may throw.
using GradientFn = std::function<void(const Tensor& gradient)>;
void on_gradient(const Tensor& t, GradientFn fn);

// Pushes a layer onto the calling thread's path while active; reports begin, and end through
// finished() (not on exceptions: the layer did not finish).
class LayerScope {
 public:
  LayerScope(const std::string& name, const std::string& class_name);
  ~LayerScope();
  void finished(const TensorList& outputs);
  LayerScope(const LayerScope&) = delete;
  LayerScope& operator=(const LayerScope&) = delete;

 private:
  bool on_ = false;
  std::shared_ptr<const std::string> previous_;
  std::string class_name_;
};

// Marks the calling thread as running gradient ops: of `forward_op` under `path` (a node's
// backward), or with an empty op for the whole walk. Nests.
class GradientScope {
 public:
  GradientScope(std::string forward_op, std::shared_ptr<const std::string> path);
  ~GradientScope();
  GradientScope(const GradientScope&) = delete;
  GradientScope& operator=(const GradientScope&) = delete;

 private:
  bool on_ = false;
  bool previous_in_gradient_ = false;
  std::string previous_op_;
  std::shared_ptr<const std::string> previous_path_;
};

// While set, dense and conv2d run a fusable activation as an op of its own instead of a oneDNN
// post-op (oneDNN 2.6's fused relu maps NaN to 0): check-numerics sets it, so that the product's
// own output is checked and a NaN made inside it is not hidden. One relaxed load per call.
void set_split_fused_activations(bool on);
bool split_fused_activations();

namespace detail {
// Called by run_op while active.
void notify_op(const OpDef& op, const Attrs& attrs, const TensorList& inputs, const TensorList& outputs,
               int64_t start_ns, int64_t end_ns);
int64_t now_ns();
// Called by the backward walk, while active, with a node's complete output gradients.
void notify_gradients(const void* node, const TensorList& grad_outputs);
}  // namespace detail

}  // namespace keras::instrumentation
