// The recurrent layers against numbers from real Keras 3 (make_rnn_layers_reference.py): each
// layer is built from the config Keras wrote, given Keras's weights, called on the same inputs
// (masks, initial states) and must reproduce every output within 1e-5; its own config must equal
// Keras's.
#include <gtest/gtest.h>

#include "layers/layer_registry.h"
#include "layers/nested_layer.h"
#include "layers/rnn.h"
#include "support/rnn_reference.h"

using namespace keras;
using keras::testing::bool_mask_of;
using keras::testing::expect_close;
using keras::testing::normalized_config;
using keras::testing::rnn_case;
using keras::testing::rnn_reference;
using keras::testing::tensor_of;

namespace {

LayerPtr layer_of(const json& c) { return layer_from_config(c["class_name"].get<std::string>(), c["config"]["config"]); }

TensorList weights_of(const json& c) {
  TensorList w;
  for (const auto& j : c["weights"]) w.push_back(tensor_of(j));
  return w;
}

// The layer's call on the case's x, mask and initial_state (by keyword).
TensorList call_case(Layer& layer, const json& c) {
  TensorList inputs{tensor_of(c["x"])};
  CallArgs args{.training = false};
  if (c.contains("initial_state"))
    for (const auto& s : c["initial_state"]) {
      inputs.push_back(tensor_of(s));
      args.keywords.push_back("initial_state");
    }
  if (c.contains("mask")) {
    args.mask.assign(inputs.size(), Tensor());
    args.mask[0] = bool_mask_of(c["mask"]);
  }
  return layer(inputs, args);
}

void expect_outputs(const TensorList& ys, const json& expected, const std::string& name) {
  ASSERT_EQ(ys.size(), expected.size()) << name;
  for (size_t i = 0; i < ys.size(); ++i) expect_close(ys[i], tensor_of(expected[i]), name + " output " + std::to_string(i));
}

// Keras's config equals ours. The top-level build_config is left out: Keras records the shapes of
// the call that built the layer (a dict of shapes when initial_state was passed), which is the
// model serializer's business; nested layers' build_configs are compared.
void expect_keras_config(const Layer& layer, const json& c) {
  json ours = normalized_config(config::serialize_nested_layer(layer));
  json keras = normalized_config(c["config"]);
  ours.erase("build_config");
  keras.erase("build_config");
  EXPECT_EQ(ours, keras) << c["name"].get<std::string>() << ": differences (ours -> keras) "
                         << json::diff(ours, keras).dump();
}

}  // namespace

class RNNKerasReference : public ::testing::TestWithParam<std::string> {};

TEST_P(RNNKerasReference, OutputsAndConfigMatchKeras) {
  const json& c = rnn_case(GetParam());
  LayerPtr layer = layer_of(c);
  call_case(*layer, c);  // builds
  layer->set_weights(weights_of(c));
  expect_outputs(call_case(*layer, c), c["outputs"], GetParam());
  expect_keras_config(*layer, c);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RNNKerasReference,
    ::testing::Values("lstm_sequences_states_mask", "lstm_backwards_mask", "lstm_initial_state", "gru_reset_after_mask",
                      "gru_reset_before_mask", "gru_initial_state_backwards", "simple_rnn_mask",
                      "simple_rnn_relu_no_bias", "rnn_stacked_cells_mask", "rnn_gru_cell_backwards",
                      "bidirectional_concat_lstm_mask", "bidirectional_sum_gru_mask", "bidirectional_mul_simple_rnn",
                      "bidirectional_ave_lstm_mask", "bidirectional_none_states_mask",
                      "bidirectional_backward_layer_states", "time_distributed_dense_mask"));

TEST(RNNKerasReference, EveryGeneratedCaseIsTested) {
  // A case added to the generator but not to a test here would go unchecked.
  EXPECT_EQ(rnn_reference()["cases"].size(), 17u + 3u + 1u);
}

class RNNCellKerasReference : public ::testing::TestWithParam<std::string> {};

TEST_P(RNNCellKerasReference, StepMatchesKeras) {
  const json& c = rnn_case(GetParam());
  const json& call = c["cell_call"];
  TensorList inputs{tensor_of(call["x"])};
  for (const auto& s : call["states"]) inputs.push_back(tensor_of(s));
  LayerPtr cell = layer_of(c);
  (*cell)(inputs);
  cell->set_weights(weights_of(c));
  expect_outputs((*cell)(inputs, {.training = false}), call["outputs"], GetParam());
  expect_keras_config(*cell, c);
}

INSTANTIATE_TEST_SUITE_P(Cells, RNNCellKerasReference,
                         ::testing::Values("lstm_cell", "gru_cell_reset_before", "simple_rnn_cell"));

TEST(RNNKerasReference, StatefulLSTMCarriesStatesAcrossCallsUntilReset) {
  const json& c = rnn_case("lstm_stateful");
  LayerPtr layer = layer_of(c);
  auto rnn = std::dynamic_pointer_cast<layers::RNNImpl>(layer);
  ASSERT_TRUE(rnn);
  (*layer)(TensorList{tensor_of(c["calls"][0]["x"])});
  layer->set_weights(weights_of(c));
  rnn->reset_states();
  for (size_t i = 0; i < c["calls"].size(); ++i) {
    const json& call = c["calls"][i];
    if (call["reset"].get<bool>()) rnn->reset_states();
    expect_outputs((*layer)(TensorList{tensor_of(call["x"])}, {.training = false}), call["outputs"],
                   "call " + std::to_string(i));
  }
  expect_keras_config(*layer, c);
}
