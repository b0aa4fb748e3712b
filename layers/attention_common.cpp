#include "layers/attention_common.h"

#include <algorithm>

#include "backend/ops_attention_heads.h"
#include "layers/layer_config.h"

namespace keras::layers::attention {

InputSlots input_slots(size_t n_inputs, const std::vector<std::string>& keywords, const std::string& where) {
  InputSlots slots;
  const size_t first_keyword = n_inputs >= keywords.size() ? n_inputs - keywords.size() : 0;
  if (first_keyword > 3)
    fail<ValueError>(where, "at most 3 positional inputs (query, value, key)", std::to_string(first_keyword),
                     "Pass attention_mask by keyword.");
  int* positional[] = {&slots.query, &slots.value, &slots.key};
  for (size_t i = 0; i < first_keyword; ++i) *positional[i] = static_cast<int>(i);
  for (size_t j = 0; j < keywords.size(); ++j) {
    const std::string& kw = keywords[j];
    int* slot = kw == "query" ? &slots.query : kw == "value" ? &slots.value : kw == "key" ? &slots.key
              : kw == "attention_mask" ? &slots.attention_mask : nullptr;
    if (!slot)
      fail<ValueError>(where, "keywords query, value, key or attention_mask", "'" + kw + "'");
    if (*slot >= 0) fail<ValueError>(where, "'" + kw + "' once", "'" + kw + "' twice");
    *slot = static_cast<int>(first_keyword + j);
  }
  if (slots.query < 0 || slots.value < 0)
    fail<ValueError>(where, "query and value inputs", std::to_string(n_inputs) + " input(s)",
                     "Call the layer on [query, value] or [query, value, key].");
  return slots;
}

CallShapes call_shapes(const std::vector<Shape>& shapes, const std::vector<std::string>& keywords,
                       const std::string& where) {
  InputSlots s = input_slots(shapes.size(), keywords, where);
  CallShapes out;
  out.query = shapes[static_cast<size_t>(s.query)];
  out.value = shapes[static_cast<size_t>(s.value)];
  out.has_key = s.key >= 0;
  out.key = out.has_key ? shapes[static_cast<size_t>(s.key)] : out.value;
  return out;
}

bool call_flag(const json& options, const char* name) {
  if (!options.is_object() || !options.contains(name) || options[name].is_null()) return false;
  if (!options[name].is_boolean())
    fail<ValueError>(std::string("call option '") + name + "'", "a bool", options[name].dump());
  return options[name].get<bool>();
}

Tensor combined_mask(const Tensor& query_mask, const Tensor& value_mask, const Tensor& key_mask,
                     const Tensor& attention_mask, bool causal, std::optional<int64_t> sliding_window, int64_t tq,
                     int64_t tk) {
  auto as_bool = [](const Tensor& m) { return m.dtype() == DType::boolean ? m : ops::cast(m, DType::boolean); };
  Tensor automatic;
  if (query_mask.defined()) automatic = ops::expand_dims(as_bool(query_mask), -1);
  if (value_mask.defined()) automatic = ops::mask_and(automatic, ops::expand_dims(as_bool(value_mask), -2));
  if (key_mask.defined()) automatic = ops::mask_and(automatic, ops::expand_dims(as_bool(key_mask), -2));
  if (causal) automatic = ops::mask_and(automatic, ops::causal_mask(tq, tk));
  if (sliding_window) {
    Tensor rows = ops::reshape(Tensor::arange(0, static_cast<double>(tq)), {1, tq, 1});
    Tensor cols = ops::reshape(Tensor::arange(0, static_cast<double>(tk)), {1, 1, tk});
    Tensor distance = ops::abs(ops::subtract(rows, cols));
    automatic = ops::mask_and(automatic, ops::less(distance, Tensor::scalar(static_cast<double>(*sliding_window))));
  }
  Tensor given = attention_mask.defined() ? as_bool(attention_mask) : Tensor();
  return ops::mask_and(given, automatic);
}

CallTensors call_tensors(const TensorList& inputs, const CallContext& ctx, std::optional<int64_t> sliding_window,
                         const std::string& where) {
  const InputSlots slots = input_slots(inputs.size(), ctx.keywords, where);
  auto at = [&](int slot) { return slot >= 0 ? inputs[static_cast<size_t>(slot)] : Tensor(); };
  auto mask_at = [&](int slot) { return slot >= 0 ? ctx.mask(static_cast<size_t>(slot)) : Tensor(); };
  CallTensors t;
  t.query = at(slots.query);
  t.value = at(slots.value);
  t.key = slots.key >= 0 ? at(slots.key) : t.value;
  t.return_scores = call_flag(ctx.options, "return_attention_scores");
  t.mask = combined_mask(mask_at(slots.query), mask_at(slots.value), mask_at(slots.key), at(slots.attention_mask),
                         call_flag(ctx.options, "use_causal_mask"), sliding_window, t.query.shape()[1],
                         t.value.shape()[1]);
  return t;
}

std::string projection_equation(int64_t free_dims, int64_t bound_dims, int64_t output_dims) {
  std::string input, kernel, output;
  char letter = 'a';
  for (int64_t i = 0; i < free_dims; ++i, ++letter) {
    input += letter;
    output += letter;
  }
  for (int64_t i = 0; i < bound_dims; ++i, ++letter) {
    input += letter;
    kernel += letter;
  }
  for (int64_t i = 0; i < output_dims; ++i, ++letter) {
    kernel += letter;
    output += letter;
  }
  return input + "," + kernel + "->" + output;
}

namespace {

// Axis order that gathers (batch-like axes, heads, attention axes, channels).
std::vector<int> gather_order(size_t rank, const std::vector<int64_t>& axes) {
  std::vector<int> perm;
  for (size_t a = 0; a + 2 < rank; ++a)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(a)) == axes.end()) perm.push_back(static_cast<int>(a));
  perm.push_back(static_cast<int>(rank) - 2);
  for (int64_t a : axes) perm.push_back(static_cast<int>(a));
  perm.push_back(static_cast<int>(rank) - 1);
  return perm;
}

