#include "layers/conv_lstm_cell.h"

#include <algorithm>
#include <array>

#include "backend/ops.h"
#include "backend/ops_conv.h"
#include "layers/conv_options.h"
#include "layers/layer_config.h"
#include "layers/lstm_cell.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

namespace {

// `n` channels from `start` of the last axis.
Tensor last_axis_slice(const Tensor& t, int64_t start, int64_t n) {
  Shape begin(t.rank(), 0), size = t.shape();
  begin.back() = start;
  size.back() = n;
  return ops::slice(t, begin, size);
}

// Entry `i` of axis 0, without that axis.
Tensor take(const Tensor& t, int64_t axis, int64_t i) {
  Shape begin(t.rank(), 0), size = t.shape(), out = t.shape();
  begin[axis] = i;
  size[axis] = 1;
  out.erase(out.begin() + axis);
  return ops::reshape(ops::slice(t, begin, size), out);
}

// A 3-D convolution, x (N, D, H, W, C), w (kd, kh, kw, C, O), as sums of 2-D ones over the depth
// taps: the backend has no conv3d op, and this composition takes its gradients from conv2d's.
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& b, const std::vector<int64_t>& strides,
              const std::string& padding, const std::vector<int64_t>& dilation) {
  const int64_t depth = x.shape()[1], kd = w.shape()[0];
  const int64_t out_depth = ops::conv_output_length(depth, kd, padding, strides[0], dilation[0]);
  const int64_t pad_before = ops::conv_pads(depth, kd, padding, strides[0], dilation[0]).first;
  const ops::Conv2DArgs args{.strides = {strides[1], strides[2]}, .padding = padding,
                             .dilation_rate = {dilation[1], dilation[2]}};
  TensorList planes;
  for (int64_t o = 0; o < out_depth; ++o) {
    Tensor sum;
    for (int64_t k = 0; k < kd; ++k) {
      const int64_t z = o * strides[0] + k * dilation[0] - pad_before;
      if (z < 0 || z >= depth) continue;  // a tap on the zero padding
      Tensor y = ops::conv2d(take(x, 1, z), take(w, 0, k), {}, args);
      sum = sum.defined() ? ops::add(sum, y) : y;
    }
    if (!sum.defined()) sum = ops::multiply(ops::conv2d(take(x, 1, 0), take(w, 0, 0), {}, args), 0.0);
    if (b.defined()) sum = ops::add(sum, b);
    planes.push_back(ops::expand_dims(sum, 1));
  }
  return planes.size() == 1 ? planes[0] : ops::concatenate(planes, 1);
}

void check_sizes(const std::string& where, const char* what, const std::vector<int64_t>& v, int rank) {
  if (static_cast<int>(v.size()) != rank)
    fail<ValueError>(where, std::string(what) + " of " + std::to_string(rank) + " values", json(v).dump());
  for (int64_t n : v)
    if (n < 1) fail<ValueError>(where, std::string(what) + " >= 1", json(v).dump());
}

bool any_above_one(const std::vector<int64_t>& v) {
  return std::any_of(v.begin(), v.end(), [](int64_t n) { return n > 1; });
}

}  // namespace

void check_conv_lstm_cell_options(const std::string& w, const ConvLSTMCellOptions& o) {
  const int rank = o.rank;
  if (rank < 1 || rank > 3) fail<ValueError>(w, "rank 1, 2 or 3", std::to_string(rank));
  conv::check_filters(w, o.filters);
  check_sizes(w, "kernel_size", o.kernel_size, rank);
  check_sizes(w, "strides", o.strides, rank);
  check_sizes(w, "dilation_rate", o.dilation_rate, rank);
  if (o.padding != "valid" && o.padding != "same")
    fail<ValueError>(w, "padding 'valid' or 'same'", "'" + o.padding + "'");
  if (o.data_format != "channels_last" && o.data_format != "channels_first")
    fail<ValueError>(w, "data_format 'channels_last' or 'channels_first'", "'" + o.data_format + "'");
  if (any_above_one(o.strides) && any_above_one(o.dilation_rate))
    fail<ValueError>(w, "strides = 1 when dilation_rate > 1",
                     "strides " + json(o.strides).dump() + " and dilation_rate " + json(o.dilation_rate).dump(),
                     "Keras does not combine strides > 1 with dilation.");
  if (!ops::is_activation(o.recurrent_activation))
    fail<ValueError>(w, "a known recurrent_activation", "'" + o.recurrent_activation + "'");
  config::check_weight_args(w, o, config::recurrent_weights<ConvLSTMCellOptions>());
  for (double rate : {o.dropout, o.recurrent_dropout})
    if (!(rate >= 0.0 && rate <= 1.0)) fail<ValueError>(w, "dropout and recurrent_dropout in [0, 1]", std::to_string(rate));
}

