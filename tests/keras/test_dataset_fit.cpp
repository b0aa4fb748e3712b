// fit / evaluate / predict fed by a data::Dataset pipeline; no thread outlives the call.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/threads.h"
#include "keras/keras.h"

using namespace keras;
using keras::testing::back_to;
using keras::testing::thread_count;
namespace L = keras::layers;
using keras::data::Dataset;
using keras::data::Element;

namespace {
std::pair<Tensor, Tensor> toy(int64_t n) {
  Tensor x = random::normal({n, 2}, 0, 1, uint64_t{21});
  auto v = x.to_vector<float>();
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = v[2 * i] > v[2 * i + 1] ? 1 : 0;
  return {x, Tensor::from_vector(y)};
}

std::shared_ptr<Sequential> model() {
  auto m = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  m->compile({.optimizer = optimizers::Adam({.learning_rate = 0.02}), .loss = "sparse_categorical_crossentropy",
              .metrics = {"accuracy"}});
  return m;
}
}  // namespace

TEST(DatasetFit, TrainsEvaluatesPredictsAndJoinsThreads) {
  set_random_seed(5);
  auto [x, y] = toy(256);
  auto m = model();
  m->evaluate(x, y, {.verbose = 0});  // starts the OpenMP pool, which lives on by design
  int baseline = thread_count();
  auto ds = Dataset::from_tensor_slices({x, y}).shuffle(64, 1).map([](const Element& e) { return e; }, 2).batch(16).prefetch(2);
  History h = m->fit(ds, {.epochs = 15, .verbose = 0, .validation_dataset = Dataset::from_tensor_slices({x, y}).batch(64)});
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
  EXPECT_GT(h["accuracy"].back(), 0.9);
  EXPECT_GT(h["val_accuracy"].back(), 0.9);
  // evaluate on a Dataset equals evaluate on the tensors.
  Logs a = m->evaluate(Dataset::from_tensor_slices({x, y}).batch(32), {.verbose = 0});
  Logs b = m->evaluate(x, y, {.batch_size = 32, .verbose = 0});
  EXPECT_NEAR(a.at("loss"), b.at("loss"), 1e-6);
  EXPECT_NEAR(a.at("accuracy"), b.at("accuracy"), 1e-9);
  Tensor p = m->predict(Dataset::from_tensor_slices({x}).batch(50));
  EXPECT_EQ(p.to_vector<float>(), m->predict(x, {.batch_size = 50}).to_vector<float>());
  EXPECT_TRUE(back_to(baseline));
}

TEST(DatasetFit, ThreadsEndWhenTheMapFunctionThrows) {
  auto [x, y] = toy(64);
  auto warm = model();
  warm->evaluate(x, y, {.verbose = 0});  // starts the OpenMP pool, which lives on by design
  int baseline = thread_count();
  int seen = 0;
  auto ds = Dataset::from_tensor_slices({x, y})
                .map([&seen](const Element& e) {
                  if (++seen == 20) throw ValueError("map: expected a good element, got element 20.");
                  return e;
                }, 1)
                .batch(8)
                .prefetch(2);
  auto m = model();
  EXPECT_THROW(m->fit(ds, {.epochs = 2, .verbose = 0}), ValueError);
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
  // The model is still usable afterwards.
  EXPECT_NO_THROW(m->fit(x, y, {.epochs = 1, .verbose = 0}));
}

TEST(DatasetFit, ValidationSplitIsRejectedWithAHint) {
  auto [x, y] = toy(32);
  auto m = model();
  EXPECT_THROW(m->fit(Dataset::from_tensor_slices({x, y}).batch(8), {.verbose = 0, .validation_split = 0.2}),
               ValueError);
}
