// The embedding, masking and 1-D shape layers: the layer harness on each, their outputs and masks
// against real Keras 3 (tests/data/keras/sequence_basics.json, make_sequence_basics_reference.py),
// and the errors they raise.
#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/cropping1d.h"
#include "layers/embedding.h"
#include "layers/identity.h"
#include "layers/masking.h"
#include "layers/permute.h"
#include "layers/repeat_vector.h"
#include "layers/up_sampling1d.h"
#include "layers/zero_padding1d.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"
#include "support/sequence_reference.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace ref = keras::testing::sequence;

// ---------------- the harness ----------------

TEST(SequenceLayersHarness, EmbeddingInt32Ids) {
  run_layer_harness({.name = "Embedding int32",
                     .make = [] { return LayerPtr(layers::Embedding({.input_dim = 7, .output_dim = 3})); },
                     .input_shape = {4, 5},
                     .weight_shapes = {{7, 3}},
                     .input_dtype = DType::int32,
                     .input_limit = 7});
}

TEST(SequenceLayersHarness, EmbeddingInt64IdsMaskZero) {
  run_layer_harness({.name = "Embedding int64 mask_zero",
                     .make = [] { return LayerPtr(layers::Embedding({.input_dim = 5, .output_dim = 2, .mask_zero = true})); },
                     .input_shape = {3, 2, 4},
                     .weight_shapes = {{5, 2}},
                     .input_dtype = DType::int64,
                     .input_limit = 5});
}

