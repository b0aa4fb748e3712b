#include "layers/multi_head_attention.h"

#include <algorithm>
#include <cmath>

#include "backend/ops_attention_heads.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

using attention::call_flag;

MultiHeadAttentionImpl::MultiHeadAttentionImpl(MultiHeadAttentionOptions options)
    : ProjectionOwner(config::base_options(options)), options_(std::move(options)) {
  if (options_.num_heads < 1) fail<ValueError>(where(), "num_heads >= 1", std::to_string(options_.num_heads));
  if (options_.key_dim < 1) fail<ValueError>(where(), "key_dim >= 1", std::to_string(options_.key_dim));
  if (options_.value_dim && *options_.value_dim < 1)
    fail<ValueError>(where(), "value_dim None or >= 1", std::to_string(*options_.value_dim));
  if (options_.output_shape)
    for (int64_t d : *options_.output_shape)
      if (d < 1) fail<ValueError>(where(), "output_shape extents >= 1", shape_str(*options_.output_shape));
  attention::check_projection_args(where(), options_);
  if (options_.attention_axes) axes_ = *options_.attention_axes;
}

std::vector<int64_t> MultiHeadAttentionImpl::resolved_axes(int64_t rank) const {
  std::vector<int64_t> axes;
  if (!options_.attention_axes) {
    for (int64_t a = 1; a + 1 < rank; ++a) axes.push_back(a);
    return axes;
  }
  for (int64_t a : *options_.attention_axes) {
    // Keras normalizes against the projected rank (rank + 1): a -> rank + a.
    const int64_t axis = a >= 0 ? a : rank + a;
    if (axis < 1 || axis > rank - 2 || std::count(axes.begin(), axes.end(), axis))
      fail<ValueError>(where(), "distinct attention_axes among the sequence axes [1, " + std::to_string(rank - 2) + "]",
                       "axis " + std::to_string(a) + " for a rank-" + std::to_string(rank) + " query");
    axes.push_back(axis);
  }
  return axes;
}

void MultiHeadAttentionImpl::check_input(const std::vector<Shape>& shapes) const {
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  const std::string got = "query " + shape_str(s.query) + ", value " + shape_str(s.value) + ", key " + shape_str(s.key);
  if (s.query.size() < 3)
    fail<ShapeError>(where(), "a query of rank >= 3 (batch, <sequence axes>, features)", got);
  if (s.value.size() != s.query.size() || s.key.size() != s.query.size())
    fail<ShapeError>(where(), "query, value and key of one rank", got);
  if (!std::equal(s.value.begin() + 1, s.value.end() - 1, s.key.begin() + 1))
    fail<ShapeError>(where(), "value and key equal in all axes but the last", got);
  for (const Shape* x : {&s.query, &s.value, &s.key})
    if (x->back() < 1) fail<ShapeError>(where(), "known feature extents", got);
  if (built() && feature_dims_ != Shape{s.query.back(), s.value.back(), s.key.back()})
    fail<ShapeError>(where(), "the feature extents it was built for (query, value, key) " + shape_str(feature_dims_), got);
}

void MultiHeadAttentionImpl::build(const std::vector<Shape>& shapes) {
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  const auto rank = static_cast<int64_t>(s.query.size());
  axes_ = resolved_axes(rank);
  feature_dims_ = {s.query.back(), s.value.back(), s.key.back()};
  attention::CallShapes built_for = s;
  for (Shape* x : {&built_for.query, &built_for.value, &built_for.key}) (*x)[0] = -1;
  clear_projections(built_for);
  const int64_t heads = options_.num_heads, key_dim = options_.key_dim;
  const int64_t value_dim = options_.value_dim.value_or(key_dim);
  auto make = [&](const std::string& name, int64_t contracted, Shape dims, const std::string& activation = "linear") {
    EinsumProjectionOptions p = projection_options(options_);
    p.name = name;
    p.contracted = contracted;
    p.equation = attention::projection_equation(rank - contracted, contracted, static_cast<int64_t>(dims.size()));
    p.output_dims = std::move(dims);
    p.activation = activation;
    return p;
  };
  query_ = add_projection("query_dense", make("query", 1, {heads, key_dim}), s.query);
  key_ = add_projection("key_dense", make("key", 1, {heads, key_dim}), s.key);
  if (options_.use_gate) gate_ = add_projection("_gate_dense", make("gate", 1, {heads, value_dim}, "sigmoid"), s.query);
  value_ = add_projection("value_dense", make("value", 1, {heads, value_dim}), s.value);
  Shape heads_shape(s.query.begin(), s.query.end() - 1);
  heads_shape.push_back(heads);
  heads_shape.push_back(value_dim);
  // The output projection contracts (heads, value_dim): its equation has rank - 1 free axes.
  EinsumProjectionOptions out = make("attention_output", 2, options_.output_shape.value_or(Shape{s.query.back()}));
  out.equation = attention::projection_equation(rank - 1, 2, static_cast<int64_t>(out.output_dims.size()));
  output_ = add_projection("output_dense", out, heads_shape);
}

