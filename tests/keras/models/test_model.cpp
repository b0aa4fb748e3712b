// Sequential / functional models: graph, names, training, determinism, errors.
#include <gtest/gtest.h>

#include <sstream>

#include "backend/cpu/dnnl_context.h"
#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {
// y = 1 when x0 + x1 > 0: a small, learnable two-class problem.
std::pair<Tensor, Tensor> toy_data(int64_t n, uint64_t seed) {
  Tensor x = random::normal({n, 2}, 0, 1, seed);
  std::vector<int64_t> y(static_cast<size_t>(n));
  auto xv = x.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0;
  return {x, Tensor::from_vector(y)};
}

std::shared_ptr<Sequential> mlp() {
  return std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 16, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
}
}  // namespace

TEST(Sequential, NamesAndPathsAreDeterministic) {
  auto a = mlp(), b = mlp();
  ASSERT_EQ(a->layers().size(), 2u);
  EXPECT_EQ(a->layers()[0]->name(), "dense");
  EXPECT_EQ(a->layers()[1]->name(), "dense_1");
  std::vector<std::string> pa, pb;
  for (auto& v : a->weights()) pa.push_back(v.path());
  for (auto& v : b->weights()) pb.push_back(v.path());
  EXPECT_EQ(pa, pb);
  EXPECT_EQ(pa, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel", "dense_1/bias"}));
  EXPECT_EQ(a->get_layer("dense_1"), a->layers()[1]);
  EXPECT_THROW(a->get_layer("nope"), ValueError);
}

TEST(Sequential, BuildsFromFirstDataAndSummary) {
  Sequential model({L::Dense({.units = 3}), L::Dense({.units = 1})});
  Tensor y = model(Tensor::ones({4, 5}));
  EXPECT_EQ(y.shape(), (Shape{4, 1}));
  EXPECT_EQ(model.count_params(), 5 * 3 + 3 + 3 + 1);
  std::ostringstream os;
  model.summary(os);
  EXPECT_NE(os.str().find("dense (Dense)"), std::string::npos);
  EXPECT_NE(os.str().find("(None, 3)"), std::string::npos);
  EXPECT_NE(os.str().find("Trainable params: 22"), std::string::npos);
  EXPECT_NE(os.str().find("Non-trainable params: 0"), std::string::npos);
}

TEST(Sequential, AddAndPop) {
  Sequential model({L::Input({4}), L::Dense({.units = 3})});
  model.add(L::Dense({.units = 2}));
  EXPECT_EQ(model.outputs()[0].shape, (Shape{-1, 2}));
  model.pop();
  EXPECT_EQ(model.outputs()[0].shape, (Shape{-1, 3}));
  EXPECT_THROW(model.add(L::Input({3})), ValueError);
}

TEST(Functional, GraphRunsInTopologicalOrder) {
  auto in = L::Input({3});
  auto h = L::Dense({.units = 4, .activation = "tanh"})(in);
  auto out = L::Dense({.units = 2})(h);
  Model model(in, out);
  EXPECT_EQ(model.layers().size(), 3u);
  EXPECT_EQ(model.layers()[0]->class_name(), "InputLayer");
  Tensor y = model(Tensor::ones({5, 3}));
  EXPECT_EQ(y.shape(), (Shape{5, 2}));
  Tensor p = model.predict(Tensor::ones({70, 3}), {.batch_size = 32});
  EXPECT_EQ(p.shape(), (Shape{70, 2}));
  EXPECT_EQ(p.slice_batch(0, 5).contiguous().to_vector<float>(), y.to_vector<float>());
}

TEST(Training, ConvergesOnASmallProblem) {
  set_random_seed(1);
  auto [x, y] = toy_data(512, 3);
  auto model = mlp();
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}),
                  .loss = "sparse_categorical_crossentropy",
                  .metrics = {"accuracy"}});
  History h = model->fit(x, y, {.batch_size = 32, .epochs = 20, .verbose = 0, .validation_split = 0.2});
  ASSERT_EQ(h["loss"].size(), 20u);
  EXPECT_LT(h["loss"].back(), h["loss"].front());
  EXPECT_GT(h["accuracy"].back(), 0.95);
  EXPECT_GT(h["val_accuracy"].back(), 0.9);
  Logs logs = model->evaluate(x, y, {.verbose = 0});
  EXPECT_GT(logs.at("accuracy"), 0.95);
}

TEST(Training, SameSeedGivesBitIdenticalWeights) {
  auto run = [] {
    set_random_seed(7);
    auto [x, y] = toy_data(256, 5);
    auto model = mlp();
    model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
    model->fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0});
    std::vector<float> flat;
    for (auto& w : model->get_weights())
      for (float v : w.to_vector<float>()) flat.push_back(v);
    return flat;
  };
  EXPECT_EQ(run(), run());
}

