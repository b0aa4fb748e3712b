// The shared implementation of GlobalAveragePooling1D/2D and GlobalMaxPooling1D/2D
// (keras.layers.Global*Pooling*D): the mean or max over the steps (1D) or the height and width
// (2D), keeping those axes as extents of 1 when keepdims. Config keys: data_format, keepdims.
#pragma once
#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct GlobalPoolingOptions {
  std::string data_format = "channels_last";
  bool keepdims = false;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class GlobalPoolingBaseImpl : public Layer {
 public:
  // rank 1 (input (batch, steps, channels)) or 2 (input (batch, height, width, channels)).
  GlobalPoolingBaseImpl(const GlobalPoolingOptions& options, bool max, int rank);
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;
  // Keras: only GlobalAveragePooling1D supports masking; it averages over the unmasked steps
  // (the input's mask, (batch, steps)) and its output carries no mask. The others ignore masks.
  bool supports_masking() const override { return !max_ && rank_ == 1; }
  TensorList compute_mask(const TensorList&, const TensorList&) const override { return {Tensor()}; }
  const GlobalPoolingOptions& options() const { return options_; }

 protected:
  // Checks the options; called by the concrete constructors (where() needs class_name()).
  void validate_options() const { require_channels_last(options_.data_format, where()); }

 private:
  GlobalPoolingOptions options_;
  bool max_;
  int rank_;
};

GlobalPoolingOptions global_pooling_options_from_config(const json& config);

#define KERAS_GLOBAL_POOLING_LAYER(Name, is_max, rank)                                          \
  class Name##Impl : public GlobalPoolingBaseImpl {                                             \
   public:                                                                                      \
    explicit Name##Impl(GlobalPoolingOptions options) : GlobalPoolingBaseImpl(options, is_max, rank) { \
      validate_options();                                                                       \
    } \
    std::string class_name() const override { return #Name; }                                  \
  };                                                                                            \
  KERAS_LAYER_HANDLE(Name, GlobalPoolingOptions)

}  // namespace keras::layers
