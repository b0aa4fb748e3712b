// GroupNormalization (keras.layers.GroupNormalization): the channels of `axis` are split into
// `groups` groups; each sample's group is normalized by its own mean and biased variance over
// the group's channels and every other non-batch axis, then scaled by gamma and shifted by beta
// per channel. groups -1 is instance normalization (one group per channel; the config then
// says the channel count once built, as Keras's does). Weights: gamma (C,) with scale, beta (C,)
// with center. Masks pass through.
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

struct GroupNormalizationOptions {
  int64_t groups = 32;  // >= 1, or -1; must divide the channel count (ValueError at build)
  int64_t axis = -1;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  InitializerArg beta_initializer = "zeros";
  InitializerArg gamma_initializer = "ones";
  RegularizerArg beta_regularizer;
  RegularizerArg gamma_regularizer;
  ConstraintArg beta_constraint;
  ConstraintArg gamma_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class GroupNormalizationImpl : public Layer {
 public:
  explicit GroupNormalizationImpl(GroupNormalizationOptions options);
  std::string class_name() const override { return "GroupNormalization"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  json get_config() const override;

 private:
  GroupNormalizationOptions options_;
  int64_t groups_ = 0;  // resolved at build
  Variable gamma_, beta_;
};
KERAS_LAYER_HANDLE(GroupNormalization, GroupNormalizationOptions);

GroupNormalizationOptions group_normalization_options_from_config(const json& config);

}  // namespace keras::layers
