// SpatialDropout2D (keras.layers.SpatialDropout2D): while training, drops whole channels of
// NHWC images (one decision per sample and channel) and scales the kept ones by 1/(1-rate);
// identity otherwise. Masks come from the layer's own generator (seeded from `seed`, else from
// the global generator on first use). Config: rate, seed, data_format.
#pragma once
#include <optional>

#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct SpatialDropout2DOptions {
  double rate = 0.0;  // in [0, 1)
  std::string data_format = "channels_last";
  std::optional<int64_t> seed;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class SpatialDropout2DImpl : public Layer {
 public:
  explicit SpatialDropout2DImpl(SpatialDropout2DOptions options);
  std::string class_name() const override { return "SpatialDropout2D"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const SpatialDropout2DOptions& options() const { return options_; }

 private:
  SpatialDropout2DOptions options_;
};
KERAS_LAYER_HANDLE(SpatialDropout2D, SpatialDropout2DOptions);

SpatialDropout2DOptions spatial_dropout2d_options_from_config(const json& config);

}  // namespace keras::layers
