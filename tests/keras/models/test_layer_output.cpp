// layer->output() / input() / get_outputs_at(): feature extraction from inside a model, as
// Keras's layer.output (keras.Model(base.input, base.get_layer(name).output)).
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "tests/support/expect_error.h"

using namespace keras;
using keras::testing::expect_error;
namespace L = keras::layers;

namespace {
std::shared_ptr<Model> backbone() {
  auto in = L::Input({4}, {.name = "in"});
  auto x = L::Dense({.units = 6, .activation = "relu", .name = "block_1"})(in);
  x = L::Dense({.units = 5, .activation = "relu", .name = "block_2"})(x);
  return std::make_shared<Model>(in, L::Dense({.units = 2, .name = "head"})(x), "base");
}
}  // namespace

TEST(LayerOutput, AnEncoderCutFromAModelComputesItsIntermediateTensor) {
  auto base = backbone();
  Model encoder(base->input(), base->get_layer("block_2")->output(), "encoder");
  ASSERT_EQ(encoder.layers().size(), 3u);
  auto x = random::normal({3, 4}, 0, 1, uint64_t{1});
  // The same weights: block_2's output by hand.
  auto h = (*base->get_layer("block_2"))((*base->get_layer("block_1"))(x));
  auto got = encoder.predict(x);
  ASSERT_EQ(got.shape(), h.shape());
  for (int64_t i = 0; i < got.numel(); ++i) EXPECT_FLOAT_EQ(got.data<float>()[i], h.data<float>()[i]);
  EXPECT_EQ(base->get_layer("block_2")->input().layer, base->get_layer("block_1"));
}

TEST(LayerOutput, WorksOnAModelRebuiltFromAConfig) {
  auto loaded = model_from_json(backbone()->to_json());
  Model encoder(loaded->input(), loaded->get_layer("block_1")->output());
  EXPECT_EQ(encoder.outputs()[0].shape, (Shape{-1, 6}));
}

TEST(LayerOutput, SharedLayersNameTheirCalls) {
  auto a = L::Input({3}, {.name = "a"});
  auto b = L::Input({3}, {.name = "b"});
  auto shared = L::Dense({.units = 3, .name = "shared"});
  auto ya = shared(a);
  auto yb = shared(b);
  EXPECT_EQ(shared->get_outputs_at(1)[0].node, yb.node);
  EXPECT_EQ(shared->get_inputs_at(1)[0].layer, b.layer);
  EXPECT_EQ(shared->output().node, ya.node);  // the first call, as Keras
  expect_error<ValueError>([&] { shared->get_outputs_at(2); }, {"Layer 'shared' (Dense) call 2", "[0, 1]"});
}

TEST(LayerOutput, ALayerNeverCalledSymbolicallyIsAValueError) {
  auto d = L::Dense({.units = 1, .name = "lonely"});
  expect_error<ValueError>([&] { d->output(); }, {"Layer 'lonely' (Dense) call -1", "no such call"});
  auto p = L::Input({1}, {.name = "p"});
  auto q = L::Input({1}, {.name = "q"});
  Model two({p, q}, {L::Add()({p, q})}, "two");
  expect_error<ValueError>([&] { two.input(); }, {"Model 'two' input: expected one input, got 2", "inputs()"});
}
