// ZeroPadding1D (keras.layers.ZeroPadding1D): adds padding.first zero steps at the start and
// padding.second at the end of (batch, steps, channels). Config: padding [start, end],
// data_format (channels_last only).
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct ZeroPadding1DOptions {
  PairArg padding = 1;  // non-negative (ValueError otherwise); one int pads both ends
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ZeroPadding1DImpl : public Layer {
 public:
  explicit ZeroPadding1DImpl(ZeroPadding1DOptions options);
  std::string class_name() const override { return "ZeroPadding1D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;  // rank 3
  json get_config() const override;
  const ZeroPadding1DOptions& options() const { return options_; }

 private:
  ZeroPadding1DOptions options_;
};
KERAS_LAYER_HANDLE(ZeroPadding1D, ZeroPadding1DOptions);

ZeroPadding1DOptions zero_padding1d_options_from_config(const json& config);

}  // namespace keras::layers
