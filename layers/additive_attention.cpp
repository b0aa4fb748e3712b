#include "layers/additive_attention.h"

#include "backend/ops.h"
#include "layers/initializers.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {
AttentionOptions as_attention(const AdditiveAttentionOptions& o) {
  return {.use_scale = o.use_scale, .score_mode = "dot", .dropout = o.dropout, .seed = o.seed, .name = o.name,
          .trainable = o.trainable, .dtype = o.dtype};
}
}  // namespace

AdditiveAttentionImpl::AdditiveAttentionImpl(AdditiveAttentionOptions options) : AttentionImpl(as_attention(options)) {}

void AdditiveAttentionImpl::build(const std::vector<Shape>& shapes) {
  if (options_.use_scale) scale_ = add_weight("scale", {shapes[0].back()}, initializers::get("glorot_uniform"));
}

Tensor AdditiveAttentionImpl::scores(const Tensor& query, const Tensor& key) const {
  Tensor t = ops::tanh(ops::add(ops::expand_dims(query, -2), ops::expand_dims(key, -3)));
  return ops::sum(options_.use_scale ? ops::multiply(scale_.value(), t) : t, {-1});
}

json AdditiveAttentionImpl::get_config() const {
  json c = AttentionImpl::get_config();
  c.erase("score_mode");
  return c;
}

AdditiveAttentionOptions additive_attention_options_from_config(const json& c) {
  AdditiveAttentionOptions o;
  config::read_base_keys(c, o);
  o.use_scale = c.value("use_scale", true);
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  o.seed = config::optional_int(c, "seed");
  return o;
}

KERAS_REGISTER_LAYER(AdditiveAttention, [](const json& c) -> LayerPtr {
  return std::make_shared<AdditiveAttentionImpl>(additive_attention_options_from_config(c));
});
KERAS_SIGNATURE(AdditiveAttention, .training_default = false, .takes_mask = true,
                .call_keywords = {"return_attention_scores", "use_causal_mask"});

}  // namespace keras::layers
