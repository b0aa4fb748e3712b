// StochasticDepth (keras.src.applications.convnext.StochasticDepth): drops a residual branch for
// whole samples while training (DropPath, arXiv:1603.09382), as ConvNeXt uses it with
// drop_path_rate > 0.
//
// Training: each sample (index of axis 0) is kept with probability keep = 1 - drop_path_rate and
// then scaled by 1 / keep, else zeroed: Keras's (x / keep) * floor(keep + uniform(0, 1)), with one
// uniform per sample. Inference (and drop_path_rate = 0): the identity. drop_path_rate = 1 zeroes
// every sample (Keras would divide by zero and give NaN). The uniforms come from the layer's
// generator, seeded from the global one (keras::set_random_seed) on first use, as Keras 3 draws
// from its global SeedGenerator; there is no seed in the config (Keras has none).
//
// Config: drop_path_rate. Written as Keras 3 writes it: module "keras.src.applications.convnext",
// registered_name "StochasticDepth".
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct StochasticDepthOptions {
  double drop_path_rate = 0.0;  // in [0, 1] (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class StochasticDepthImpl : public Layer {
 public:
  explicit StochasticDepthImpl(StochasticDepthOptions options);
  std::string class_name() const override { return "StochasticDepth"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const StochasticDepthOptions& options() const { return options_; }

 private:
  StochasticDepthOptions options_;
};
KERAS_LAYER_HANDLE(StochasticDepth, StochasticDepthOptions);

// Reads a Keras 3 or tf_keras config (unknown keys ignored); ValueError when drop_path_rate is
// missing or not a number.
StochasticDepthOptions stochastic_depth_options_from_config(const json& config);

}  // namespace keras::layers
