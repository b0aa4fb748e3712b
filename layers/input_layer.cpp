#include "layers/input_layer.h"

#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {

InputLayerImpl::InputLayerImpl(InputOptions options)
    : Layer(LayerOptions{options.name, true, "float32"}), dtype_(dtype_from_name(options.dtype)) {
  for (auto d : options.shape)
    if (d < -1 || d == 0)
      fail<ShapeError>("InputLayer", "extents >= 1 (or -1 for unknown)", shape_str(options.shape));
  batch_shape_.push_back(options.batch_size.value_or(-1));
  batch_shape_.insert(batch_shape_.end(), options.shape.begin(), options.shape.end());
  mark_built({batch_shape_});
}

void InputLayerImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1 || shapes[0].size() != batch_shape_.size())
    fail<ShapeError>(where(), "one input of shape " + shape_str(batch_shape_),
                     shapes.size() == 1 ? shape_str(shapes[0]) : std::to_string(shapes.size()) + " inputs");
  for (size_t i = 0; i < batch_shape_.size(); ++i)
    if (batch_shape_[i] >= 0 && shapes[0][i] >= 0 && shapes[0][i] != batch_shape_[i])
      fail<ShapeError>(where(), "input of shape " + shape_str(batch_shape_), shape_str(shapes[0]));
}

TensorList InputLayerImpl::call(const TensorList& inputs, const CallContext&) { return inputs; }

json InputLayerImpl::get_config() const {
  json shape = json::array();
  for (auto d : batch_shape_) shape.push_back(d < 0 ? json(nullptr) : json(d));
  return {{"batch_shape", shape}, {"dtype", dtype_name(dtype_)}, {"sparse", false},
          {"ragged", false},       {"name", name()},                {"optional", false}};
}

KerasTensor InputLayerImpl::output() {
  if (!output_node_) {
    auto node = std::make_shared<LayerNode>();
    node->outputs.push_back({batch_shape_, dtype_});
    output_index_ = record_node(node);
    output_node_ = std::move(node);
  }
  // Made afresh: a KerasTensor kept here would own this layer, a cycle that is never freed.
  return KerasTensor{batch_shape_, dtype_, shared_from_this(), output_node_, output_index_, 0};
}

KerasTensor Input(const Shape& shape, InputOptions options) {
  options.shape = shape;
  auto layer = std::make_shared<InputLayerImpl>(std::move(options));
  return layer->output();
}

namespace {
InputOptions input_options_from_config(const json& c) {
  InputOptions o;
  const json& shape = c.contains("batch_shape") ? c["batch_shape"] : c.value("batch_input_shape", json::array());
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i].is_null() ? -1 : shape[i].get<int64_t>();
    if (i == 0) {
      if (d >= 0) o.batch_size = d;
    } else {
      o.shape.push_back(d);
    }
  }
  if (c.contains("dtype") && c["dtype"].is_string()) o.dtype = c["dtype"];
  o.name = c.value("name", "");
  // Inputs here are dense tensors that are always given; absent keys (Keras 2, older Keras 3)
  // mean false.
  for (const char* key : {"sparse", "ragged", "optional"})
    if (c.contains(key) && c[key] == true)
      fail<NotImplementedError>("InputLayer '" + o.name + "' config '" + key + "'", "false", "true",
                                "Only dense inputs that are always given are supported.");
  return o;
}
}  // namespace

KERAS_REGISTER_LAYER(InputLayer, [](const json& c) -> LayerPtr {
  return std::make_shared<InputLayerImpl>(input_options_from_config(c));
});
KERAS_SIGNATURE(InputLayer, .built_at_init = true);

}  // namespace keras::layers
