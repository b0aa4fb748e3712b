// Shared pieces of the convolution layers (Conv1D, Conv2D, Conv2DTranspose, DepthwiseConv2D,
// SeparableConv2D): kernel_size/strides/dilation_rate are PairArg (layers/spatial_args.h), read and
// written in Keras's form (tuples as JSON lists); option checks, and the input validation that
// names the layer and the shapes (wrong rank, unknown or mismatched channels, channels that
// groups do not divide, a kernel larger than the padded input). The options structs and their
// config keys are in layers/conv_options.h.
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

}  // namespace conv
}  // namespace keras::layers
