// model.layers follows Keras's order (depth from the inputs down, ties by first traversal), which
// legacy .h5 and .weights.h5 files rely on to pair weights with layers. The expected lists were
// printed by Keras 3.15.1 and tf_keras 2.21.0 (both give the same) for the same graphs.
#include <gtest/gtest.h>

#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {
std::vector<std::string> names(const Model& m) {
  std::vector<std::string> out;
  for (const auto& l : m.layers()) out.push_back(l->name());
  return out;
}
}  // namespace

// A ResNet bottleneck block: the shortcut convolution is called before the main branch, yet Keras
// lists it after the main branch's first convolution, where its depth puts it.
TEST(LayerOrder, AResidualBlockWithASharedLayerIsOrderedAsKeras) {
  auto in = L::Input({8, 8, 4}, {.name = "in"});
  auto x = L::Conv2D({.filters = 2, .kernel_size = 1, .name = "stem"})(in);
  auto s = L::Conv2D({.filters = 8, .kernel_size = 1, .name = "b_0_conv"})(x);
  s = L::BatchNormalization({.name = "b_0_bn"})(s);
  auto y = L::Conv2D({.filters = 2, .kernel_size = 1, .name = "b_1_conv"})(x);
  y = L::BatchNormalization({.name = "b_1_bn"})(y);
  y = L::Activation({.activation = "relu", .name = "b_1_relu"})(y);
  y = L::Conv2D({.filters = 8, .kernel_size = 3, .padding = "same", .name = "b_2_conv"})(y);
  y = L::BatchNormalization({.name = "b_2_bn"})(y);
  auto z = L::Add({.name = "b_add"})({s, y});
  z = L::Activation({.activation = "relu", .name = "b_out"})(z);
  auto shared = L::Dense({.units = 8, .name = "shared"});
  auto u = shared(L::Dense({.units = 8, .name = "mid"})(shared(z)));
  Model model({in}, {u, z});
  const std::vector<std::string> keras = {"in",      "stem",     "b_1_conv", "b_1_bn", "b_1_relu", "b_0_conv", "b_2_conv",
                                          "b_0_bn",  "b_2_bn",   "b_add",    "b_out",  "shared",   "mid"};
  EXPECT_EQ(names(model), keras);
  // Rebuilt from its config, the model keeps the order, and so does its saved config.
  auto rebuilt = model_from_json(model.to_json());
  EXPECT_EQ(names(*rebuilt), keras);
}

TEST(LayerOrder, AnUnusedInputStaysInTheModel) {
  auto a = L::Input({2}, {.name = "a"});
  auto b = L::Input({2}, {.name = "b"});
  Model model({a, b}, {L::Dense({.units = 1, .name = "d"})(a)});
  EXPECT_EQ(names(model), (std::vector<std::string>{"a", "b", "d"}));  // as Keras: depth 0, traversal index -1
}
