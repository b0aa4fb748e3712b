// Nested models, subclassed models, freezing and re-compiling (issue: functional API).
#include <gtest/gtest.h>

#include <sstream>

#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {
std::shared_ptr<Model> block(const std::string& name, int64_t in, int64_t units) {
  auto x = L::Input({in});
  auto y = L::Dense({.units = units, .activation = "relu"})(x);
  return std::make_shared<Model>(x, y, name);
}

// A user model overriding call(): a residual MLP.
class ResidualMlp : public Model {
 public:
  ResidualMlp() : Model("residual_mlp") {
    hidden_ = track(L::Dense({.units = 4, .activation = "tanh"}));
    out_ = track(L::Dense({.units = 1}));
  }
  TensorList call(const TensorList& inputs, const CallContext&) override {
    Tensor h = hidden_(inputs[0]);
    return {out_(h + inputs[0])};
  }

 private:
  L::Dense hidden_{{.units = 1}}, out_{{.units = 1}};
};
}  // namespace

TEST(Nested, TwoDepthsHaveHierarchicalPaths) {
  auto inner = block("inner", 3, 3);
  auto x = L::Input({3});
  auto middle_out = (*inner)(x);
  auto middle = std::make_shared<Model>(x, L::Dense({.units = 2})(middle_out), "middle");
  auto x2 = L::Input({3});
  auto outer = std::make_shared<Model>(x2, L::Dense({.units = 1, .name = "head"})((*middle)(x2)), "outer");
  std::vector<std::string> paths;
  for (auto& v : outer->weights()) paths.push_back(v.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"middle/inner/dense/kernel", "middle/inner/dense/bias",
                                             "middle/dense/kernel", "middle/dense/bias", "head/kernel", "head/bias"}));
  EXPECT_EQ(outer->get_layer("middle"), middle);
  Tensor out = (*outer)(Tensor::ones({2, 3}));
  EXPECT_EQ(out.shape(), (Shape{2, 1}));
  EXPECT_EQ(outer->count_params(), 12 + 8 + 3);
}

TEST(Nested, FreezingIsRecursiveAndSummaryCountsIt) {
  auto inner = block("backbone", 3, 4);
  auto x = L::Input({3});
  auto outer = std::make_shared<Model>(x, L::Dense({.units = 2})((*inner)(x)), "classifier");
  inner->set_trainable(false);
  EXPECT_EQ(outer->trainable_weights().size(), 2u);
  EXPECT_EQ(outer->non_trainable_weights().size(), 2u);
  for (auto& v : inner->weights()) EXPECT_FALSE(v.trainable());
  std::ostringstream os;
  outer->summary(os);
  EXPECT_NE(os.str().find("backbone (Functional)"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("Trainable params: 10"), std::string::npos) << os.str();
  EXPECT_NE(os.str().find("Non-trainable params: 16"), std::string::npos) << os.str();

  // Frozen backbone stays bit-identical through fit; unfreeze + re-compile trains it.
  auto opt = optimizers::Adam({.learning_rate = 0.01});
  outer->compile({.optimizer = opt, .loss = "sparse_categorical_crossentropy"});
  Tensor xs = random::normal({32, 3}, 0, 1, uint64_t{1});
  Tensor ys = Tensor::from_vector(std::vector<int64_t>(32, 1));
  TensorList before = inner->get_weights();
  outer->fit(xs, ys, {.batch_size = 8, .epochs = 2, .verbose = 0});
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_EQ(before[i].to_vector<float>(), inner->get_weights()[i].to_vector<float>());
  inner->set_trainable(true);
  outer->compile({.optimizer = opt, .loss = "sparse_categorical_crossentropy"});
  outer->fit(xs, ys, {.batch_size = 8, .epochs = 1, .verbose = 0});
  EXPECT_NE(before[0].to_vector<float>(), inner->get_weights()[0].to_vector<float>());
}

TEST(Nested, ExplicitTrainingArgumentReachesInnerLayers) {
  auto x = L::Input({4});
  auto d = L::Dropout({.rate = 0.5})(x);
  auto inner = std::make_shared<Model>(x, d, "drop");
  Tensor ones = Tensor::ones({2, 4});
  // Inference by default: identity.
  EXPECT_EQ((*inner)(ones).to_vector<float>(), ones.to_vector<float>());
  // training=true reaches the Dropout inside: some zeros and 2s.
  auto v = (*inner)(ones, {.training = true}).to_vector<float>();
  for (float e : v) EXPECT_TRUE(e == 0.0f || e == 2.0f);
}

TEST(Subclassed, TrainsWithGradientsFromTheTape) {
  set_random_seed(3);
  auto model = std::make_shared<ResidualMlp>();
  Tensor x = random::normal({64, 4}, 0, 1, uint64_t{2});
  auto xv = x.to_vector<float>();
  std::vector<float> yv(64);
  for (size_t i = 0; i < 64; ++i) yv[i] = xv[4 * i] + 0.5f * xv[4 * i + 3];
  Tensor y = Tensor::from_vector(yv, {64, 1});
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.05}), .loss = "mse"});
  History h = model->fit(x, y, {.batch_size = 16, .epochs = 40, .verbose = 0});
  EXPECT_LT(h["loss"].back(), 0.05 * h["loss"].front());
  std::vector<std::string> paths;
  for (auto& v : model->weights()) paths.push_back(v.path());
  EXPECT_EQ(paths, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}));
  EXPECT_EQ(model->layers().size(), 2u);
}
