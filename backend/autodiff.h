// Reverse-mode automatic differentiation.
//
// Ops record a Node only while a GradientTape is active (and no NoGradGuard is) and at least one
// input requires a gradient. Trainable variables are leaves with requires_grad; frozen ones are
// not, so ops on frozen weights alone record nothing and cost no gradient memory.
// The backward walk is iterative (a ready queue over dependency counts, no recursion) and frees
// each node's saved tensors as soon as its gradient has been propagated.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "backend/op_registry.h"

namespace keras {

// One recorded op application.
struct Node {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<TensorSpec> input_specs, output_specs;
  TensorList saved_inputs, saved_outputs;  // detached; only what the op declared
  // Per input: the node that produced it (and which output), or the leaf it is.
  struct Edge {
    std::shared_ptr<Node> node;
    int output_index = 0;
    std::shared_ptr<TensorImpl> leaf;  // set when the input is a requires_grad leaf
    bool active() const { return node != nullptr || leaf != nullptr; }
  };
  std::vector<Edge> edges;
  // The layer path the op ran under, kept only while instrumentation is active (debugging tools
  // name a gradient by it).
  std::shared_ptr<const std::string> layer_path;
  void release();  // drops saved tensors and edges after backward
};

// True while ops should be recorded.
bool grad_recording();

// Disables recording in its scope (inside a tape too).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Public tape for custom training loops, as tf.GradientTape:
//   GradientTape tape;
//   Tensor loss = ...;                      // ops on variables are recorded
//   TensorList grads = tape.gradient(loss, {w, b});
// The tape records from construction until gradient() or destruction. Sources are leaves with
// requires_grad (variables) or tensors passed to watch() before use, or any recorded
// intermediate. gradient() may be called once (persistent=false); an undefined Tensor is returned
// for a source the target does not depend on.
class GradientTape {
 public:
  explicit GradientTape(bool persistent = false);
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  // Marks `t` (a leaf) as requiring a gradient for the lifetime of this tape.
  void watch(Tensor& t);
  // d target / d sources; target is reduced by summing when not a scalar (as TF does).
  // Throws StateError when called twice on a non-persistent tape.
  TensorList gradient(const Tensor& target, const TensorList& sources);
  // The same, calling on_ready(i, gradient) for source i as soon as its gradient is final, during
  // the walk (data-parallel training starts averaging it while the rest of backward runs).
  TensorList gradient(const Tensor& target, const TensorList& sources,
                      const std::function<void(size_t, const Tensor&)>& on_ready);
  void stop_recording();

 private:
  void unwatch_all();
  bool persistent_;
  bool recording_ = true;
  bool used_ = false;
  // Tensors watch() switched on; switched off again when the tape is done, so that watching
  // (even a frozen variable) never leaks into later tapes.
  std::vector<std::shared_ptr<TensorImpl>> watched_;
};

// The engine underneath GradientTape: gradients of `target` (seeded with `seed`, ones when
// undefined) with respect to `sources`. `retain_graph` keeps saved tensors for another call.
// `on_ready`, when set, is called once per source whose gradient is final, as soon as it is:
// with the leaf's gradient when its last consumer's backward ran (reverse layer order), for other
// sources when the walk ends. Sources the target does not depend on are not reported.
using GradientReadyFn = std::function<void(size_t source, const Tensor& gradient)>;
TensorList compute_gradients(const Tensor& target, const TensorList& sources, const Tensor& seed = {},
                             bool retain_graph = false, const GradientReadyFn& on_ready = {});

}  // namespace keras
