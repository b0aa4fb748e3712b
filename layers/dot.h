// Dot (keras.layers.Dot): the batch dot product of two tensors, as Keras 3.
// For x1 of shape (batch, ...) and x2 of shape (batch, ...), contracts axis axes[0] of x1 with
// axis axes[1] of x2 per sample. The output shape is x1's shape without axes[0] followed by x2's
// shape without the batch axis and axes[1]; a result of rank 1 gets a trailing 1:
//   (batch, n) . (batch, n) -> (batch, 1);  (batch, m, n) . (batch, n, k) with axes {2, 1} -> (batch, m, k).
// normalize=true l2-normalises both inputs along their axes first (the cosine similarity),
// x / max(||x||, 1e-7) as keras.ops.normalize.
//
//   auto sim = keras::layers::Dot({.axes = 1, .normalize = true})({a, b});
//   auto att = keras::layers::dot({q, k}, {.axes = {2, 2}});
#pragma once
#include "layers/merge.h"

namespace keras::layers {

// Dot's `axes`: one int for both inputs, or a pair. Negative axes count from each input's end.
struct DotAxes {
  int first = 0, second = 0;
  bool pair = false;  // written as [first, second] in the config
  bool set = false;   // Keras has no default: construction throws ValueError when unset
  DotAxes() = default;
  DotAxes(int axis) : first(axis), second(axis), set(true) {}
  DotAxes(int a, int b) : first(a), second(b), pair(true), set(true) {}
};

struct DotOptions {
  DotAxes axes;  // required
  bool normalize = false;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Exactly two inputs of rank >= 2; the contracted extents must agree (unknown matches); the
// batch axis cannot be contracted. ShapeError naming the layer, the axes and both shapes.
class DotImpl : public MergeImpl {
 public:
  explicit DotImpl(DotOptions options);
  std::string class_name() const override { return "Dot"; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  json get_config() const override;  // base keys + axes (int or [a, b]) + normalize
  // Keras: the output never carries a mask.
  TensorList compute_mask(const TensorList&, const TensorList&) const override { return {Tensor()}; }
  const DotOptions& options() const { return options_; }

 protected:
  Tensor merge_function(const TensorList& inputs) const override;
  size_t max_inputs() const override { return 2; }

 private:
  // The two contracted axes, made non-negative for inputs of ranks r1 and r2.
  std::pair<int, int> resolved_axes(int64_t r1, int64_t r2) const;
  DotOptions options_;
};
KERAS_MERGE_LAYER_HANDLE(Dot, DotOptions);

// keras.layers.dot: a fresh Dot called on `inputs`.
KerasTensor dot(const std::vector<KerasTensor>& inputs, DotOptions options);

DotOptions dot_options_from_config(const json& config);

}  // namespace keras::layers