// x gathered and its attention axes flattened: (batch-like..., N, T, C); `lead` gets the
// batch-like extents and heads, `attended` the attention extents.
Tensor gathered(const Tensor& x, const std::vector<int64_t>& axes, Shape& lead, Shape& attended) {
  std::vector<int> perm = gather_order(x.shape().size(), axes);
  Tensor t = ops::transpose(x, perm);
  const Shape& s = t.shape();
  const size_t n_lead = s.size() - axes.size() - 1;
  lead.assign(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(n_lead));
  attended.assign(s.begin() + static_cast<std::ptrdiff_t>(n_lead), s.end() - 1);
  Shape flat = lead;
  flat.push_back(shape_numel(attended));
  flat.push_back(s.back());
  return ops::reshape(t, flat);
}

}  // namespace

Shape scores_shape(const Shape& q, const Shape& k, const std::vector<int64_t>& axes) {
  std::vector<int> perm = gather_order(q.size(), axes);
  Shape out;
  for (size_t i = 0; i + 1 < perm.size(); ++i) out.push_back(q[static_cast<size_t>(perm[i])]);
  for (int64_t a : axes) out.push_back(k[static_cast<size_t>(a)]);
  return out;
}

ops::DotProductAttentionOutputs attend(const Tensor& q, const Tensor& k, const Tensor& v,
                                       const std::vector<int64_t>& axes, const Tensor& mask,
                                       const ops::DotProductAttentionOptions& options) {
  // One sequence axis, no mask, no dropout: the fused op works in the projections' layout and
  // gives the same output and scores without the gathering transposes.
  const bool dropout = options.dropout > 0.0 && options.generator;
  if (axes == std::vector<int64_t>{1} && !mask.defined() && !options.mask.defined() && !dropout &&
      ops::attention_heads_supported(q, k, v)) {
    auto r = ops::attention_heads(q, k, v, options.scale);
    return {r.output, r.scores};
  }
  Shape q_lead, q_att, k_lead, k_att, v_lead, v_att;
  Tensor qg = gathered(q, axes, q_lead, q_att);
  Tensor kg = gathered(k, axes, k_lead, k_att);
  Tensor vg = gathered(v, axes, v_lead, v_att);
  if (q_lead != k_lead || k_lead != v_lead || k_att != v_att)
    fail<ShapeError>("attention", "query, key and value with equal batch-like axes and heads",
                     "projected query " + shape_str(q.shape()) + ", key " + shape_str(k.shape()) + ", value " +
                         shape_str(v.shape()));
  Shape full = scores_shape(q.shape(), k.shape(), axes);
  ops::DotProductAttentionOptions o = options;
  if (mask.defined()) {
    Tensor m = mask;
    const int insert_from_end = static_cast<int>(2 * axes.size());
    while (m.rank() < static_cast<int64_t>(full.size())) m = ops::expand_dims(m, static_cast<int>(m.rank()) - insert_from_end);
    try {
      m = ops::broadcast_to(m, full);
    } catch (const ShapeError&) {
      fail<ShapeError>("attention mask", "a mask that broadcasts to the scores " + shape_str(full),
                       "mask " + shape_str(mask.shape()), "Keras's attention_mask is (B, T, S).");
    }
    Shape flat = q_lead;
    flat.push_back(shape_numel(q_att));
    flat.push_back(shape_numel(k_att));
    o.mask = ops::reshape(m, flat);
  }
  ops::DotProductAttentionOutputs r = ops::dot_product_attention(qg, kg, vg, o);
  // Back to (B, <seq dims>, N, Dv): unflatten, then invert the gathering permutation.
  Shape unflat = q_lead;
  unflat.insert(unflat.end(), q_att.begin(), q_att.end());
  unflat.push_back(v.shape().back());
  std::vector<int> perm = gather_order(q.shape().size(), axes), inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int>(i);
  return {ops::transpose(ops::reshape(r.output, unflat), inverse), ops::reshape(r.scores, full)};
}

