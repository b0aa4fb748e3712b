// UpSampling1D (keras.layers.UpSampling1D): repeats every step `size` times along the steps axis
// of (batch, steps, channels): out[:, t] = x[:, t / size]. Config: size.
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct UpSampling1DOptions {
  int64_t size = 2;  // >= 1 (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class UpSampling1DImpl : public Layer {
 public:
  explicit UpSampling1DImpl(UpSampling1DOptions options);
  std::string class_name() const override { return "UpSampling1D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;  // rank 3
  json get_config() const override;
  const UpSampling1DOptions& options() const { return options_; }

 private:
  UpSampling1DOptions options_;
};
KERAS_LAYER_HANDLE(UpSampling1D, UpSampling1DOptions);

UpSampling1DOptions up_sampling1d_options_from_config(const json& config);

}  // namespace keras::layers