TEST(Training, SecondStepCreatesNoPrimitive) {
  auto [x, y] = toy_data(64, 2);
  auto model = mlp();
  model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  model->train_on_batch(x, y);
  auto before = cpu_primitive_cache_stats();
  model->train_on_batch(x, y);
  auto after = cpu_primitive_cache_stats();
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_GT(after.hits, before.hits);
}

TEST(Training, GradientTapeCustomLoop) {
  set_random_seed(3);
  auto [x, y] = toy_data(128, 9);
  auto model = mlp();
  auto loss_fn = losses::get("sparse_categorical_crossentropy");
  auto opt = optimizers::Adam({.learning_rate = 0.01});
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    auto vars = model->trainable_weights();
    TensorList sources;
    for (auto& v : vars) sources.push_back(v.value());
    GradientTape tape;
    Tensor loss = (*loss_fn)(y, (*model)(x, {.training = true}));
    TensorList grads = tape.gradient(loss, sources);
    opt->apply(grads, vars);
    (step == 0 ? first : last) = loss.item();
  }
  EXPECT_LT(last, first * 0.5);
}

TEST(Errors, BadInputGetsClearErrors) {
  auto [x, y] = toy_data(10, 1);
  auto model = mlp();
  // fit before compile
  try {
    model->fit(x, y, {.verbose = 0});
    FAIL();
  } catch (const StateError& e) {
    EXPECT_NE(std::string(e.what()).find("compile"), std::string::npos);
  }
  model->compile({.optimizer = "sgd", .loss = "sparse_categorical_crossentropy"});
  // x and y of different lengths
  EXPECT_THROW(model->fit(x, y.slice_batch(0, 9), {.verbose = 0}), ValueError);
  // batch_size 0
  EXPECT_THROW(model->fit(x, y, {.batch_size = 0, .verbose = 0}), ValueError);
  // empty dataset
  EXPECT_THROW(model->fit(x.slice_batch(0, 0), y.slice_batch(0, 0), {.verbose = 0}), ValueError);
  // input shape that does not fit the first layer: names the layer and both shapes
  try {
    model->fit(Tensor::ones({10, 3}), y, {.verbose = 0});
    FAIL();
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("dense"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(None, 2)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(10, 3)"), std::string::npos) << msg;
  }
  // a label out of range for the loss
  Tensor bad = Tensor::full({10}, 5, DType::int64);
  EXPECT_THROW(model->fit(x, bad, {.verbose = 0}), IndexError);
  // the model's weights survived the failed calls and still train
  EXPECT_NO_THROW(model->fit(x, y, {.verbose = 0}));
}

TEST(Errors, SequentialWithoutInputNamesFirstLayer) {
  Sequential model({L::Dense({.units = 3}), L::Dense({.units = 1})});
  model(Tensor::ones({2, 5}));
  try {
    model(Tensor::ones({2, 7}));
    FAIL();
  } catch (const ShapeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("dense"), std::string::npos) << msg;
    EXPECT_NE(msg.find("7"), std::string::npos) << msg;
  }
}

TEST(Training, RegularizersAreAddedToTheLoss) {
  auto make = [](bool regularized) {
    set_random_seed(11);
    L::DenseOptions o{.units = 2};
    if (regularized) o.kernel_regularizer = "l2";
    auto model = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{L::Input({3}), L::Dense(o)});
    model->compile({.optimizer = "sgd", .loss = "mse"});
    return model;
  };
  auto plain = make(false), reg = make(true);
  Tensor x = random::normal({8, 3}, 0, 1, uint64_t{4}), y = Tensor::zeros({8, 2});
  double expected_penalty = 0;
  for (float w : reg->weights()[0].value().to_vector<float>()) expected_penalty += 0.01 * w * w;
  double plain_loss = plain->test_on_batch(x, y).at("loss");
  double reg_loss = reg->test_on_batch(x, y).at("loss");
  EXPECT_NEAR(reg_loss - plain_loss, expected_penalty, 1e-5);
}

TEST(Training, FrozenLayerStaysBitIdenticalThroughFit) {
  set_random_seed(5);
  auto [x, y] = toy_data(64, 4);
  auto model = mlp();
  auto first = model->layers()[0];
  first->set_trainable(false);
  EXPECT_EQ(model->trainable_weights().size(), 2u);
  EXPECT_EQ(model->non_trainable_weights().size(), 2u);
  TensorList before = first->get_weights();
  TensorList head_before = model->layers()[1]->get_weights();
  model->compile({.optimizer = "adam", .loss = "sparse_categorical_crossentropy"});
  model->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0});
  TensorList after = first->get_weights();
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].to_vector<float>(), after[i].to_vector<float>());
  EXPECT_NE(head_before[0].to_vector<float>(), model->layers()[1]->get_weights()[0].to_vector<float>());
  std::ostringstream os;
  model->summary(os);
  EXPECT_NE(os.str().find("Non-trainable params: 48"), std::string::npos) << os.str();
}
