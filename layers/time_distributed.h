// TimeDistributed (keras.layers.TimeDistributed): applies a layer to every timestep of
// (batch, time, ...) inputs: the layer sees (batch * time, ...) and its output is reshaped to
// (batch, time, ...). The input mask passes through unchanged, as Keras's, and a mask of rank >= 3
// (batch, time, steps...) reaches a layer whose call takes a mask (RNNs, GlobalAveragePooling1D)
// as (batch * time, steps...): each timestep's own mask.
#pragma once
#include "layers/layer_handle.h"
#include "layers/nested_layer.h"

namespace keras::layers {

struct TimeDistributedOptions {
  LayerPtr layer;  // required; one input, one output
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weights: the wrapped layer's (paths "<time_distributed>/<layer>/..."). Input: rank >= 3
// (ShapeError otherwise). ValueError for a missing layer or one with several outputs.
class TimeDistributedImpl : public Layer, public KeyedSublayers {
 public:
  explicit TimeDistributedImpl(TimeDistributedOptions options);
  std::string class_name() const override { return "TimeDistributed"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  bool supports_masking() const override { return true; }
  json get_config() const override;
  std::vector<LayerPtr> sublayers() const override { return {layer_}; }
  std::vector<std::pair<std::string, LayerPtr>> keyed_sublayers() const override { return {{"layer", layer_}}; }
  void update_paths(const std::string& prefix) override;
  const LayerPtr& layer() const { return layer_; }

 private:
  LayerPtr layer_;
  std::string prefix_;
};
KERAS_LAYER_HANDLE(TimeDistributed, TimeDistributedOptions);

}  // namespace keras::layers
