// The masks serialize_model records as Keras 3 does (keras/saving/detail/mask_nodes.h), on models
// built here; the fixtures Keras wrote (test_sequence_fixtures.cpp OurConfigIsKerasConfig) pin
// the Embedding, Masking, merge and Concatenate forms against real Keras configs.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "keras/saving/detail/call_nodes.h"
#include "keras/saving/model_config.h"

using namespace keras;
namespace L = keras::layers;

namespace {

const json& entry(const json& model, const std::string& name) {
  for (const auto& e : model["config"]["layers"])
    if (e["name"] == name) return e;
  static const json none;
  ADD_FAILURE() << "no entry " << name;
  return none;
}

std::string history(const json& keras_tensor) { return keras_tensor["config"]["keras_history"][0]; }

}  // namespace

// One masked and one unmasked input: Keras 3's Concatenate.compute_mask records OnesLike for the
// unmasked one and ExpandDims, ZerosLike, LogicalOr for the masked one (its mask has fewer axes),
// then Concatenate and Any, which the LSTM receives as its mask.
TEST(MaskNodes, ConcatenateOfMaskedAndUnmaskedInputs) {
  auto ids = L::Input({6}, {.dtype = "int32", .name = "tokens"});
  auto masked = L::Embedding({.input_dim = 9, .output_dim = 3, .mask_zero = true, .name = "masked"})(ids);
  auto plain = L::Embedding({.input_dim = 9, .output_dim = 2, .name = "plain"})(ids);
  auto joined = L::Concatenate({.name = "concat"})(std::vector<KerasTensor>{masked, plain})[0];
  auto out = L::LSTM({.units = 2, .name = "lstm"})(joined);
  Model model(ids, out);
  const json k3 = serialize_model(model);

  const json& mask = entry(k3, "lstm")["inbound_nodes"][0]["kwargs"]["mask"];
  ASSERT_TRUE(mask.is_object()) << mask.dump();
  EXPECT_EQ(history(mask), "any");
  EXPECT_EQ(mask["config"]["shape"], json::parse("[null, 6]"));
  EXPECT_EQ(mask["config"]["dtype"], "bool");
  const json& any = entry(k3, "any");
  EXPECT_EQ(any["module"], "keras.src.ops.numpy");
  EXPECT_EQ(any["config"], json::parse(R"({"name": "any", "axis": -1, "keepdims": false})"));
  const json& concat = entry(k3, "concatenate");  // the operation; the layer is "concat"
  EXPECT_EQ(concat["class_name"], "Concatenate");
  EXPECT_EQ(concat["config"], json::parse(R"({"name": "concatenate", "axis": -1})"));
  const json& parts = concat["inbound_nodes"][0]["args"][0];
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(history(parts[0]), "logical_or");
  EXPECT_EQ(history(parts[1]), "ones_like");
  EXPECT_EQ(entry(k3, "ones_like")["config"], json::parse(R"({"name": "ones_like", "dtype": "bool"})"));
  EXPECT_EQ(history(entry(k3, "ones_like")["inbound_nodes"][0]["args"][0]), "plain");
  const json& widen = entry(k3, "logical_or")["inbound_nodes"][0]["args"];
  EXPECT_EQ(history(widen[0]), "expand_dims");
  EXPECT_EQ(history(widen[1]), "zeros_like");
  EXPECT_EQ(entry(k3, "expand_dims")["config"], json::parse(R"({"name": "expand_dims", "axis": -1})"));
  EXPECT_EQ(history(entry(k3, "expand_dims")["inbound_nodes"][0]["args"][0]), "not_equal");
  EXPECT_EQ(entry(k3, "not_equal")["inbound_nodes"][0]["args"][1], 0);

  // The reader recognises every one of them as a recorded mask computation and rebuilds the rest.
  EXPECT_EQ(detail::mask_operations(k3["config"]),
            (std::set<std::string>{"not_equal", "expand_dims", "zeros_like", "logical_or", "ones_like", "concatenate",
                                   "any"}));
  auto rebuilt = model_from_config(k3);
  EXPECT_EQ(rebuilt->layers().size(), model.layers().size());
}

// No mask anywhere: no operations, and a None mask where the call takes one.
TEST(MaskNodes, UnmaskedModelRecordsNone) {
  auto ids = L::Input({6}, {.dtype = "int32"});
  auto x = L::Embedding({.input_dim = 9, .output_dim = 3, .name = "embed"})(ids);
  auto out = L::LSTM({.units = 2, .name = "lstm"})(x);
  Model model(ids, out);
  const json k3 = serialize_model(model);
  EXPECT_EQ(k3["config"]["layers"].size(), 3u);
  EXPECT_TRUE(entry(k3, "lstm")["inbound_nodes"][0]["kwargs"]["mask"].is_null());
}

// A mask computed but read by no call is not written (Keras writes only what a node uses), and a
// layer that does not pass masks on ends them.
TEST(MaskNodes, UnusedMasksAreNotWritten) {
  auto ids = L::Input({6}, {.dtype = "int32"});
  auto x = L::Embedding({.input_dim = 9, .output_dim = 3, .mask_zero = true, .name = "embed"})(ids);
  auto out = L::Dense({.units = 2, .name = "head"})(L::Flatten()(x));
  Model model(ids, out);
  const json k3 = serialize_model(model);
  for (const auto& e : k3["config"]["layers"]) EXPECT_NE(e["module"], "keras.src.ops.numpy") << e.dump();
}

// After a nested model the next call's mask is null, as Keras 3 writes it (its symbolic nested
// outputs carry no mask; the fixture nested_masked holds Keras's own file): no operation entry
// computes it. The model still runs masked, here and after a round trip through that config:
// padding changes nothing, where with the mask dropped it would.
TEST(MaskNodes, NestedModelOutputMaskIsNullAsKeras3WritesIt) {
  auto inner_ids = L::Input({6}, {.dtype = "int32", .name = "inner_tokens"});
  auto encoder = std::make_shared<Model>(
      inner_ids, L::Embedding({.input_dim = 9, .output_dim = 3, .mask_zero = true, .name = "embed"})(inner_ids),
      "encoder");
  auto ids = L::Input({6}, {.dtype = "int32", .name = "tokens"});
  auto out = L::LSTM({.units = 2, .name = "lstm"})((*encoder)(ids));
  Model model(ids, out);
  const json k3 = serialize_model(model);
  EXPECT_TRUE(entry(k3, "lstm")["inbound_nodes"][0]["kwargs"]["mask"].is_null());
  EXPECT_TRUE(entry(k3, "encoder")["inbound_nodes"][0]["kwargs"]["mask"].is_null());
  for (const auto& e : k3["config"]["layers"]) EXPECT_NE(e["module"], "keras.src.ops.numpy") << e.dump();

  Tensor padded = Tensor::from_vector(std::vector<int32_t>{5, 3, 0, 0, 0, 0}, {1, 6});
  const std::vector<float> want = model.predict_on_batch({padded}).to_vector<float>();
  auto reloaded = model_from_config(k3);
  reloaded->set_weights(model.get_weights());
  EXPECT_EQ(reloaded->predict_on_batch({padded}).to_vector<float>(), want);
  auto plain_ids = L::Input({6}, {.dtype = "int32"});
  Model unmasked(plain_ids, L::LSTM({.units = 2})(L::Embedding({.input_dim = 9, .output_dim = 3})(plain_ids)));
  unmasked.set_weights(model.get_weights());
  EXPECT_NE(unmasked.predict_on_batch({padded}).to_vector<float>(), want) << "the padding must matter unmasked";
}
