// Rescaling (keras.layers.Rescaling): x * scale + offset (e.g. scale 1/255 for pixels).
// Config: scale (a number, or a list of per-channel factors), offset.
#pragma once
#include <optional>
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

struct RescalingOptions {
  double scale = 1.0;
  double offset = 0.0;
  // Keras's scale given as a list: one factor per entry of the last axis (channels_last), as
  // EfficientNet's ImageNet stem has. Non-empty, it replaces `scale` and is the config's "scale".
  std::vector<double> channel_scales;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class RescalingImpl : public Layer {
 public:
  explicit RescalingImpl(RescalingOptions options);
  std::string class_name() const override { return "Rescaling"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  bool supports_masking() const override { return true; }  // Keras: the mask passes through
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  // Integer inputs (pixels) come out float32; floating inputs keep their dtype.
  std::vector<DType> compute_output_dtype(const std::vector<DType>& in) override {
    return {is_floating(in.at(0)) ? in[0] : DType::float32};
  }
  // ShapeError: not one input, or channel_scales whose count is not the last axis's extent.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const RescalingOptions& options() const { return options_; }

 private:
  RescalingOptions options_;
};
KERAS_LAYER_HANDLE(Rescaling, RescalingOptions);

// Reads a Keras 2 or Keras 3 config (unknown keys ignored); a list scale becomes channel_scales.
RescalingOptions rescaling_options_from_config(const json& config);

}  // namespace keras::layers
