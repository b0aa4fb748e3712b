#include "layers/dropout.h"

#include "backend/ops.h"
#include "backend/ops_nn.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

DropoutImpl::DropoutImpl(DropoutOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  if (!(options_.rate >= 0.0 && options_.rate < 1.0))
    fail<ValueError>(where(), "rate in [0, 1)", std::to_string(options_.rate));
  if (options_.noise_shape)
    for (int64_t e : *options_.noise_shape)
      if (e == 0 || e < -1)
        fail<ValueError>(where() + " noise_shape", "positive extents or None (-1)", shape_str(*options_.noise_shape));
}

void DropoutImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (!options_.noise_shape) return;
  const Shape& noise = *options_.noise_shape;
  const Shape& s = shapes[0];
  bool fits = noise.size() == s.size();
  for (size_t i = 0; fits && i < s.size(); ++i) fits = noise[i] == -1 || noise[i] == 1 || noise[i] == s[i] || s[i] == -1;
  if (!fits)
    fail<ShapeError>(where(), "an input that noise_shape " + shape_str(noise) + " broadcasts to (same rank, extents 1 or equal)",
                     "shape " + shape_str(s));
}

TensorList DropoutImpl::call(const TensorList& inputs, const CallContext& ctx) {
  if (!ctx.training || options_.rate == 0.0) return {inputs[0]};
  std::optional<uint64_t> seed;
  if (options_.seed) seed = static_cast<uint64_t>(*options_.seed);
  const Tensor& x = inputs[0];
  if (!options_.noise_shape) return {ops::dropout(x, options_.rate, generator(seed))};
  Shape noise = *options_.noise_shape;  // None entries take the input's extent, as Keras
  for (size_t i = 0; i < noise.size() && i < x.shape().size(); ++i)
    if (noise[i] == -1) noise[i] = x.shape()[i];
  return {ops::dropout_with_noise_shape(x, options_.rate, noise, generator(seed))};
}

json DropoutImpl::get_config() const {
  json c = base_config();
  c["rate"] = options_.rate;
  c["seed"] = options_.seed ? json(*options_.seed) : json(nullptr);
  c["noise_shape"] = options_.noise_shape ? config::shape_to_json(*options_.noise_shape) : json(nullptr);
  return c;
}

DropoutOptions dropout_options_from_config(const json& c) {
  DropoutOptions o;
  config::read_base_keys(c, o);
  if (c.contains("rate") && c["rate"].is_number()) o.rate = c["rate"].get<double>();
  o.seed = config::optional_int(c, "seed");
  if (c.contains("noise_shape") && !c["noise_shape"].is_null())
    o.noise_shape = config::shape_from_json(c["noise_shape"], "Dropout config 'noise_shape'");
  return o;
}

KERAS_REGISTER_LAYER(Dropout, [](const json& c) -> LayerPtr {
  return std::make_shared<DropoutImpl>(dropout_options_from_config(c));
});
KERAS_SIGNATURE(Dropout, .built_at_init = true, .training_default = false);

}  // namespace keras::layers
