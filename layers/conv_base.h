// Shared pieces of the convolution layers (Conv1D, Conv2D, Conv2DTranspose, DepthwiseConv2D,
// SeparableConv2D): kernel_size/strides/dilation_rate are PairArg (layers/spatial_args.h), read and
// written in Keras's form (tuples as JSON lists); option checks, and the input validation that
// names the layer and the shapes (wrong rank, unknown or mismatched channels, channels that
// groups do not divide, a kernel larger than the padded input).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer.h"
#include "layers/layer_config.h"
#include "layers/regularizers.h"
#include "layers/spatial_args.h"

namespace keras::layers {

namespace conv {

json pair_to_json(const PairArg& p);  // [h, w]
// `key` of `c` as a pair (an int or a list of 2); `fallback` when absent. ValueError otherwise.
PairArg pair_from_config(const json& c, const std::string& key, PairArg fallback, const std::string& where);
// `key` of `c` as one int (an int or a list of 1).
int64_t int_from_config(const json& c, const std::string& key, int64_t fallback, const std::string& where);

// Option checks shared by every conv layer (ValueError naming `where`): positive sizes, a known
// padding ("causal" only when allowed), data_format channels_last/channels_first, and Keras's
// rule that strides > 1 and dilation_rate > 1 do not go together.
void check_options(const std::string& where, int spatial_rank, const PairArg& kernel_size, const PairArg& strides,
                   const PairArg& dilation_rate, const std::string& padding, const std::string& data_format,
                   bool allow_causal = false);

// The input shape with channels last (a channels_first shape permuted), validated: rank
// 2 + spatial_rank and a known channel extent. ShapeError naming `where` otherwise.
Shape channels_last_input(const std::string& where, const std::vector<Shape>& shapes, int spatial_rank,
                          const std::string& data_format);
// Output spatial extents of a forward convolution; ShapeError naming `where`, the input shape
// and the kernel when the dilated kernel is larger than the padded input.
std::vector<int64_t> output_extents(const std::string& where, const Shape& input_cl, const std::vector<int64_t>& kernel,
                                    const std::vector<int64_t>& strides, const std::vector<int64_t>& dilation,
                                    const std::string& padding);
// (batch, spatial..., channels) -> the layer's data format.
Shape to_format(const Shape& channels_last, const std::string& data_format);
// Tensor layout conversions for channels_first layers (identity for channels_last).
Tensor to_channels_last(const Tensor& x, const std::string& data_format);
Tensor from_channels_last(const Tensor& y, const std::string& data_format);

// The keys Conv1D, Conv2D and Conv2DTranspose share (padding, data_format, activation, use_bias,
// kernel/bias initializers and regularizers, activity_regularizer, constraints), written from and
// read into their options structs.
template <class Options>
void write_common_keys(const Options& o, json& c) {
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["activation"] = o.activation;
  c["use_bias"] = o.use_bias;
  c["kernel_initializer"] = initializers::serialize(o.kernel_initializer.ptr());
  c["bias_initializer"] = initializers::serialize(o.bias_initializer.ptr());
  c["kernel_regularizer"] = regularizers::serialize(o.kernel_regularizer.ptr());
  c["bias_regularizer"] = regularizers::serialize(o.bias_regularizer.ptr());
  c["activity_regularizer"] = regularizers::serialize(o.activity_regularizer.ptr());
  c["kernel_constraint"] = constraints::serialize(o.kernel_constraint.ptr());
  c["bias_constraint"] = constraints::serialize(o.bias_constraint.ptr());
}

// Checks the common options at construction: a known activation, initializers present.
// ValueError naming `where`.
template <class Options>
void check_common_options(const std::string& where, const Options& o) {
  if (!ops::is_activation(o.activation)) fail<ValueError>(where, "a known activation", "'" + o.activation + "'");
  if (!o.kernel_initializer) fail<ValueError>(where, "a kernel_initializer", "none");
  if (o.use_bias && !o.bias_initializer) fail<ValueError>(where, "a bias_initializer", "none");
}

template <class Options>
void read_common_keys(const json& c, Options& o) {
  o.padding = c.value("padding", std::string("valid"));
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  if (c.contains("activation")) o.activation = config::activation_from_config(c["activation"]);
  o.use_bias = c.value("use_bias", true);
  if (c.contains("kernel_initializer")) o.kernel_initializer = initializers::from_config(c["kernel_initializer"]);
  if (c.contains("bias_initializer")) o.bias_initializer = initializers::from_config(c["bias_initializer"]);
  if (c.contains("kernel_regularizer")) o.kernel_regularizer = regularizers::from_config(c["kernel_regularizer"]);
  if (c.contains("bias_regularizer")) o.bias_regularizer = regularizers::from_config(c["bias_regularizer"]);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  if (c.contains("kernel_constraint")) o.kernel_constraint = constraints::from_config(c["kernel_constraint"]);
  if (c.contains("bias_constraint")) o.bias_constraint = constraints::from_config(c["bias_constraint"]);
}

}  // namespace conv
}  // namespace keras::layers
