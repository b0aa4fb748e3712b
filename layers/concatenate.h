// Concatenate (keras.layers.Concatenate): joins a list of tensors along `axis` (default -1, the
// features). Inputs need one rank and equal extents on every other axis (an unknown extent
// matches anything); ShapeError naming the layer, the axis and every shape otherwise.
//
//   auto x = keras::layers::Concatenate()({a, b});
//   auto y = keras::layers::concatenate({a, b}, {.axis = 1});
#pragma once
#include "layers/merge.h"

namespace keras::layers {

struct ConcatenateOptions {
  int axis = -1;  // may be negative; counts the batch axis, as Keras
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ConcatenateImpl : public MergeImpl {
 public:
  explicit ConcatenateImpl(ConcatenateOptions options = {});
  std::string class_name() const override { return "Concatenate"; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  // The extents along `axis` add up (unknown when any is unknown); other axes as given.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  json get_config() const override;  // base keys + axis
  // Keras's: each input's mask (all true where it has none, widened to the input's shape) joined
  // along `axis`, then any over the last axis; none when no input has a mask.
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  const ConcatenateOptions& options() const { return options_; }

 protected:
  Tensor merge_function(const TensorList& inputs) const override;

 private:
  ConcatenateOptions options_;
};
KERAS_MERGE_LAYER_HANDLE(Concatenate, ConcatenateOptions);

// keras.layers.concatenate: a fresh Concatenate called on `inputs`.
KerasTensor concatenate(const std::vector<KerasTensor>& inputs, ConcatenateOptions options = {});

ConcatenateOptions concatenate_options_from_config(const json& config);

}  // namespace keras::layers
