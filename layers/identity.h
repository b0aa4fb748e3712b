// Identity (keras.layers.Identity): returns its input unchanged, mask included; a placeholder.
#pragma once
#include "layers/layer_handle.h"

namespace keras::layers {

struct IdentityOptions {
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class IdentityImpl : public Layer {
 public:
  explicit IdentityImpl(IdentityOptions options) : Layer(LayerOptions{options.name, options.trainable, options.dtype}) {}
  std::string class_name() const override { return "Identity"; }
  TensorList call(const TensorList& inputs, const CallContext&) override { return inputs; }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  std::vector<DType> compute_output_dtype(const std::vector<DType>& d) override { return d; }
  bool supports_masking() const override { return true; }
};
KERAS_LAYER_HANDLE(Identity, IdentityOptions);

}  // namespace keras::layers
