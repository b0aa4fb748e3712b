// The attention and normalization layers against REAL Keras 3 (tests/data/keras/
// attention_reference.json, made by make_attention_reference.py): each layer is made from
// Keras's own get_config(), given Keras's weights, called on the same tensors with the same
// masks and options, and must reproduce every output (1e-5 relative), the output mask, the
// weight paths and, after building, Keras's config.
#include <gtest/gtest.h>

#include "layers/layer_registry.h"
#include "tests/support/json_reference.h"

using namespace keras;
using keras::testing::max_relative_error;
using keras::testing::tensor_from_json;

namespace {

const json& reference() {
  static const json ref = keras::testing::load_json_reference("attention_reference.json");
  return ref;
}

// Keras's config less what is spelled differently on purpose: the dtype policy object (we write
// the dtype name; the saving code writes the policy).
json comparable(json c) {
  c.erase("dtype");
  return c;
}

struct Call {
  TensorList inputs;
  CallArgs args;
};

Call call_of(const json& c) {
  Call call;
  call.args.training = false;
  TensorList masks;
  bool any_mask = false;
  const json& arg_masks = c["arg_masks"];
  for (size_t i = 0; i < c["args"].size(); ++i) {
    call.inputs.push_back(tensor_from_json(c["args"][i]));
    bool has = i < arg_masks.size() && !arg_masks[i].is_null();
    masks.push_back(has ? tensor_from_json(arg_masks[i]) : Tensor());
    any_mask = any_mask || has;
  }
  for (const auto& [name, value] : c["kwargs"].items()) {
    call.inputs.push_back(tensor_from_json(value));
    call.args.keywords.push_back(name);
    bool has = c["kwarg_masks"].contains(name);
    masks.push_back(has ? tensor_from_json(c["kwarg_masks"][name]) : Tensor());
    any_mask = any_mask || has;
  }
  if (any_mask) call.args.mask = masks;
  call.args.options = c["options"];
  return call;
}

}  // namespace

class AttentionKerasReference : public ::testing::TestWithParam<std::string> {};

TEST_P(AttentionKerasReference, ReproducesKeras) {
  const json& c = reference()["cases"][GetParam()];
  ASSERT_TRUE(c.is_object()) << GetParam();
  LayerPtr layer = layer_from_config(c["class_name"].get<std::string>(), c["config"]);
  Call call = call_of(c);
  (*layer)(call.inputs, call.args);  // builds
  TensorList weights;
  for (const auto& w : c["weights"]) weights.push_back(tensor_from_json(w));
  layer->set_weights(weights);
  auto ours = layer->weights();
  ASSERT_EQ(ours.size(), c["weights"].size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i].path(), c["weights"][i]["path"].get<std::string>());

  TensorList outs = (*layer)(call.inputs, call.args);
  ASSERT_EQ(outs.size(), c["outputs"].size());
  for (size_t i = 0; i < outs.size(); ++i)
    EXPECT_LT(max_relative_error(outs[i], tensor_from_json(c["outputs"][i])), 1e-5) << "output " << i;
  if (c["output_mask"].is_null()) {
    EXPECT_FALSE(outs[0].keras_mask().defined());
  } else {
    ASSERT_TRUE(outs[0].keras_mask().defined());
    EXPECT_EQ(ops::cast(outs[0].keras_mask(), DType::float32).to_vector<float>(),
              ops::cast(tensor_from_json(c["output_mask"]), DType::float32).to_vector<float>());
  }
  EXPECT_EQ(comparable(layer->get_config()), comparable(c["config"]))
      << "ours:  " << layer->get_config().dump() << "\nkeras: " << c["config"].dump();
}

INSTANTIATE_TEST_SUITE_P(Cases, AttentionKerasReference,
                         ::testing::Values("mha_basic", "mha_key_value_dim_output_shape", "mha_attention_mask_fused",
                                           "mha_attention_mask_scores", "mha_causal_self", "mha_causal_scores",
                                           "mha_input_masks", "mha_input_masks_fused", "mha_attention_axes",
                                           "mha_attention_axes_2d", "mha_gate_window", "gqa_basic",
                                           "gqa_causal_masks", "attention_dot", "attention_scale_key_masks",
                                           "attention_concat_causal", "additive_attention",
                                           "additive_attention_noscale", "unit_normalization",
                                           "unit_normalization_axes", "group_normalization",
                                           "group_normalization_instance_axis1"));

// A fully masked query row: Keras's fused path averages the values, its Softmax path gives zero
// probabilities (so the output is the output projection's bias). The fixtures hold both.
TEST(AttentionKerasReferenceFacts, FullyMaskedRowDependsOnKerasPath) {
  const json& scores_case = reference()["cases"]["mha_attention_mask_scores"];
  Tensor scores = tensor_from_json(scores_case["outputs"][1]);  // (2, 2, 4, 5); row (0, h, 2) masked
  std::vector<float> s = scores.to_vector<float>();
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 5; ++j) EXPECT_EQ(s[static_cast<size_t>(((0 * 2 + h) * 4 + 2) * 5 + j)], 0.0f);
  const json& fused = reference()["cases"]["mha_attention_mask_fused"];
  EXPECT_GT(max_relative_error(tensor_from_json(fused["outputs"][0]), tensor_from_json(scores_case["outputs"][0])), 1e-3);
}
