// Keras masks through layers, against real Keras 3 (tests/data/keras/sequence_basics.json): which
// layers pass a mask on (supports_masking), which compute their own (merges, Concatenate), which
// drop it (the 1-D shape layers, Dot, pooling), and the layers whose call uses it
// (GlobalAveragePooling1D, Softmax, BatchNormalization in training).
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "backend/ops.h"
#include "layers/activation.h"
#include "layers/batch_normalization.h"
#include "layers/concatenate.h"
#include "layers/cropping1d.h"
#include "layers/dense.h"
#include "layers/dot.h"
#include "layers/dropout.h"
#include "layers/elementwise_merge.h"
#include "layers/elu.h"
#include "layers/embedding.h"
#include "layers/flatten.h"
#include "layers/global_average_pooling1d.h"
#include "layers/global_max_pooling1d.h"
#include "layers/identity.h"
#include "layers/layer_normalization.h"
#include "layers/leaky_relu.h"
#include "layers/masking.h"
#include "layers/permute.h"
#include "layers/relu.h"
#include "layers/reshape.h"
#include "layers/rescaling.h"
#include "layers/softmax.h"
#include "layers/up_sampling1d.h"
#include "layers/zero_padding1d.h"
#include "support/expect_error.h"
#include "support/sequence_reference.h"

using namespace keras;
using keras::testing::expect_error;
namespace ref = keras::testing::sequence;

namespace {

void expect_outputs(const Tensor& y, const json& c, const std::string& name) {
  ref::expect_matches(y, c.at("outputs")[0], name);
  ref::expect_mask_matches(y, c.at("masks")[0], name);
}

}  // namespace

TEST(MaskPropagation, LayersAfterMaskingPassOrDropTheMaskAsKerasDoes) {
  ASSERT_TRUE(ref::reference().is_object()) << "tests/data/keras/sequence_basics.json";
  std::map<std::string, std::function<LayerPtr()>> after = {
      {"Dense", [] { return LayerPtr(layers::Dense({.units = 2})); }},
      {"Activation", [] { return LayerPtr(layers::Activation({.activation = "tanh"})); }},
      {"ReLU", [] { return LayerPtr(layers::ReLU()); }},
      {"LeakyReLU", [] { return LayerPtr(layers::LeakyReLU()); }},
      {"ELU", [] { return LayerPtr(layers::ELU()); }},
      {"Dropout", [] { return LayerPtr(layers::Dropout({.rate = 0.5})); }},
      {"LayerNormalization", [] { return LayerPtr(layers::LayerNormalization()); }},
      {"BatchNormalization", [] { return LayerPtr(layers::BatchNormalization()); }},
      {"Rescaling", [] { return LayerPtr(layers::Rescaling({.scale = 2.0})); }},
      {"Identity", [] { return LayerPtr(layers::Identity()); }},
      {"Permute", [] { return LayerPtr(layers::Permute({.dims = {2, 1}})); }},
      {"Cropping1D", [] { return LayerPtr(layers::Cropping1D()); }},
      {"ZeroPadding1D", [] { return LayerPtr(layers::ZeroPadding1D()); }},
      {"UpSampling1D", [] { return LayerPtr(layers::UpSampling1D()); }},
      // Views of the masked tensor: the mask must not ride along.
      {"Flatten", [] { return LayerPtr(layers::Flatten()); }},
      {"Reshape", [] { return LayerPtr(layers::Reshape({.target_shape = {12}})); }},
      {"Reshape_same", [] { return LayerPtr(layers::Reshape({.target_shape = {4, 3}})); }},
  };
  for (const auto& [name, make] : after) {
    SCOPED_TRACE(name);
    const json& c = ref::reference_case("after_masking_" + name);
    Tensor masked = layers::Masking()(ref::tensor_of(c.at("inputs")[0]));
    LayerPtr layer = make();
    (*layer)(masked);
    if (!c.at("weights").empty()) layer->set_weights(ref::tensors_of(c.at("weights")));
    expect_outputs((*layer)(masked), c, name);
  }
}

TEST(MaskPropagation, SoftmaxRefusesASequenceMaskThatDoesNotBroadcastFromTheRight) {
  // Keras raises here too (after_masking_Softmax records its error).
  const json& c = ref::reference_case("after_masking_Softmax");
  EXPECT_NE(c.at("error").get<std::string>().find("Softmax"), std::string::npos);
  Tensor masked = layers::Masking()(ref::tensor_of(c.at("inputs")[0]));
  expect_error<ValueError>([&] { layers::Softmax()(masked); }, {"Softmax", "broadcasts to the input (2, 4, 3)", "(2, 4)"});
}

TEST(MaskPropagation, SoftmaxGivesMaskedEntriesZero) {
  const json& c = ref::reference_case("Softmax_mask");
  TensorList in = ref::tensors_of(c.at("inputs"));
  Tensor y = layers::Softmax()(in[0], {.mask = {in[1]}});
  expect_outputs(y, c, "Softmax_mask");  // the all-masked row is zeros, not uniform
}