TensorList MultiHeadAttentionImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const attention::CallTensors t = attention::call_tensors(inputs, ctx, options_.sliding_window, where());
  const Tensor &query = t.query, &value = t.value, &key = t.key, &mask = t.mask;
  const bool return_scores = t.return_scores;
  Tensor gate = gate_ ? (*gate_)(query) : Tensor();
  const bool dropout = ctx.training && options_.dropout > 0.0;
  const bool self = &query.impl() == &value.impl() && &key.impl() == &value.impl();
  if (self && !mask.defined() && !return_scores && !dropout && axes_ == std::vector<int64_t>{1})
    if (Tensor heads = packed_self_attention(query); heads.defined())
      return {(*output_)(gate.defined() ? ops::multiply(heads, gate) : heads)};
  Tensor q = (*query_)(query), k = (*key_)(key), v = (*value_)(value);
  ops::DotProductAttentionOptions o;
  o.scale = 1.0 / std::sqrt(static_cast<double>(options_.key_dim));
  // Keras's fused dot_product_attention path leaves fully masked rows uniform; its Softmax-layer
  // path (dropout, returned scores, several sequence axes) zeroes them.
  const bool fused_path = !(options_.dropout > 0.0 || return_scores || q.rank() != 4);
  o.softmax = {ops::MaskFill::replace, !fused_path};
  if (ctx.training && options_.dropout > 0.0) {
    o.dropout = options_.dropout;
    o.generator = &generator(options_.seed ? std::optional<uint64_t>(static_cast<uint64_t>(*options_.seed)) : std::nullopt);
  }
  auto r = attention::attend(q, k, v, axes_, mask, o);
  Tensor heads = gate.defined() ? ops::multiply(r.output, gate) : r.output;
  Tensor out = (*output_)(heads);
  if (return_scores) return {out, r.scores};
  return {out};
}

Tensor MultiHeadAttentionImpl::packed_self_attention(const Tensor& x) const {
  const int64_t heads = options_.num_heads, dim = options_.key_dim;
  if (x.rank() != 3 || options_.value_dim.value_or(dim) != dim || x.device().kind != DeviceKind::cpu ||
      (x.dtype() != DType::float32 && x.dtype() != DType::float64))
    return {};
  const int64_t d = x.shape()[2], width = heads * dim;
  TensorList kernels, biases;
  for (const auto* p : {&query_, &key_, &value_}) {
    Tensor kernel = (*p)->kernel().value(), bias = options_.use_bias ? (*p)->bias().value() : kernel;
    if (kernel.dtype() != x.dtype() || bias.dtype() != x.dtype() || kernel.device() != x.device() ||
        bias.device() != x.device())
      return {};
    kernels.push_back(ops::reshape(kernel, {d, width}));
    if (options_.use_bias) biases.push_back(ops::reshape(bias, {width}));
  }
  Tensor qkv = ops::dense(ops::reshape(x, {-1, d}), ops::concatenate(kernels, 1),
                          options_.use_bias ? ops::concatenate(biases, 0) : Tensor());
  qkv = ops::reshape(qkv, {x.shape()[0], x.shape()[1], 3, heads, dim});
  return ops::attention_heads_packed(qkv, 1.0 / std::sqrt(static_cast<double>(dim))).output;
}

