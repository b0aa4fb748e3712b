// UnitNormalization (keras.layers.UnitNormalization): scales each sample to unit L2 norm over
// `axis`: x * min(1 / sqrt(sum(x^2)), 1e12) (Keras's ops.normalize, so a zero vector stays
// zero). No weights; masks pass through.
#pragma once
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

struct UnitNormalizationOptions {
  std::vector<int64_t> axis = {-1};  // one or more axes (negative counts from the end)
  // Keras writes an int axis as an int and a list as a list; true when the axis was a list.
  bool axis_is_list = false;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// ShapeError (naming the layer) for an axis outside the input's rank; ValueError for no axis.
class UnitNormalizationImpl : public Layer {
 public:
  explicit UnitNormalizationImpl(UnitNormalizationOptions options);
  std::string class_name() const override { return "UnitNormalization"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  json get_config() const override;

 private:
  UnitNormalizationOptions options_;
};
KERAS_LAYER_HANDLE(UnitNormalization, UnitNormalizationOptions);

UnitNormalizationOptions unit_normalization_options_from_config(const json& config);

}  // namespace keras::layers