TEST(MaskPropagation, BatchNormalizationTrainsOnTheUnmaskedStepsOnly) {
  const json& c = ref::reference_case("BatchNormalization_training_mask");
  TensorList in = ref::tensors_of(c.at("inputs"));
  layers::BatchNormalization bn({.momentum = 0.5});
  Tensor y = bn(in[0], {.training = true, .mask = {in[1]}});
  expect_outputs(y, c, "BatchNormalization_training_mask");  // the mask passes through
  // gamma, beta, then the moving statistics Keras updated from the masked moments.
  auto weights = bn->get_weights();
  ASSERT_EQ(weights.size(), 4u);
  for (size_t i = 0; i < 4; ++i) ref::expect_matches(weights[i], c.at("weights")[i], "weight " + std::to_string(i));
  expect_error<ShapeError>([&] { bn(in[0], {.training = true, .mask = {in[0]}}); }, {"BatchNormalization", "one rank below"});
}

TEST(MaskPropagation, MergesOrTheMasksAndConcatenateJoinsThem) {
  std::map<std::string, std::function<LayerPtr()>> merges = {
      {"Add", [] { return LayerPtr(layers::Add()); }},           {"Subtract", [] { return LayerPtr(layers::Subtract()); }},
      {"Multiply", [] { return LayerPtr(layers::Multiply()); }}, {"Average", [] { return LayerPtr(layers::Average()); }},
      {"Maximum", [] { return LayerPtr(layers::Maximum()); }},   {"Minimum", [] { return LayerPtr(layers::Minimum()); }},
      {"Concatenate", [] { return LayerPtr(layers::Concatenate()); }},
      {"Dot", [] { return LayerPtr(layers::Dot({.axes = 2})); }},  // never a mask
  };
  for (const auto& [name, make] : merges) {
    SCOPED_TRACE(name);
    const json& c = ref::reference_case("merge_" + name);
    TensorList in = ref::tensors_of(c.at("inputs"));
    Tensor a = layers::Masking()(in[0]), b = layers::Masking()(in[1]);
    expect_outputs((*make())({a, b})[0], c, name);
  }
  auto one_unmasked = [](const std::string& name, const LayerPtr& layer) {
    SCOPED_TRACE(name);
    const json& c = ref::reference_case(name);
    TensorList in = ref::tensors_of(c.at("inputs"));
    expect_outputs((*layer)({layers::Masking()(in[0]), in[1]})[0], c, name);
  };
  one_unmasked("merge_Add_one_unmasked", layers::Add());  // no mask when one input has none
  one_unmasked("merge_Concatenate_one_unmasked", layers::Concatenate());
  one_unmasked("merge_Concatenate_axis1_one_unmasked", layers::Concatenate({.axis = 1}));
}

TEST(MaskPropagation, GlobalAveragePooling1DAveragesTheRealTokensOnly) {
  const json& c = ref::reference_case("GlobalAveragePooling1D_masked");
  Tensor ids = ref::tensor_of(c.at("inputs")[0]);
  Tensor table = ref::tensor_of(c.at("weights")[0]);
  layers::Embedding emb({.input_dim = 10, .output_dim = 4, .mask_zero = true, .weights = table});
  Tensor pooled = layers::GlobalAveragePooling1D()(emb(ids));
  expect_outputs(pooled, c, "GlobalAveragePooling1D_masked");
  // The same as the mean of each sequence's real tokens looked up alone.
  std::vector<int32_t> flat = ids.to_vector<int32_t>();
  const int64_t steps = ids.dim(1);
  for (int64_t row = 0; row < ids.dim(0); ++row) {
    std::vector<int32_t> real;
    for (int64_t t = 0; t < steps; ++t)
      if (flat[row * steps + t] != 0) real.push_back(flat[row * steps + t]);
    Tensor alone = ops::mean(emb(Tensor::from_vector(real, {1, static_cast<int64_t>(real.size())})), {1});
    std::vector<float> want = alone.to_vector<float>();
    std::vector<float> got = ops::slice(pooled, {row, 0}, {1, -1}).to_vector<float>();
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-6) << "row " << row;
  }
}

TEST(MaskPropagation, GlobalMaxPooling1DIgnoresTheMaskAsKerasDoes) {
  const json& c = ref::reference_case("GlobalMaxPooling1D_masked");
  layers::Embedding emb({.input_dim = 10, .output_dim = 4, .mask_zero = true, .weights = ref::tensor_of(c.at("weights")[0])});
  expect_outputs(layers::GlobalMaxPooling1D()(emb(ref::tensor_of(c.at("inputs")[0]))), c, "GlobalMaxPooling1D_masked");
}

TEST(MaskPropagation, SupportsMaskingIsWhatKerasDeclares) {
  EXPECT_FALSE(layers::Embedding({.input_dim = 3, .output_dim = 2})->supports_masking());
  EXPECT_TRUE(layers::Embedding({.input_dim = 3, .output_dim = 2, .mask_zero = true})->supports_masking());
  EXPECT_TRUE(layers::Masking()->supports_masking());
  EXPECT_TRUE(layers::GlobalAveragePooling1D()->supports_masking());
  EXPECT_FALSE(layers::GlobalMaxPooling1D()->supports_masking());
  EXPECT_FALSE(layers::Permute({.dims = {2, 1}})->supports_masking());
  EXPECT_TRUE(layers::Dot({.axes = 1})->supports_masking());
}