Tensor repeat_heads(const Tensor& x, int64_t times) {
  if (times == 1) return x;
  const Shape& s = x.shape();
  Tensor e = ops::broadcast_to(ops::expand_dims(x, 3), {s[0], s[1], s[2], times, s[3]});
  return ops::reshape(e, {s[0], s[1], s[2] * times, s[3]});
}

}  // namespace keras::layers::attention

namespace keras::layers::attention {

std::vector<LayerPtr> ProjectionOwner::sublayers() const {
  std::vector<LayerPtr> out;
  for (const auto& [key, layer] : projections_) out.push_back(layer);
  return out;
}

std::vector<std::pair<std::string, LayerPtr>> ProjectionOwner::keyed_sublayers() const {
  std::vector<std::pair<std::string, LayerPtr>> out;
  for (const auto& [key, layer] : projections_) out.emplace_back(key, layer);
  return out;
}

void ProjectionOwner::update_paths(const std::string& prefix) {
  Layer::update_paths(prefix);
  prefix_ = prefix;
  for (const auto& [key, layer] : projections_) layer->update_paths(prefix + name() + "/");
}

void ProjectionOwner::validate_input(const std::vector<Shape>& shapes) const {
  check_input(shapes);
}

std::shared_ptr<EinsumProjectionImpl> ProjectionOwner::add_projection(const std::string& key,
                                                                      EinsumProjectionOptions options,
                                                                      const Shape& input_shape) {
  if (options.dtype.empty()) options.dtype = dtype_policy().name;  // Keras: sublayers share the policy
  auto layer = std::make_shared<EinsumProjectionImpl>(std::move(options));
  layer->update_paths(prefix_ + name() + "/");
  layer->ensure_built({input_shape});
  projections_.emplace_back(key, layer);
  return layer;
}

json ProjectionOwner::shapes_dict_build_config() const {
  json shapes = {{"query_shape", config::shape_to_json(built_for_.query)},
                 {"value_shape", config::shape_to_json(built_for_.value)}};
  if (built_for_.has_key) shapes["key_shape"] = config::shape_to_json(built_for_.key);
  return {{"shapes_dict", shapes}};
}

json shapes_dict_build_config(const Layer& layer) {
  const auto* owner = dynamic_cast<const ProjectionOwner*>(&layer);
  if (!owner) fail<TypeError>(layer.where() + " build_config", "an attention layer with projections", layer.class_name());
  return owner->shapes_dict_build_config();
}

}  // namespace keras::layers::attention
