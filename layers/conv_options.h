// The options side of the convolution layers: ConvOptions<Rank> (the config of Conv1D and
// Conv2D), and the checks and config keys every conv layer's options share, written once here
// so each layer's constructor, get_config and from_config list only what is its own.
//
// Sizes (kernel_size, strides, dilation_rate) are one int in 1-D options and a PairArg in 2-D
// ones; 1-D sizes are written as 1-element lists, as Keras does.
#pragma once
#include <array>
#include <string>
#include <type_traits>

#include "layers/conv_base.h"
#include "layers/weight_args.h"

namespace keras::layers {

// The config of Conv1D (Rank 1) and Conv2D (Rank 2): Keras keys, order and defaults. One
// template, so the two layers cannot drift apart; conv1d.h and conv2d.h name the instances.
template <int Rank>
struct ConvOptions {
  static_assert(Rank == 1 || Rank == 2, "Conv1D or Conv2D");
  using Size = std::conditional_t<Rank == 1, int64_t, PairArg>;

  int64_t filters = 0;  // required, >= 1, divisible by groups
  Size kernel_size = 0;  // required
  Size strides = 1;
  // "valid" or "same" (extra pad at bottom/right, as Keras/TF); Conv1D also "causal" (left
  // padding only).
  std::string padding = "valid";
  std::string data_format = "channels_last";
  Size dilation_rate = 1;
  int64_t groups = 1;
  std::string activation = "linear";
  bool use_bias = true;
  InitializerArg kernel_initializer = "glorot_uniform";
  InitializerArg bias_initializer = "zeros";
  RegularizerArg kernel_regularizer;
  RegularizerArg bias_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg kernel_constraint;  // applied after each optimizer update
  ConstraintArg bias_constraint;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

namespace conv {

// A size in Keras's config form: [n] for 1-D, [h, w] for 2-D.
inline json size_to_json(int64_t n) { return json::array({n}); }
inline json size_to_json(const PairArg& p) { return pair_to_json(p); }
// `key` of `c` into `size` (kept when absent or null); ValueError naming `where` when malformed.
inline void read_size(const json& c, const std::string& key, int64_t& size, const std::string& where) {
  size = int_from_config(c, key, size, where);
}
inline void read_size(const json& c, const std::string& key, PairArg& size, const std::string& where) {
  size = pair_from_config(c, key, size, where);
}
// A 1-D size as the (1, n) pair check_options takes.
inline PairArg as_pair(int64_t n) { return PairArg(1, n); }
inline PairArg as_pair(const PairArg& p) { return p; }

inline void check_filters(const std::string& where, int64_t filters) {
  if (filters < 1) fail<ValueError>(where, "filters >= 1", std::to_string(filters));
}

// Construction checks of Conv1D, Conv2D and Conv2DTranspose (ValueError naming `where`):
// filters, the sizes, padding ("causal" for 1-D only) and data_format, then groups dividing
// filters where the options have groups. The weight arguments are checked by the caller
// (config::check_weight_args), after any checks of its own.
template <class O>
void check_conv_options(const std::string& where, const O& o) {
  constexpr bool one_d = std::is_same_v<std::remove_cvref_t<decltype(o.kernel_size)>, int64_t>;
  check_filters(where, o.filters);
  check_options(where, one_d ? 1 : 2, as_pair(o.kernel_size), as_pair(o.strides), as_pair(o.dilation_rate), o.padding,
                o.data_format, one_d);
  if constexpr (requires { o.groups; })
    if (o.groups < 1 || o.filters % o.groups != 0)
      fail<ValueError>(where, "groups >= 1 dividing filters (" + std::to_string(o.filters) + ")",
                       "groups " + std::to_string(o.groups));
}

// "filters": a required integer (ValueError naming `where` otherwise).
inline int64_t filters_from_config(const json& c, const std::string& where) {
  if (!c.contains("filters") || !c["filters"].is_number_integer())
    fail<ValueError>(where, "an integer 'filters'", c.contains("filters") ? c["filters"].dump() : "none");
  return c["filters"].get<int64_t>();
}

// "kernel_size": required.
template <class Size>
void read_kernel_size(const json& c, Size& kernel_size, const std::string& where) {
  if (!c.contains("kernel_size")) fail<ValueError>(where, "a 'kernel_size'", "none");
  read_size(c, "kernel_size", kernel_size, where);
}

// get_config of Conv1D, Conv2D and Conv2DTranspose: filters, the sizes, groups or
// output_padding (null when unset) where the options have them, padding, data_format, and the
// kernel/bias weight keys.
template <class O>
void write_conv_keys(const O& o, json& c) {
  c["filters"] = o.filters;
  c["kernel_size"] = size_to_json(o.kernel_size);
  c["strides"] = size_to_json(o.strides);
  c["dilation_rate"] = size_to_json(o.dilation_rate);
  if constexpr (requires { o.groups; }) c["groups"] = o.groups;
  if constexpr (requires { o.output_padding; })
    c["output_padding"] = o.output_padding ? pair_to_json(*o.output_padding) : json(nullptr);
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  config::write_weight_args(o, config::kernel_and_bias<O>(), c);
}

// from_config of the same layers (unknown keys ignored; ValueError naming `where` for a
// missing filters or kernel_size, or a malformed size).
template <class O>
O read_conv_keys(const json& c, const std::string& where) {
  O o;
  config::read_base_keys(c, o);
  o.filters = filters_from_config(c, where);
  read_kernel_size(c, o.kernel_size, where);
  read_size(c, "strides", o.strides, where);
  if constexpr (requires { o.output_padding; })
    if (c.contains("output_padding") && !c["output_padding"].is_null())
      o.output_padding = pair_from_config(c, "output_padding", 0, where);
  read_size(c, "dilation_rate", o.dilation_rate, where);
  if constexpr (requires { o.groups; }) o.groups = c.value("groups", int64_t{1});
  o.padding = c.value("padding", std::string("valid"));
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  config::read_weight_args(c, config::kernel_and_bias<O>(), o);
  return o;
}

// ---- DepthwiseConv2D and SeparableConv2D (a depthwise stage first): the keys of that stage,
// with the layer's weights (depthwise [, pointwise], bias). ----

// depth_multiplier >= 1, then the sizes, padding and data_format (ValueError naming `where`).
template <class O>
void check_depthwise_options(const std::string& where, const O& o) {
  if (o.depth_multiplier < 1) fail<ValueError>(where, "depth_multiplier >= 1", std::to_string(o.depth_multiplier));
  check_options(where, 2, o.kernel_size, o.strides, o.dilation_rate, o.padding, o.data_format);
}

// get_config of that stage: depth_multiplier, the sizes, padding, data_format, and the weight
// keys of `weights`.
template <class O, size_t N>
void write_depthwise_keys(const O& o, const std::array<config::WeightArgs<O>, N>& weights, json& c) {
  c["depth_multiplier"] = o.depth_multiplier;
  c["kernel_size"] = pair_to_json(o.kernel_size);
  c["strides"] = pair_to_json(o.strides);
  c["padding"] = o.padding;
  c["data_format"] = o.data_format;
  c["dilation_rate"] = pair_to_json(o.dilation_rate);
  config::write_weight_args(o, weights, c);
}

// Reads the depthwise stage's kernel_size (required), strides, padding and data_format into `o`
// (absent keys keep o's values; ValueError naming `where` for a missing kernel_size or a
// malformed size). The callers then read dilation_rate and depth_multiplier in their options'
// member order (Keras's argument order, which the two layers do not share: it decides which of
// two malformed keys is reported), then config::read_weight_args.
template <class O>
void read_depthwise_keys(const json& c, O& o, const std::string& where) {
  read_kernel_size(c, o.kernel_size, where);
  read_size(c, "strides", o.strides, where);
  o.padding = c.value("padding", std::string("valid"));
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
}

}  // namespace conv
}  // namespace keras::layers
