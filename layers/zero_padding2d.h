// ZeroPadding2D (keras.layers.ZeroPadding2D): zero rows/columns around NHWC images.
// Config: padding ((top, bottom), (left, right)), data_format.
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct ZeroPadding2DOptions {
  Padding2DArg padding = 1;  // non-negative (ValueError otherwise)
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class ZeroPadding2DImpl : public Layer {
 public:
  explicit ZeroPadding2DImpl(ZeroPadding2DOptions options);
  std::string class_name() const override { return "ZeroPadding2D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const ZeroPadding2DOptions& options() const { return options_; }

 private:
  ZeroPadding2DOptions options_;
};
KERAS_LAYER_HANDLE(ZeroPadding2D, ZeroPadding2DOptions);

ZeroPadding2DOptions zero_padding2d_options_from_config(const json& config);

}  // namespace keras::layers