ConvLSTMCellImpl::ConvLSTMCellImpl(ConvLSTMCellOptions o) : RNNCell(config::base_options(o)), options_(std::move(o)) {
  check_conv_lstm_cell_options(where(), options_);
}

int64_t ConvLSTMCellImpl::step_features(const Shape& step) const {
  return options_.data_format == "channels_first" ? step.at(1) : step.back();
}

Shape ConvLSTMCellImpl::step_output_shape(const Shape& step) const {
  Shape cl = step;  // channels last
  if (options_.data_format == "channels_first") {
    cl.erase(cl.begin() + 1);
    cl.push_back(step[1]);
  }
  Shape out{cl[0]};
  for (int64_t n : conv::output_extents(where(), cl, options_.kernel_size, options_.strides, options_.dilation_rate,
                                        options_.padding))
    out.push_back(n);
  out.push_back(options_.filters);
  return conv::to_format(out, options_.data_format);
}

std::vector<Shape> ConvLSTMCellImpl::state_shapes(const Shape& step) const {
  const Shape out = step_output_shape(step);
  return {out, out};
}

void ConvLSTMCellImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1 && shapes.size() != 3)
    fail<ShapeError>(where(), "the step input and 2 states", std::to_string(shapes.size()) + " inputs");
  const size_t rank = static_cast<size_t>(options_.rank) + 2;
  if (shapes[0].size() != rank || step_features(shapes[0]) < 1)
    fail<ShapeError>(where(), "a step input of rank " + std::to_string(rank) + " with known channels",
                     "shape " + shape_str(shapes[0]));
  if (shapes.size() == 1) return;
  const Shape want = step_output_shape(shapes[0]);
  for (size_t i = 1; i < shapes.size(); ++i)
    if (shapes[i].size() != want.size() || !std::equal(want.begin() + 1, want.end(), shapes[i].begin() + 1))
      fail<ShapeError>(where() + " state " + std::to_string(i - 1), "shape " + shape_str(want), shape_str(shapes[i]));
}

std::vector<Shape> ConvLSTMCellImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape out = step_output_shape(shapes[0]);
  return {out, out, out};
}

void ConvLSTMCellImpl::build(const std::vector<Shape>& shapes) {
  const int64_t channels = step_features(shapes[0]), filters = options_.filters;
  Shape kernel(options_.kernel_size.begin(), options_.kernel_size.end()), recurrent = kernel;
  kernel.insert(kernel.end(), {channels, 4 * filters});
  recurrent.insert(recurrent.end(), {filters, 4 * filters});
  kernel_ = add_weight("kernel", kernel, options_.kernel_initializer.ptr(), true, options_.kernel_regularizer.ptr(),
                       options_.kernel_constraint.ptr());
  recurrent_kernel_ = add_weight("recurrent_kernel", recurrent, options_.recurrent_initializer.ptr(), true,
                                 options_.recurrent_regularizer.ptr(), options_.recurrent_constraint.ptr());
  if (options_.use_bias) {
    InitializerPtr init = options_.bias_initializer.ptr();
    if (options_.unit_forget_bias) init = unit_forget_bias_initializer(init, filters);
    bias_ = add_weight("bias", {4 * filters}, init, true, options_.bias_regularizer.ptr(), options_.bias_constraint.ptr());
  }
}

