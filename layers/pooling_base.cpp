#include "layers/pooling_base.h"

#include "backend/ops.h"
#include "layers/layer_config.h"

namespace keras::layers {

PoolingBaseImpl::PoolingBaseImpl(const LayerOptions& base, bool max, int rank, ops::Size2 pool_size,
                                 ops::Size2 strides, std::string padding, std::string data_format)
    : Layer(base), max_(max), rank_(rank), pool_size_(pool_size), strides_(strides), padding_(std::move(padding)),
      data_format_(std::move(data_format)) {}

void PoolingBaseImpl::validate_options() const {
  require_channels_last(data_format_, where());
  // Validates sizes and padding now, so a bad option fails where it is written.
  ops::pool2d_geometry(-1, -1, pool_size_, strides_, padding_, where());
}

void PoolingBaseImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  if (static_cast<int>(s.size()) != rank_ + 2)
    fail<ShapeError>(where(),
                     rank_ == 1 ? "an input of rank 3 (batch, steps, channels)"
                                : "an input of rank 4 (batch, height, width, channels)",
                     "shape " + shape_str(s));
  if (rank_ == 1 && padding_ == "valid" && s[1] >= 0 && s[1] < pool_size_[1])
    fail<ShapeError>(where(), "pool_size <= steps with padding 'valid'",
                     "pool_size " + std::to_string(pool_size_[1]) + " for input shape " + shape_str(s),
                     "Use padding='same' or a smaller pool_size.");
  if (rank_ == 2) ops::pool2d_output_shape(s, pool_size_, strides_, padding_, where() + " on input shape " + shape_str(s));
}

std::vector<Shape> PoolingBaseImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape& s = shapes[0];
  if (rank_ == 2) return {ops::pool2d_output_shape(s, pool_size_, strides_, padding_, where())};
  Shape as2d = ops::pool2d_output_shape({s[0], 1, s[1], s[2]}, pool_size_, strides_, padding_, where());
  return {{as2d[0], as2d[2], as2d[3]}};
}

TensorList PoolingBaseImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor x = inputs[0];
  if (rank_ == 1) x = ops::reshape(x, {x.dim(0), 1, x.dim(1), x.dim(2)});
  Tensor y = max_ ? ops::max_pool2d(x, pool_size_, strides_, padding_) : ops::avg_pool2d(x, pool_size_, strides_, padding_);
  if (rank_ == 1) y = ops::reshape(y, {y.dim(0), y.dim(2), y.dim(3)});
  return {y};
}

json PoolingBaseImpl::get_config() const {
  json c = base_config();
  if (rank_ == 1) {
    c["pool_size"] = json::array({pool_size_[1]});
    c["strides"] = json::array({strides_[1]});
  } else {
    c["pool_size"] = json::array({pool_size_[0], pool_size_[1]});
    c["strides"] = json::array({strides_[0], strides_[1]});
  }
  c["padding"] = padding_;
  c["data_format"] = data_format_;
  return c;
}

namespace {
int64_t int_or_single(const json& j, const std::string& where) {
  if (j.is_number_integer()) return j.get<int64_t>();
  if (j.is_array() && j.size() == 1 && j[0].is_number_integer()) return j[0].get<int64_t>();
  fail<ValueError>(where, "an int or a list of one int", j.dump());
}
}  // namespace

Pooling1DOptions pooling1d_options_from_config(const json& c) {
  Pooling1DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("pool_size")) o.pool_size = int_or_single(c["pool_size"], "Pooling1D config 'pool_size'");
  if (c.contains("strides") && !c["strides"].is_null()) o.strides = int_or_single(c["strides"], "Pooling1D config 'strides'");
  if (c.contains("padding") && c["padding"].is_string()) o.padding = c["padding"].get<std::string>();
  o.data_format = data_format_from_config(c);
  return o;
}

Pooling2DOptions pooling2d_options_from_config(const json& c) {
  Pooling2DOptions o;
  config::read_base_keys(c, o);
  if (c.contains("pool_size")) o.pool_size = PairArg::from_json(c["pool_size"], "Pooling2D config 'pool_size'");
  if (c.contains("strides") && !c["strides"].is_null())
    o.strides = PairArg::from_json(c["strides"], "Pooling2D config 'strides'");
  if (c.contains("padding") && c["padding"].is_string()) o.padding = c["padding"].get<std::string>();
  o.data_format = data_format_from_config(c);
  return o;
}

}  // namespace keras::layers
