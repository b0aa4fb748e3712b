// InputLayer and keras::layers::Input: the entry points of a functional graph.
#pragma once
#include <optional>

#include "layers/layer_handle.h"

namespace keras::layers {

struct InputOptions {
  Shape shape;                        // without the batch axis
  std::optional<int64_t> batch_size;  // fixed batch extent, unknown (-1) when unset
  std::string dtype = "float32";      // "float32", "int32", "int64"...
  std::string name;
};

// Identity layer whose node 0 produces the model's input KerasTensor.
class InputLayerImpl : public Layer {
 public:
  explicit InputLayerImpl(InputOptions options);
  std::string class_name() const override { return "InputLayer"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;  // batch_shape, dtype, sparse, ragged, name, optional (Keras 3.15)
  // The symbolic tensor this layer feeds into the graph (created on first request); also its input.
  KerasTensor output() override;
  KerasTensor input() override { return output(); }
  const Shape& batch_shape() const { return batch_shape_; }
  DType dtype() const { return dtype_; }

 private:
  Shape batch_shape_;
  DType dtype_;
  // The node output() recorded. Owning it is safe: it has no inputs, so it owns no layer.
  std::shared_ptr<const LayerNode> output_node_;
  int output_index_ = 0;
};
KERAS_LAYER_HANDLE(InputLayer, InputOptions);

// keras.Input(shape): a symbolic input tensor of shape (None, *shape).
KerasTensor Input(const Shape& shape, InputOptions options = {});

}  // namespace keras::layers