Tensor ConvLSTMCellImpl::convolve(const Tensor& x, const Tensor& w, const Tensor& b, bool input) const {
  const std::vector<int64_t> ones(static_cast<size_t>(options_.rank), 1);
  const std::vector<int64_t>& strides = input ? options_.strides : ones;
  const std::vector<int64_t>& dilation = input ? options_.dilation_rate : ones;
  const std::string& padding = input ? options_.padding : "same";
  switch (options_.rank) {
    case 1:
      return ops::conv1d(x, w, b, {.strides = strides[0], .padding = padding, .dilation_rate = dilation[0]});
    case 2:
      return ops::conv2d(x, w, b,
                         {.strides = {strides[0], strides[1]}, .padding = padding, .dilation_rate = {dilation[0], dilation[1]}});
    default:
      return conv3d(x, w, b, strides, padding, dilation);
  }
}

std::pair<Tensor, TensorList> ConvLSTMCellImpl::step(const Tensor& step_input, const TensorList& states, bool training) {
  const std::string& format = options_.data_format;
  const Tensor x = conv::to_channels_last(step_input, format);
  const Tensor h = conv::to_channels_last(states[0], format), c = conv::to_channels_last(states[1], format);
  const int64_t filters = options_.filters;
  TensorList dp, rdp;
  if (training) {
    dp = dropout_masks(input_masks_, x, options_.dropout, 4, options_.seed);
    rdp = dropout_masks(recurrent_masks_, h, options_.recurrent_dropout, 4, options_.seed);
  }
  const Tensor bias = options_.use_bias ? bias_.value() : Tensor();
  std::array<Tensor, 4> z;
  if (dp.empty() && rdp.empty()) {  // one convolution per operand for the four gates
    Tensor pre = ops::add(convolve(x, kernel_.value(), bias, true), convolve(h, recurrent_kernel_.value(), {}, false));
    for (int64_t g = 0; g < 4; ++g) z[g] = last_axis_slice(pre, g * filters, filters);
  } else {  // a dropout mask per gate
    for (size_t g = 0; g < 4; ++g) {
      const int64_t at = static_cast<int64_t>(g) * filters;
      Tensor b = bias.defined() ? ops::slice(bias, {at}, {filters}) : Tensor();
      z[g] = ops::add(convolve(apply_dropout_mask(x, dp, g), last_axis_slice(kernel_.value(), at, filters), b, true),
                      convolve(apply_dropout_mask(h, rdp, g), last_axis_slice(recurrent_kernel_.value(), at, filters), {},
                               false));
    }
  }
  const std::string& ra = options_.recurrent_activation;
  Tensor i = ops::activation(ra, z[0]), f = ops::activation(ra, z[1]), o = ops::activation(ra, z[3]);
  Tensor c_new = ops::add(ops::multiply(f, c), ops::multiply(i, ops::activation(options_.activation, z[2])));
  Tensor h_new = ops::multiply(o, ops::activation(options_.activation, c_new));
  h_new = conv::from_channels_last(h_new, format);
  return {h_new, {h_new, conv::from_channels_last(c_new, format)}};
}

json ConvLSTMCellImpl::get_config() const {
  json c = base_config();
  c["filters"] = options_.filters;
  c["kernel_size"] = options_.kernel_size;
  c["strides"] = options_.strides;
  c["padding"] = options_.padding;
  c["data_format"] = options_.data_format;
  c["dilation_rate"] = options_.dilation_rate;
  c["recurrent_activation"] = options_.recurrent_activation;
  c["activation"] = options_.activation;
  c["use_bias"] = options_.use_bias;
  for (const auto& w : config::recurrent_weights<ConvLSTMCellOptions>()) {
    const std::string key = w.weight;
    c[key + "_initializer"] = initializers::serialize((options_.*w.initializer).ptr());
    c[key + "_regularizer"] = regularizers::serialize((options_.*w.regularizer).ptr());
    c[key + "_constraint"] = constraints::serialize((options_.*w.constraint).ptr());
  }
  c["unit_forget_bias"] = options_.unit_forget_bias;
  c["dropout"] = options_.dropout;
  c["recurrent_dropout"] = options_.recurrent_dropout;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return c;
}

}  // namespace keras::layers