TEST(SequenceLayersHarness, Masking) {
  // Whole steps equal to the mask value, so the masked output has exact zeros to keep. Central
  // differences would step off the mask value (a jump), so (g) is off; the gradient is checked
  // exactly in MaskingPassesGradientsOnlyThroughKeptSteps.
  run_layer_harness({.name = "Masking",
                     .make = [] { return LayerPtr(layers::Masking({.mask_value = 0.5})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {},
                     .check_gradients = false,
                     .make_input = [](const Shape& s, uint64_t seed) {
                       Tensor x = random::normal(s, 0.0, 1.0, seed);
                       Tensor half = Tensor::full({s[0], 1, s[2]}, 0.5);
                       return ops::concatenate({ops::slice(x, {0, 0, 0}, {-1, s[1] - 1, -1}), half}, 1);
                     }});
}

TEST(SequenceLayersHarness, ShapeLayers) {
  run_layer_harness({.name = "RepeatVector",
                     .make = [] { return LayerPtr(layers::RepeatVector({.n = 3})); },
                     .input_shape = {2, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Permute (2, 1)",
                     .make = [] { return LayerPtr(layers::Permute({.dims = {2, 1}})); },
                     .input_shape = {2, 5, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Permute (3, 1, 2)",
                     .make = [] { return LayerPtr(layers::Permute({.dims = {3, 1, 2}})); },
                     .input_shape = {2, 2, 3, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Cropping1D (2, 1)",
                     .make = [] { return LayerPtr(layers::Cropping1D({.cropping = {2, 1}})); },
                     .input_shape = {2, 6, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "ZeroPadding1D (1, 2)",
                     .make = [] { return LayerPtr(layers::ZeroPadding1D({.padding = {1, 2}})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "UpSampling1D 3",
                     .make = [] { return LayerPtr(layers::UpSampling1D({.size = 3})); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Identity",
                     .make = [] { return LayerPtr(layers::Identity()); },
                     .input_shape = {2, 4, 3},
                     .weight_shapes = {}});
}

// ---------------- values against Keras ----------------

namespace {

// Runs `layer` on the case's inputs (with its weights set) and compares outputs and masks.
void expect_case(const LayerPtr& layer, const std::string& name) {
  SCOPED_TRACE(name);
  const json& c = ref::reference_case(name);
  TensorList xs = ref::tensors_of(c.at("inputs"));
  TensorList ys = (*layer)(xs);
  if (!c.at("weights").empty()) {
    layer->set_weights(ref::tensors_of(c.at("weights")));
    ys = (*layer)(xs);
  }
  ASSERT_EQ(ys.size(), c.at("outputs").size());
  for (size_t i = 0; i < ys.size(); ++i) {
    ref::expect_matches(ys[i], c.at("outputs")[i], name);
    ref::expect_mask_matches(ys[i], c.at("masks")[i], name);
  }
}

}  // namespace

TEST(SequenceLayersKeras, EmbeddingLooksUpRowsAndMasksZeros) {
  ASSERT_TRUE(ref::reference().is_object()) << "tests/data/keras/sequence_basics.json";
  expect_case(layers::Embedding({.input_dim = 10, .output_dim = 4, .mask_zero = true}), "Embedding_mask_zero");
  expect_case(layers::Embedding({.input_dim = 10, .output_dim = 4, .mask_zero = true}), "Embedding_int64");
  // Float ids are cast to int32 as Keras does (1.7 -> 1, 9.9 -> 9); no mask without mask_zero.
  expect_case(layers::Embedding({.input_dim = 10, .output_dim = 4}), "Embedding_float_ids");
}

TEST(SequenceLayersKeras, EmbeddingWeightsOptionSetsTheTable) {
  const json& c = ref::reference_case("Embedding_float_ids");
  Tensor table = ref::tensor_of(c.at("weights")[0]);
  layers::Embedding emb({.input_dim = 10, .output_dim = 4, .weights = table});
  ref::expect_matches(emb(ref::tensor_of(c.at("inputs")[0])), c.at("outputs")[0], "weights=");
  expect_error<ValueError>([&] { layers::Embedding({.input_dim = 9, .output_dim = 4, .weights = table}); },
                           {"Embedding", "weights of shape (9, 4)", "(10, 4)"});
}

TEST(SequenceLayersKeras, MaskingZeroesAndMasksTheStepsEqualToTheValue) {
  expect_case(layers::Masking(), "Masking");
  expect_case(layers::Masking({.mask_value = -1.5}), "Masking_value");
}

TEST(SequenceLayersKeras, ShapeLayersMatchKeras) {
  expect_case(layers::RepeatVector({.n = 3}), "RepeatVector");
  expect_case(layers::Permute({.dims = {2, 1}}), "Permute");
  expect_case(layers::Permute({.dims = {3, 1, 2}}), "Permute_3d");
  expect_case(layers::Cropping1D(), "Cropping1D");
  expect_case(layers::Cropping1D({.cropping = {2, 0}}), "Cropping1D_pair");
  expect_case(layers::ZeroPadding1D(), "ZeroPadding1D");
  expect_case(layers::ZeroPadding1D({.padding = {0, 2}}), "ZeroPadding1D_pair");
  expect_case(layers::UpSampling1D(), "UpSampling1D");
  expect_case(layers::UpSampling1D({.size = 3}), "UpSampling1D_3");
}

// ---------------- the embedding's gradient ----------------

TEST(SequenceLayers, EmbeddingGradientAddsUpTheRowsOfRepeatedIds) {
  layers::Embedding emb({.input_dim = 6, .output_dim = 2});
  Tensor ids = Tensor::from_vector(std::vector<int32_t>{1, 4, 1, 1, 0, 4}, {2, 3});
  emb(ids);
  Tensor grad;
  {
    GradientTape tape;
    Tensor y = emb(ids);
    grad = tape.gradient(ops::sum(y), {emb->embeddings().value()})[0];
  }
  ASSERT_TRUE(grad.defined());
  // Each row's gradient is the number of times its id occurs (sum of ones per column).
  std::vector<float> expected = {1, 1, 3, 3, 0, 0, 0, 0, 2, 2, 0, 0};
  EXPECT_EQ(grad.to_vector<float>(), expected);
}

TEST(SequenceLayers, MaskingPassesGradientsOnlyThroughKeptSteps) {
  Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 0, 0, 0, 3}, {1, 3, 2});
  x.set_requires_grad(true);
  Tensor grad;
  {
    GradientTape tape;
    grad = tape.gradient(ops::sum(layers::Masking()(x)), {x})[0];
  }
  ASSERT_TRUE(grad.defined());
  EXPECT_EQ(grad.to_vector<float>(), (std::vector<float>{1, 1, 0, 0, 1, 1}));
}

// ---------------- errors ----------------

TEST(SequenceLayers, EmbeddingRefusesIdsOutOfRange) {
  layers::Embedding emb({.input_dim = 10, .output_dim = 4, .name = "tokens"});
  Tensor too_big = Tensor::from_vector(std::vector<int32_t>{1, 2, 10}, {1, 3});
  expect_error<IndexError>([&] { emb(too_big); }, {"Layer 'tokens' (Embedding)", "[0, 10)", "input_dim 10", "id 10"});
  Tensor negative = Tensor::from_vector(std::vector<int64_t>{-1, 2}, {2, 1});
  expect_error<IndexError>([&] { emb(negative); }, {"tokens", "id -1"});
}

TEST(SequenceLayers, ConstructionErrorsNameTheLayer) {
  expect_error<ValueError>([] { layers::Embedding({.input_dim = 0, .output_dim = 4}); }, {"Embedding", "input_dim >= 1"});
  expect_error<ValueError>([] { layers::Embedding({.input_dim = 3, .output_dim = 0}); }, {"Embedding", "output_dim >= 1"});
  expect_error<ValueError>([] { layers::RepeatVector({.n = 0}); }, {"RepeatVector", "n >= 1"});
  expect_error<ValueError>([] { layers::Permute({.dims = {1, 3}}); }, {"Permute", "permutation"});
  expect_error<ValueError>([] { layers::Cropping1D({.cropping = {-1, 0}}); }, {"Cropping1D", "non-negative"});
  expect_error<ValueError>([] { layers::ZeroPadding1D({.padding = {0, -2}}); }, {"ZeroPadding1D", "non-negative"});
  expect_error<ValueError>([] { layers::UpSampling1D({.size = 0}); }, {"UpSampling1D", "size >= 1"});
}

TEST(SequenceLayers, ShapeErrorsNameTheLayerAndShape) {
  expect_error<ShapeError>([] { layers::RepeatVector({.n = 2})(Tensor::zeros({2, 3, 4})); }, {"RepeatVector", "rank 2", "(2, 3, 4)"});
  expect_error<ShapeError>([] { layers::Permute({.dims = {2, 1}})(Tensor::zeros({2, 3})); }, {"Permute", "rank 3", "(2, 3)"});
  expect_error<ShapeError>([] { layers::Cropping1D({.cropping = {2, 2}})(Tensor::zeros({1, 4, 2})); },
                           {"Cropping1D", "smaller than the input length", "(1, 4, 2)"});
  expect_error<ShapeError>([] { layers::ZeroPadding1D()(Tensor::zeros({2, 3})); }, {"ZeroPadding1D", "rank 3"});
  expect_error<ShapeError>([] { layers::UpSampling1D()(Tensor::zeros({2, 3, 4, 5})); }, {"UpSampling1D", "rank 3"});
  expect_error<ShapeError>([] { layers::Masking()(Tensor::zeros({4})); }, {"Masking", "rank >= 2"});
}

TEST(SequenceLayers, QuantizedOrLoraEmbeddingConfigsAreRefused) {
  json c = ref::reference().at("configs").at("Embedding").at("config");
  c["lora_rank"] = 4;
  expect_error<NotImplementedError>([&] { layer_from_config("Embedding", c); }, {"Embedding 'layer'", "lora_rank", "4"});
  c["lora_rank"] = nullptr;
  c["quantization_config"] = json::object({{"mode", "int8"}});
  expect_error<NotImplementedError>([&] { layer_from_config("Embedding", c); }, {"quantization_config"});
}
