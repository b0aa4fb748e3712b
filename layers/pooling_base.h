// The shared implementation of the local pooling layers MaxPooling1D/2D and AveragePooling1D/2D
// (keras.layers.*Pooling*D). 1D pooling runs as 2D pooling over a height of 1.
//
// Input (batch, steps, channels) for 1D, (batch, height, width, channels) for 2D; a window that
// does not fit the input with padding "valid" is a ShapeError naming the layer and both shapes.
// Config keys as Keras 3 writes them: pool_size, padding, strides (resolved: pool_size when
// unset), data_format; 1D sizes are lists of one int.
#pragma once
#include <optional>

#include "layers/layer_handle.h"
#include "layers/spatial_args.h"

namespace keras::layers {

struct Pooling1DOptions {
  int64_t pool_size = 2;
  std::optional<int64_t> strides;  // unset: pool_size
  std::string padding = "valid";   // "valid" or "same"
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

struct Pooling2DOptions {
  PairArg pool_size = 2;
  std::optional<PairArg> strides;  // unset: pool_size
  std::string padding = "valid";
  std::string data_format = "channels_last";
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

class PoolingBaseImpl : public Layer {
 public:
  // max: max pooling, else average; rank 1 or 2. ValueError for sizes < 1 or a bad padding,
  // NotImplementedError for channels_first.
  PoolingBaseImpl(const LayerOptions& base, bool max, int rank, ops::Size2 pool_size, ops::Size2 strides,
                  std::string padding, std::string data_format);
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  json get_config() const override;

 protected:
  // Checks the options; called by the concrete constructors (where() needs class_name()).
  void validate_options() const;

 private:
  bool max_;
  int rank_;
  ops::Size2 pool_size_, strides_;
  std::string padding_, data_format_;
};

// Options from a Keras 2/3 config (unknown keys ignored); ValueError for malformed sizes.
Pooling1DOptions pooling1d_options_from_config(const json& config);
Pooling2DOptions pooling2d_options_from_config(const json& config);

// Declares Name##Impl over PoolingBaseImpl and the handle Name.
#define KERAS_POOLING_LAYER(Name, Options, is_max, rank)                                         \
  class Name##Impl : public PoolingBaseImpl {                                                    \
   public:                                                                                       \
    explicit Name##Impl(Options options);                                                        \
    std::string class_name() const override { return #Name; }                                   \
    const Options& options() const { return options_; }                                          \
                                                                                                 \
   private:                                                                                      \
    Options options_;                                                                            \
  };                                                                                             \
  KERAS_LAYER_HANDLE(Name, Options)

}  // namespace keras::layers
