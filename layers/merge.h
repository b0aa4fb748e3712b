// Merge: the base of the layers that combine a list of tensors (keras.layers.Merge in Keras 3):
// Add, Subtract, Multiply, Average, Maximum, Minimum (elementwise_merge.h), Concatenate and Dot.
//
// The base implements the elementwise contract: at least two inputs (Subtract: exactly two), one
// batch extent for all known batch extents, and the non-batch shapes broadcast as NumPy does.
// Inputs of lower rank get size-1 axes inserted right after the batch axis, as Keras does, so
// (batch, 3) merges with (batch, 4, 3) into (batch, 4, 3). Every input needs one dtype.
// Concatenate and Dot replace validate_input / compute_output_shape / call with their own rules.
//
// Errors name the layer and every input shape: ShapeError for shapes, TypeError for dtypes.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

// The config of the weightless elementwise merges (Keras: base keys only).
struct MergeOptions {
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class MergeImpl : public Layer {
 public:
  explicit MergeImpl(const LayerOptions& options) : Layer(options) {}

  // Count, batch and broadcast checks (see the file comment).
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  // Batch extent (known if any input knows it) + the broadcast non-batch shape.
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // Every input's dtype must be the same (TypeError naming the layer otherwise).
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  // Checks dtypes, aligns ranks (axes inserted after the batch axis) and calls merge_function.
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  // Keras's Merge: masks pass through; the output's mask is the OR of the inputs' masks, none
  // when any input has none (Concatenate and Dot override it).
  bool supports_masking() const override { return true; }
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;

 protected:
  // The merge of inputs of one rank (broadcast by keras::ops); at least min_inputs() of them.
  virtual Tensor merge_function(const TensorList& inputs) const = 0;
  // The merge when some inputs carry masks (`masks`: one per input, undefined where none).
  // Default: masks do not change the values (Add, Subtract, Average, as Keras).
  virtual Tensor merge_with_masks(const TensorList& inputs, const TensorList& masks) const {
    (void)masks;
    return merge_function(inputs);
  }
  virtual size_t min_inputs() const { return 2; }
  virtual size_t max_inputs() const { return static_cast<size_t>(-1); }
  // "(None, 3), (None, 4)": the shapes of an error message.
  static std::string shapes_str(const std::vector<Shape>& shapes);
  // ShapeError unless the number of inputs is within [min_inputs(), max_inputs()].
  void check_input_count(const std::vector<Shape>& shapes) const;
  // ShapeError unless every known batch extent agrees; returns it (-1 when none is known).
  int64_t common_batch(const std::vector<Shape>& shapes) const;
  // TypeError unless all dtypes are equal.
  void check_same_dtypes(const std::vector<DType>& dtypes) const;
};

// KERAS_LAYER_HANDLE plus calls on a braced list that return the one merged tensor, as Keras's
// `Add()([a, b])`: `Add()({a, b})` gives a KerasTensor (or a Tensor for tensors). Calls on a
// std::vector / TensorList keep the general Layer form (a list of outputs).
#define KERAS_MERGE_LAYER_HANDLE(Name, Options)                                                     \
  class Name : public ::keras::LayerHandle<Name##Impl> {                                          \
   public:                                                                                        \
    Name(Options options = {}) : LayerHandle(std::make_shared<Name##Impl>(std::move(options))) {} \
    explicit Name(std::shared_ptr<Name##Impl> impl) : LayerHandle(std::move(impl)) {}             \
    using LayerHandle::operator();                                                                \
    ::keras::KerasTensor operator()(std::initializer_list<::keras::KerasTensor> xs,               \
                                    ::keras::CallArgs args = {}) const {                          \
      return (**this)(std::vector<::keras::KerasTensor>(xs), args)[0];                            \
    }                                                                                             \
    ::keras::Tensor operator()(std::initializer_list<::keras::Tensor> xs, ::keras::CallArgs args = {}) const { \
      return (**this)(::keras::TensorList(xs), args)[0];                                         \
    }                                                                                             \
  }

}  // namespace keras::layers
