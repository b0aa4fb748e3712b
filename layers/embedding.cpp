#include "layers/embedding.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/mask_ops.h"

namespace keras::layers {

EmbeddingImpl::EmbeddingImpl(EmbeddingOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  autocast_inputs_ = false;  // float ids would be rounded in a two-byte compute dtype
  if (options_.input_dim < 1) fail<ValueError>(where(), "input_dim >= 1", std::to_string(options_.input_dim));
  if (options_.output_dim < 1) fail<ValueError>(where(), "output_dim >= 1", std::to_string(options_.output_dim));
  if (!options_.embeddings_initializer) fail<ValueError>(where(), "an embeddings_initializer", "none");
  const Shape table{options_.input_dim, options_.output_dim};
  if (options_.weights.defined() && options_.weights.shape() != table)
    fail<ValueError>(where(), "weights of shape " + shape_str(table), "shape " + shape_str(options_.weights.shape()));
}

void EmbeddingImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].empty()) fail<ShapeError>(where(), "ids with a batch axis", "a scalar");
}

void EmbeddingImpl::build(const std::vector<Shape>&) {
  embeddings_ = add_weight("embeddings", {options_.input_dim, options_.output_dim}, options_.embeddings_initializer.ptr(),
                           true, options_.embeddings_regularizer.ptr(), options_.embeddings_constraint.ptr());
  if (options_.weights.defined()) embeddings_.assign(options_.weights.astype(DType::float32));
}

namespace {

// IndexError naming the layer unless every id is in [0, input_dim). ops::take would wrap
// negative ids as NumPy does; Keras (TensorFlow) refuses them.
void check_ids(const Tensor& ids, int64_t input_dim, const std::string& where) {
  const std::vector<int64_t> values = ids.to_vector<int64_t>();
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] < 0 || values[i] >= input_dim)
      fail<IndexError>(where, "ids in [0, " + std::to_string(input_dim) + ") (input_dim " + std::to_string(input_dim) + ")",
                       "id " + std::to_string(values[i]) + " at flat position " + std::to_string(i) + " of ids of shape " +
                           shape_str(ids.shape()),
                       "input_dim is the vocabulary size (plus one when id 0 is padding).");
}

Tensor as_ids(const Tensor& x) {
  return x.dtype() == DType::int32 || x.dtype() == DType::int64 ? x : ops::cast(x, DType::int32);
}

}  // namespace

TensorList EmbeddingImpl::call(const TensorList& inputs, const CallContext&) {
  Tensor ids = as_ids(inputs[0]);
  check_ids(ids, options_.input_dim, where());
  Tensor out = ops::take(embeddings_.value(), ids, 0);
  // Attached here, not only through compute_mask: Layer calls compute_mask only for inputs that
  // carry a mask, and ids never do (Keras's Masking attaches its mask in call() the same way).
  if (options_.mask_zero) out.set_keras_mask(masks::not_zero(ids));
  return {out};
}

TensorList EmbeddingImpl::compute_mask(const TensorList& inputs, const TensorList&) const {
  if (!options_.mask_zero) return {Tensor()};
  return {masks::not_zero(as_ids(inputs[0]))};
}

std::vector<Shape> EmbeddingImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape out = shapes[0];
  out.push_back(options_.output_dim);
  return {out};
}

std::vector<DType> EmbeddingImpl::compute_output_dtype(const std::vector<DType>&) { return {compute_dtype()}; }

json EmbeddingImpl::get_config() const {
  json c = base_config();
  c["input_dim"] = options_.input_dim;
  c["output_dim"] = options_.output_dim;
  c["embeddings_initializer"] = initializers::serialize(options_.embeddings_initializer.ptr());
  c["embeddings_regularizer"] = regularizers::serialize(options_.embeddings_regularizer.ptr());
  c["activity_regularizer"] = regularizers::serialize(options_.activity_regularizer.ptr());
  c["embeddings_constraint"] = constraints::serialize(options_.embeddings_constraint.ptr());
  c["mask_zero"] = options_.mask_zero;
  c["quantization_config"] = nullptr;  // Keras 3.15: a float layer; lora_rank only when set
  return c;
}

EmbeddingOptions embedding_options_from_config(const json& c) {
  EmbeddingOptions o;
  config::read_base_keys(c, o);
  for (const char* key : {"input_dim", "output_dim"})
    if (!c.contains(key) || !c[key].is_number_integer())
      fail<ValueError>("Embedding config", std::string("an integer '") + key + "'", c.contains(key) ? c[key].dump() : "none");
  o.input_dim = c["input_dim"].get<int64_t>();
  o.output_dim = c["output_dim"].get<int64_t>();
  if (c.contains("embeddings_initializer")) o.embeddings_initializer = initializers::from_config(c["embeddings_initializer"]);
  if (c.contains("embeddings_regularizer")) o.embeddings_regularizer = regularizers::from_config(c["embeddings_regularizer"]);
  if (c.contains("activity_regularizer")) o.activity_regularizer = regularizers::from_config(c["activity_regularizer"]);
  if (c.contains("embeddings_constraint")) o.embeddings_constraint = constraints::from_config(c["embeddings_constraint"]);
  if (c.contains("mask_zero") && c["mask_zero"].is_boolean()) o.mask_zero = c["mask_zero"].get<bool>();
  // A quantized or LoRA Embedding carries other weights than the table.
  for (const char* key : {"quantization_config", "lora_rank"})
    if (c.contains(key) && !c[key].is_null())
      fail<NotImplementedError>("Embedding '" + o.name + "' config '" + key + "'", "null (a float Embedding)", c[key].dump(),
                                "Quantized and LoRA Embedding layers are not supported.");
  return o;
}

KERAS_REGISTER_LAYER(Embedding, [](const json& c) -> LayerPtr {
  return std::make_shared<EmbeddingImpl>(embedding_options_from_config(c));
});
KERAS_SIGNATURE(Embedding);

}  // namespace keras::layers
