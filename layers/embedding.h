// Embedding (keras.layers.Embedding): turns integer ids into dense vectors, out = embeddings[ids].
#pragma once
#include "layers/constraints.h"
#include "layers/initializers.h"
#include "layers/layer_handle.h"
#include "layers/regularizers.h"

namespace keras::layers {

// The config of Embedding (Keras 3 keys and defaults).
struct EmbeddingOptions {
  int64_t input_dim = 0;   // vocabulary size, required, >= 1
  int64_t output_dim = 0;  // vector size, required, >= 1
  InitializerArg embeddings_initializer = "uniform";  // RandomUniform(-0.05, 0.05)
  RegularizerArg embeddings_regularizer;
  RegularizerArg activity_regularizer;  // kept in the config; not applied yet
  ConstraintArg embeddings_constraint;  // applied after each optimizer update
  // Id 0 is padding: the output carries the mask ids != 0 (so input_dim = vocabulary + 1).
  bool mask_zero = false;
  // Keras's `weights=`: the initial (input_dim, output_dim) table, set when the layer is built.
  Tensor weights;
  std::string name;
  bool trainable = true;
  std::string dtype;  // a dtype policy name; empty: the global policy
};

// Weight: embeddings (input_dim, output_dim). Input: ids of any shape with a batch axis, int32
// or int64 (other dtypes are cast to int32 as Keras does: float ids truncate toward zero).
// Output: ids.shape + (output_dim,), float32. An id outside [0, input_dim) is an IndexError
// naming the layer, the id and input_dim. Gradients reach the embeddings through ops::take
// (a scatter-add of the rows used), never the ids.
// Construction throws ValueError for input_dim or output_dim < 1, or `weights` of another shape.
class EmbeddingImpl : public Layer {
 public:
  explicit EmbeddingImpl(EmbeddingOptions options);
  std::string class_name() const override { return "Embedding"; }
  void build(const std::vector<Shape>& input_shapes) override;
  TensorList call(const TensorList& inputs, const CallContext& ctx) override;
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& input_shapes) override;
  std::vector<DType> compute_output_dtype(const std::vector<DType>& input_dtypes) override;
  void validate_input(const std::vector<Shape>& input_shapes) const override;
  // Keras: supports_masking = mask_zero; the mask is ids != 0.
  bool supports_masking() const override { return options_.mask_zero; }
  TensorList compute_mask(const TensorList& inputs, const TensorList& masks) const override;
  json get_config() const override;
  const EmbeddingOptions& options() const { return options_; }
  const Variable& embeddings() const { return embeddings_; }

 private:
  EmbeddingOptions options_;
  Variable embeddings_;
};
KERAS_LAYER_HANDLE(Embedding, EmbeddingOptions);

// Reads a Keras 2 or Keras 3 Embedding config (unknown keys, such as Keras 2's input_length,
// ignored). NotImplementedError naming the layer for a non-null quantization_config or lora_rank.
EmbeddingOptions embedding_options_from_config(const json& config);

}  // namespace keras::layers
