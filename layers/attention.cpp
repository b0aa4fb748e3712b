#include "layers/attention.h"

#include "backend/ops_attention.h"
#include "layers/attention_common.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

AttentionImpl::AttentionImpl(AttentionOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.score_mode != "dot" && options_.score_mode != "concat")
    fail<ValueError>(where(), "score_mode 'dot' or 'concat'", "'" + options_.score_mode + "'");
  if (!(options_.dropout >= 0.0 && options_.dropout < 1.0))
    fail<ValueError>(where(), "dropout in [0, 1)", std::to_string(options_.dropout));
}

void AttentionImpl::validate_input(const std::vector<Shape>& shapes) const {
  check_input(shapes);
}

void AttentionImpl::check_input(const std::vector<Shape>& shapes) const {
  if (!current_call_args().keywords.empty())
    fail<ValueError>(where(), "inputs [query, value] or [query, value, key] by position", "keyword tensors");
  if (shapes.size() < 2 || shapes.size() > 3)
    fail<ShapeError>(where(), "inputs [query, value] or [query, value, key]", std::to_string(shapes.size()) + " input(s)");
  const Shape& q = shapes[0];
  const Shape& v = shapes[1];
  const Shape& k = shapes.size() > 2 ? shapes[2] : v;
  std::string got = "query " + shape_str(q) + ", value " + shape_str(v) + ", key " + shape_str(k);
  if (q.size() < 3 || v.size() != q.size() || k.size() != q.size())
    fail<ShapeError>(where(), "query, value and key of one rank >= 3 (batch, time, dim)", got);
  if (q.back() != k.back() && q.back() > 0 && k.back() > 0)
    fail<ShapeError>(where(), "query and key with equal last extents", got);
  if (k[k.size() - 2] != v[v.size() - 2] && k[k.size() - 2] > 0 && v[v.size() - 2] > 0)
    fail<ShapeError>(where(), "key and value with equal time extents", got);
  if (built() && build_input_shapes()[0].back() != q.back())
    fail<ShapeError>(where(), "a query with last extent " + std::to_string(build_input_shapes()[0].back()), got);
}

void AttentionImpl::build(const std::vector<Shape>&) {
  auto ones = initializers::get("ones");
  if (options_.use_scale) scale_ = add_weight("scale", {}, ones);
  if (options_.score_mode == "concat") concat_score_weight_ = add_weight("concat_score_weight", {}, ones);
}

Tensor AttentionImpl::scores(const Tensor& query, const Tensor& key) const {
  if (options_.score_mode == "dot") {
    Tensor s = ops::matmul(query, key, false, true);
    return options_.use_scale ? ops::multiply(s, scale_.value()) : s;
  }
  Tensor sum = ops::add(ops::expand_dims(query, -2), ops::expand_dims(key, -3));
  if (options_.use_scale) sum = ops::multiply(scale_.value(), sum);
  return ops::multiply(concat_score_weight_.value(), ops::sum(ops::tanh(sum), {-1}));
}

TensorList AttentionImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const Tensor& query = inputs[0];
  const Tensor& value = inputs[1];
  const Tensor& key = inputs.size() > 2 ? inputs[2] : value;
  Tensor s = scores(query, key);
  // Keras's _calculate_score_mask: the value mask (B, 1, Tv), and-ed with the causal mask.
  Tensor value_mask = ctx.mask(1);
  Tensor mask = value_mask.defined() ? ops::expand_dims(value_mask, -2) : Tensor();
  if (attention::call_flag(ctx.options, "use_causal_mask"))
    mask = ops::mask_and(mask, ops::causal_mask(s.shape()[s.rank() - 2], s.shape().back()));
  Tensor weights = ops::masked_softmax(s, mask, {ops::MaskFill::subtract, false});
  if (ctx.training && options_.dropout > 0.0)
    weights = ops::dropout(weights, options_.dropout,
                           generator(options_.seed ? std::optional<uint64_t>(static_cast<uint64_t>(*options_.seed)) : std::nullopt));
  Tensor out = ops::matmul(weights, value);
  if (Tensor query_mask = ctx.mask(0); query_mask.defined())
    out = ops::where(ops::expand_dims(query_mask, -1), out, Tensor::zeros({}, out.dtype(), out.device()));
  if (attention::call_flag(ctx.options, "return_attention_scores")) return {out, weights};
  return {out};
}

std::vector<Shape> AttentionImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  check_input(shapes);
  Shape out(shapes[0].begin(), shapes[0].end() - 1);
  out.push_back(shapes[1].back());
  if (!attention::call_flag(current_call_args().options, "return_attention_scores")) return {out};
  const Shape& k = shapes.size() > 2 ? shapes[2] : shapes[1];
  Shape scores(shapes[0].begin(), shapes[0].end() - 1);
  scores.push_back(k[k.size() - 2]);
  return {out, scores};
}

json AttentionImpl::get_config() const {
  json c = base_config();
  c["use_scale"] = options_.use_scale;
  c["score_mode"] = options_.score_mode;
  c["dropout"] = options_.dropout;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  return c;
}

AttentionOptions attention_options_from_config(const json& c) {
  AttentionOptions o;
  config::read_base_keys(c, o);
  o.use_scale = c.value("use_scale", false);
  if (c.contains("score_mode") && c["score_mode"].is_string()) o.score_mode = c["score_mode"].get<std::string>();
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  o.seed = config::optional_int(c, "seed");
  return o;
}

KERAS_REGISTER_LAYER(Attention, [](const json& c) -> LayerPtr {
  return std::make_shared<AttentionImpl>(attention_options_from_config(c));
});
KERAS_SIGNATURE(Attention, .training_default = false, .takes_mask = true,
                .call_keywords = {"return_attention_scores", "use_causal_mask"});

}  // namespace keras::layers
