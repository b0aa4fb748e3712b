#include "layers/group_query_attention.h"

#include <cmath>

#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

using attention::call_flag;

GroupQueryAttentionImpl::GroupQueryAttentionImpl(GroupQueryAttentionOptions options)
    : ProjectionOwner(config::base_options(options)), options_(std::move(options)) {
  if (options_.head_dim < 1) fail<ValueError>(where(), "head_dim >= 1", std::to_string(options_.head_dim));
  if (options_.num_key_value_heads < 1)
    fail<ValueError>(where(), "num_key_value_heads >= 1", std::to_string(options_.num_key_value_heads));
  if (options_.num_query_heads < 1 || options_.num_query_heads % options_.num_key_value_heads != 0)
    fail<ValueError>(where(), "num_query_heads a positive multiple of num_key_value_heads (" +
                                  std::to_string(options_.num_key_value_heads) + ")",
                     std::to_string(options_.num_query_heads));
  attention::check_projection_args(where(), options_);
}

void GroupQueryAttentionImpl::check_input(const std::vector<Shape>& shapes) const {
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  const std::string got = "query " + shape_str(s.query) + ", value " + shape_str(s.value) + ", key " + shape_str(s.key);
  if (s.query.size() != 3 || s.value.size() != 3 || s.key.size() != 3)
    fail<ShapeError>(where(), "query, value and key of rank 3 (batch, time, features)", got);
  if (s.query.back() != s.value.back())
    fail<ShapeError>(where(), "query and value with equal last extents", got);
  if (s.value[1] != s.key[1] && s.value[1] > 0 && s.key[1] > 0)
    fail<ShapeError>(where(), "value and key of equal length", got);
  for (const Shape* x : {&s.query, &s.value, &s.key})
    if (x->back() < 1) fail<ShapeError>(where(), "known feature extents", got);
  if (built() && feature_dims_ != Shape{s.query.back(), s.key.back()})
    fail<ShapeError>(where(), "the feature extents it was built for (query, key) " + shape_str(feature_dims_), got);
}

void GroupQueryAttentionImpl::build(const std::vector<Shape>& shapes) {
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  feature_dims_ = {s.query.back(), s.key.back()};
  attention::CallShapes built_for = s;
  for (Shape* x : {&built_for.query, &built_for.value, &built_for.key}) (*x)[0] = -1;
  clear_projections(built_for);
  const int64_t hq = options_.num_query_heads, hkv = options_.num_key_value_heads, d = options_.head_dim;
  auto make = [&](const std::string& name, const char* equation, int64_t contracted, Shape dims,
                  const std::string& activation = "linear") {
    EinsumProjectionOptions p = projection_options(options_);
    p.name = name;
    p.equation = equation;
    p.contracted = contracted;
    p.output_dims = std::move(dims);
    p.activation = activation;
    return p;
  };
  query_ = add_projection("_query_dense", make("query", "bqm,muh->bquh", 1, {hq, d}), s.query);
  key_ = add_projection("_key_dense", make("key", "bkm,mvh->bkvh", 1, {hkv, d}), s.key);
  if (options_.use_gate)
    gate_ = add_projection("_gate_dense", make("gate", "bqm,muh->bquh", 1, {hq, d}, "sigmoid"), s.query);
  value_ = add_projection("_value_dense", make("value", "bkm,mvh->bkvh", 1, {hkv, d}), s.value);
  output_ = add_projection("_output_dense", make("attention_output", "bquh,uhm->bqm", 2, {s.query.back()}),
                           {-1, -1, hq, d});
}

TensorList GroupQueryAttentionImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const attention::CallTensors t = attention::call_tensors(inputs, ctx, options_.sliding_window, where());
  const Tensor &query = t.query, &value = t.value, &key = t.key, &mask = t.mask;
  const bool return_scores = t.return_scores;
  Tensor gate = gate_ ? (*gate_)(query) : Tensor();
  const int64_t repeats = options_.num_query_heads / options_.num_key_value_heads;
  Tensor q = (*query_)(query);
  Tensor k = attention::repeat_heads((*key_)(key), repeats);
  Tensor v = attention::repeat_heads((*value_)(value), repeats);
  ops::DotProductAttentionOptions o;
  o.scale = 1.0 / std::sqrt(static_cast<double>(options_.head_dim));
  o.softmax = {ops::MaskFill::replace, options_.dropout > 0.0 || return_scores};  // as MultiHeadAttention
  if (ctx.training && options_.dropout > 0.0) {
    o.dropout = options_.dropout;
    o.generator = &generator(options_.seed ? std::optional<uint64_t>(static_cast<uint64_t>(*options_.seed)) : std::nullopt);
  }
  auto r = attention::attend(q, k, v, {1}, mask, o);
  Tensor out = (*output_)(gate.defined() ? ops::multiply(r.output, gate) : r.output);
  if (return_scores) return {out, r.scores};
  return {out};
}

std::vector<Shape> GroupQueryAttentionImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  check_input(shapes);
  auto s = attention::call_shapes(shapes, current_call_args().keywords, where());
  if (!call_flag(current_call_args().options, "return_attention_scores")) return {s.query};
  return {s.query, {s.query[0], options_.num_query_heads, s.query[1], s.key[1]}};
}

json GroupQueryAttentionImpl::get_config() const {
  json c = base_config();
  c["head_dim"] = options_.head_dim;
  c["num_query_heads"] = options_.num_query_heads;
  c["num_key_value_heads"] = options_.num_key_value_heads;
  c["use_bias"] = options_.use_bias;
  c["use_gate"] = options_.use_gate;
  c["sliding_window"] = options_.sliding_window ? json(*options_.sliding_window) : json(nullptr);
  c["dropout"] = options_.dropout;
  attention::write_projection_args(options_, c);
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return c;
}

GroupQueryAttentionOptions group_query_attention_options_from_config(const json& c) {
  GroupQueryAttentionOptions o;
  config::read_base_keys(c, o);
  for (const char* key : {"head_dim", "num_query_heads", "num_key_value_heads"})
    if (!c.contains(key) || !c[key].is_number_integer())
      fail<ValueError>("GroupQueryAttention config", std::string("an integer '") + key + "'",
                       c.contains(key) ? c[key].dump() : "none");
  o.head_dim = c["head_dim"].get<int64_t>();
  o.num_query_heads = c["num_query_heads"].get<int64_t>();
  o.num_key_value_heads = c["num_key_value_heads"].get<int64_t>();
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  o.use_bias = c.value("use_bias", true);
  o.use_gate = c.value("use_gate", false);
  o.sliding_window = config::optional_int(c, "sliding_window");
  attention::read_projection_args(c, o);
  o.seed = config::optional_int(c, "seed");
  return o;
}

namespace {
LayerPtr make_group_query_attention(const json& c) {
  return std::make_shared<GroupQueryAttentionImpl>(group_query_attention_options_from_config(c));
}
}  // namespace

KERAS_REGISTER_LAYER(GroupedQueryAttention, make_group_query_attention);
KERAS_REGISTER_LAYER(GroupQueryAttention, make_group_query_attention);
KERAS_SIGNATURE(GroupedQueryAttention, .tensor_parameters = {"query", "value", "key"},
                .call_keywords = {"query_mask", "value_mask", "key_mask", "attention_mask",
                                  "return_attention_scores", "use_causal_mask"},
                .build_config = &attention::shapes_dict_build_config);

}  // namespace keras::layers
