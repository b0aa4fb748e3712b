// Permute (keras.layers.Permute): reorders the non-batch axes; dims is a permutation of
// 1..rank-1 (1-based, the batch axis stays first). Config: dims.
#pragma once
#include <vector>

#include "layers/layer_handle.h"

namespace keras::layers {

struct PermuteOptions {
  std::vector<int64_t> dims;  // a permutation of 1..len(dims) (ValueError otherwise)
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class PermuteImpl : public Layer {
 public:
  explicit PermuteImpl(PermuteOptions options);
  std::string class_name() const override { return "Permute"; }
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  // ShapeError unless one input of rank len(dims) + 1.
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  const PermuteOptions& options() const { return options_; }

 private:
  PermuteOptions options_;
};
KERAS_LAYER_HANDLE(Permute, PermuteOptions);

PermuteOptions permute_options_from_config(const json& config);

}  // namespace keras::layers