std::vector<Shape> MultiHeadAttentionImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  check_input(shapes);
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  Shape out(s.query.begin(), s.query.end() - 1);
  for (int64_t d : options_.output_shape.value_or(Shape{s.query.back()})) out.push_back(d);
  if (!call_flag(current_call_args().options, "return_attention_scores")) return {out};
  Shape q(s.query.begin(), s.query.end() - 1), k(s.key.begin(), s.key.end() - 1);
  for (Shape* x : {&q, &k}) {
    x->push_back(options_.num_heads);
    x->push_back(options_.key_dim);
  }
  auto axes = built() ? axes_ : resolved_axes(static_cast<int64_t>(s.query.size()));
  return {out, attention::scores_shape(q, k, axes)};
}

MultiHeadAttentionImpl::Result MultiHeadAttentionImpl::attend(const Tensor& query, const Tensor& value, const Tensor& key,
                                                              const Tensor& attention_mask, bool use_causal_mask,
                                                              bool return_attention_scores, std::optional<bool> training) {
  CallArgs args;
  args.training = training;
  args.options = {{"use_causal_mask", use_causal_mask}, {"return_attention_scores", return_attention_scores}};
  TensorList inputs{query, value};
  for (const auto& [t, kw] : {std::pair{key, "key"}, std::pair{attention_mask, "attention_mask"}})
    if (t.defined()) {
      inputs.push_back(t);
      args.keywords.push_back(kw);
    }
  TensorList out = (*this)(inputs, args);
  return {out[0], out.size() > 1 ? out[1] : Tensor()};
}

json MultiHeadAttentionImpl::get_config() const {
  json c = base_config();
  c["num_heads"] = options_.num_heads;
  c["key_dim"] = options_.key_dim;
  c["value_dim"] = options_.value_dim.value_or(options_.key_dim);
  c["dropout"] = options_.dropout;
  c["use_bias"] = options_.use_bias;
  c["use_gate"] = options_.use_gate;
  c["output_shape"] = options_.output_shape ? config::shape_to_json(*options_.output_shape) : json(nullptr);
  c["attention_axes"] = (built() || options_.attention_axes) ? json(axes_) : json(nullptr);
  c["sliding_window"] = options_.sliding_window ? json(*options_.sliding_window) : json(nullptr);
  attention::write_projection_args(options_, c);
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return c;
}

MultiHeadAttentionOptions multi_head_attention_options_from_config(const json& c) {
  MultiHeadAttentionOptions o;
  config::read_base_keys(c, o);
  for (const char* key : {"num_heads", "key_dim"})
    if (!c.contains(key) || !c[key].is_number_integer())
      fail<ValueError>("MultiHeadAttention config", std::string("an integer '") + key + "'",
                       c.contains(key) ? c[key].dump() : "none");
  o.num_heads = c["num_heads"].get<int64_t>();
  o.key_dim = c["key_dim"].get<int64_t>();
  o.value_dim = config::optional_int(c, "value_dim");
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  o.use_bias = c.value("use_bias", true);
  o.use_gate = c.value("use_gate", false);
  if (c.contains("output_shape") && !c["output_shape"].is_null())
    o.output_shape = config::shape_from_json(c["output_shape"], "MultiHeadAttention config 'output_shape'");
  if (c.contains("attention_axes") && !c["attention_axes"].is_null())
    o.attention_axes = config::shape_from_json(c["attention_axes"], "MultiHeadAttention config 'attention_axes'");
  o.sliding_window = config::optional_int(c, "sliding_window");
  attention::read_projection_args(c, o);
  o.seed = config::optional_int(c, "seed");
  return o;
}

KERAS_REGISTER_LAYER(MultiHeadAttention, [](const json& c) -> LayerPtr {
  return std::make_shared<MultiHeadAttentionImpl>(multi_head_attention_options_from_config(c));
});
KERAS_SIGNATURE(MultiHeadAttention, .tensor_parameters = {"query", "value", "key"},
                .call_keywords = {"query_mask", "value_mask", "key_mask", "attention_mask",
                                  "return_attention_scores", "use_causal_mask"},
                .build_config = &attention::shapes_dict_build_config);

}  // namespace keras::layers
