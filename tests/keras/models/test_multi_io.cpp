// Training with several outputs, per-output losses and weights, sample and class weights.
#include <gtest/gtest.h>

#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {
// One input, two heads: a regression head and a 3-class head.
std::shared_ptr<Model> two_headed() {
  auto in = L::Input({4});
  auto h = L::Dense({.units = 8, .activation = "tanh", .name = "trunk"})(in);
  auto reg = L::Dense({.units = 1, .name = "value"})(h);
  auto cls = L::Dense({.units = 3, .activation = "softmax", .name = "label"})(h);
  return std::make_shared<Model>(std::vector<KerasTensor>{in}, std::vector<KerasTensor>{reg, cls});
}
}  // namespace

TEST(MultiOutput, LossIsTheWeightedSumOfPerOutputLosses) {
  set_random_seed(2);
  auto model = two_headed();
  model->compile({.optimizer = "sgd",
                  .losses = {"mse", "sparse_categorical_crossentropy"},
                  .loss_weights = {0.5, 2.0},
                  .output_metrics = {{"mae"}, {"accuracy"}}});
  Tensor x = random::normal({6, 4}, 0, 1, uint64_t{1});
  Tensor y_reg = random::normal({6, 1}, 0, 1, uint64_t{2});
  Tensor y_cls = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  Logs logs = model->test_on_batch({x}, {y_reg, y_cls});
  TensorList pred = model->predict_on_batch(TensorList{x});
  double mse = (*losses::get("mse"))(y_reg, pred[0]).item();
  double ce = (*losses::get("sparse_categorical_crossentropy"))(y_cls, pred[1]).item();
  EXPECT_NEAR(logs.at("value_loss"), mse, 1e-6);
  EXPECT_NEAR(logs.at("label_loss"), ce, 1e-6);
  EXPECT_NEAR(logs.at("loss"), 0.5 * mse + 2.0 * ce, 1e-5);
  EXPECT_TRUE(logs.has("value_mae"));
  EXPECT_TRUE(logs.has("label_accuracy"));
}

TEST(MultiOutput, FitTrainsBothHeads) {
  set_random_seed(4);
  auto model = two_headed();
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}),
                  .losses = {"mse", "sparse_categorical_crossentropy"},
                  .metrics = {"accuracy"}});
  Tensor x = random::normal({256, 4}, 0, 1, uint64_t{5});
  auto xv = x.to_vector<float>();
  std::vector<float> yr(256);
  std::vector<int64_t> yc(256);
  for (size_t i = 0; i < 256; ++i) {
    yr[i] = xv[4 * i] - xv[4 * i + 1];
    yc[i] = xv[4 * i + 2] > 0.5 ? 2 : (xv[4 * i + 2] < -0.5 ? 0 : 1);
  }
  Tensor y_reg = Tensor::from_vector(yr, {256, 1}), y_cls = Tensor::from_vector(yc);
  History h = model->fit({x}, {y_reg, y_cls}, {.batch_size = 32, .epochs = 30, .verbose = 0});
  EXPECT_LT(h["value_loss"].back(), 0.2 * h["value_loss"].front());
  EXPECT_GT(h["label_accuracy"].back(), 0.85);
  TensorList p = model->predict(TensorList{x}, {.batch_size = 100});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].shape(), (Shape{256, 1}));
  EXPECT_EQ(p[1].shape(), (Shape{256, 3}));
}

TEST(MultiOutput, CompileChecksCounts) {
  auto model = two_headed();
  EXPECT_THROW(model->compile({.losses = {"mse"}}), ValueError);
  EXPECT_THROW(model->compile({.loss = "mse", .loss_weights = {1.0}}), ValueError);
  model->compile({.loss = "mse"});
  EXPECT_THROW(model->test_on_batch({Tensor::ones({2, 4})}, {Tensor::ones({2, 1})}), ValueError);
}

TEST(SampleWeights, WeightTheLossAsKerasDoes) {
  set_random_seed(8);
  Sequential model({L::Input({2}), L::Dense({.units = 1})});
  model.compile({.optimizer = "sgd", .loss = "mse", .weighted_metrics = {"mae"}});
  Tensor x = random::normal({4, 2}, 0, 1, uint64_t{3});
  Tensor y = Tensor::zeros({4, 1});
  std::vector<float> w = {1, 0, 2, 1};
  Logs logs = model.test_on_batch({x}, {y}, Tensor::from_vector(w));
  auto p = model.predict_on_batch(x).to_vector<float>();
  double num = 0, abs_num = 0;
  for (size_t i = 0; i < 4; ++i) num += w[i] * p[i] * p[i], abs_num += w[i] * std::abs(p[i]);
  // Keras: the loss divides by the number of samples, the weighted metric by the sum of weights.
  EXPECT_NEAR(logs.at("loss"), num / 4, 1e-6);
  EXPECT_NEAR(logs.at("mae"), abs_num / 4, 1e-6);
}

TEST(SampleWeights, ClassWeightMultipliesIntoTheLoss) {
  set_random_seed(9);
  auto make = [] {
    set_random_seed(9);
    auto m = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
        L::Input({2}), L::Dense({.units = 2, .activation = "softmax"})});
    m->compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
    return m;
  };
  Tensor x = random::normal({8, 2}, 0, 1, uint64_t{3});
  Tensor y = Tensor::from_vector(std::vector<int64_t>{0, 1, 0, 1, 0, 1, 0, 1});
  std::vector<float> w = {1, 3, 1, 3, 1, 3, 1, 3};
  auto a = make(), b = make();
  History ha = a->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false,
                             .class_weight = {{0, 1.0}, {1, 3.0}}});
  History hb = b->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .shuffle = false,
                             .sample_weight = Tensor::from_vector(w)});
  EXPECT_DOUBLE_EQ(ha["loss"][0], hb["loss"][0]);
  EXPECT_EQ(a->get_weights()[0].to_vector<float>(), b->get_weights()[0].to_vector<float>());
  // Keras refuses both at once.
  EXPECT_THROW(a->fit(x, y, {.verbose = 0, .sample_weight = Tensor::from_vector(w), .class_weight = {{0, 1.0}}}),
               ValueError);
}
