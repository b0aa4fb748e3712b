// fit / evaluate / predict fed by a data::Dataset pipeline; no thread outlives the call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <stdexcept>
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

Element identity(const Element& e) { return e; }

// Steps of each epoch, from on_train_batch_end; throws CallbackFailure after `throw_after` steps.
struct CallbackFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
class StepCounter : public Callback {
 public:
  explicit StepCounter(int throw_after = -1) : throw_after_(throw_after) {}
  std::vector<int> steps;
  void on_epoch_begin(int, const Logs&) override { steps.push_back(0); }
  void on_train_batch_end(int, const Logs&) override {
    ++steps.back();
    if (++total_ == throw_after_) throw CallbackFailure("callback failed at step " + std::to_string(total_));
  }

 private:
  int throw_after_;
  int total_ = 0;
};
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

TEST(DatasetFit, StepsPerEpochOverAnInfiniteDatasetAndThreadsJoined) {
  auto [x, y] = toy(64);
  auto m = model();
  m->evaluate(x, y, {.verbose = 0});  // starts the OpenMP pool, which lives on by design
  const int baseline = thread_count();
  // 4 batches a pass; 5 steps an epoch cross a pass boundary of the repeat.
  auto ds = Dataset::from_tensor_slices({x, y}).map(identity, 2).batch(16).prefetch(2).repeat();
  auto counter = std::make_shared<StepCounter>();
  History h = m->fit(ds, {.epochs = 2, .verbose = 0, .callbacks = {counter}, .steps_per_epoch = 5});
  EXPECT_EQ(counter->steps, (std::vector<int>{5, 5}));
  EXPECT_EQ(h["loss"].size(), 2u);
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
  // 0 is a slip, not "all batches" (as for tensor input).
  EXPECT_THROW(m->fit(Dataset::from_tensor_slices({x, y}).batch(16), {.verbose = 0, .steps_per_epoch = 0}), ValueError);
}

TEST(DatasetFit, StepsPerEpochOverTensorsTakesTheFirstBatchesOfEachEpoch) {
  auto [x, y] = toy(64);  // 8 batches of 8
  auto m = model();
  auto counter = std::make_shared<StepCounter>();
  m->fit(x, y, {.batch_size = 8, .epochs = 2, .verbose = 0, .callbacks = {counter}, .steps_per_epoch = 3});
  EXPECT_EQ(counter->steps, (std::vector<int>{3, 3}));
  auto all = std::make_shared<StepCounter>();
  m->fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0, .callbacks = {all}, .steps_per_epoch = 20});
  EXPECT_EQ(all->steps, (std::vector<int>{8}));
  EXPECT_THROW(m->fit(x, y, {.batch_size = 8, .verbose = 0, .steps_per_epoch = 0}), ValueError);
}

TEST(DatasetFit, CallbackErrorMidEpochReachesTheCallerAndThreadsEnd) {
  auto [x, y] = toy(128);
  auto m = model();
  m->evaluate(x, y, {.verbose = 0});
  const int baseline = thread_count();
  // The error comes while map workers and the prefetch thread are busy running ahead.
  auto ds = Dataset::from_tensor_slices({x, y}).map(identity, 4).batch(8).prefetch(4);
  auto counter = std::make_shared<StepCounter>(/*throw_after=*/3);
  try {
    m->fit(ds, {.epochs = 2, .verbose = 0, .callbacks = {counter}});
    FAIL() << "no CallbackFailure";
  } catch (const CallbackFailure& err) {
    EXPECT_STREQ(err.what(), "callback failed at step 3");
  }
  EXPECT_EQ(counter->steps, (std::vector<int>{3}));
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
}

TEST(DatasetFit, LossErrorInALaterBatchReachesTheCallerAndThreadsEnd) {
  auto [x, y] = toy(128);
  auto m = model();
  m->evaluate(x, y, {.verbose = 0});
  const int baseline = thread_count();
  // Batch 3 (0-based) carries 5 labels for 8 samples; the loss rejects it with a ShapeError.
  auto batches = std::make_shared<std::atomic<int>>(0);
  auto ds = Dataset::from_tensor_slices({x, y})
                .map(identity, 4)
                .batch(8)
                .map([batches](const Element& e) {
                  if ((*batches)++ != 3) return e;
                  return Element{e[0], Tensor::from_vector<int64_t>({0, 1, 0, 1, 0})};
                })
                .prefetch(2);
  auto counter = std::make_shared<StepCounter>();
  try {
    m->fit(ds, {.epochs = 2, .verbose = 0, .callbacks = {counter}});
    FAIL() << "no ShapeError";
  } catch (const ShapeError& err) {
    EXPECT_NE(std::string(err.what()).find("got y_true (5,)"), std::string::npos) << err.what();
  }
  EXPECT_EQ(counter->steps, (std::vector<int>{3}));
  EXPECT_TRUE(back_to(baseline)) << thread_count() << " threads, " << baseline << " before";
}

TEST(DatasetFit, DatasetTrainingValidatesOnTensors) {
  set_random_seed(9);
  auto [x, y] = toy(96);
  auto [xv, yv] = toy(40);
  auto m = model();
  History h = m->fit(Dataset::from_tensor_slices({x, y}).batch(16),
                     {.batch_size = 16, .epochs = 2, .verbose = 0, .validation_data = ValidationData(xv, yv)});
  ASSERT_TRUE(h.history().count("val_loss")) << "validation_data ignored";
  ASSERT_EQ(h["val_loss"].size(), 2u);
  // The last epoch's figures are evaluate() on the same tensors (the weights have not moved since).
  EXPECT_NEAR(h["val_loss"].back(), m->evaluate(xv, yv, {.batch_size = 16, .verbose = 0}).at("loss"), 1e-6);
  EXPECT_NEAR(h["val_accuracy"].back(), m->evaluate(xv, yv, {.verbose = 0}).at("accuracy"), 1e-9);
}

TEST(DatasetFit, TensorTrainingValidatesOnADataset) {
  set_random_seed(9);
  auto [x, y] = toy(96);
  auto [xv, yv] = toy(40);
  auto val_ds = Dataset::from_tensor_slices({xv, yv}).batch(16);
  auto m = model();
  History h = m->fit(x, y, {.epochs = 2, .verbose = 0, .validation_dataset = val_ds});
  ASSERT_TRUE(h.history().count("val_loss")) << "validation_dataset ignored";
  ASSERT_EQ(h["val_loss"].size(), 2u);
  EXPECT_NEAR(h["val_loss"].back(), m->evaluate(val_ds, {.verbose = 0}).at("loss"), 1e-6);
  // It replaces validation_split as validation_data does: all 96 samples train (6 steps of 16).
  auto counter = std::make_shared<StepCounter>();
  m->fit(x, y, {.batch_size = 16, .verbose = 0, .callbacks = {counter}, .validation_split = 0.25,
                .validation_dataset = val_ds});
  EXPECT_EQ(counter->steps, (std::vector<int>{6}));
}

TEST(DatasetFit, BothValidationSetsAreAValueError) {
  auto [x, y] = toy(32);
  auto m = model();
  FitOptions both{.verbose = 0, .validation_data = ValidationData(x, y),
                  .validation_dataset = Dataset::from_tensor_slices({x, y}).batch(8)};
  for (bool dataset : {true, false}) {
    try {
      if (dataset) m->fit(Dataset::from_tensor_slices({x, y}).batch(8), both);
      else m->fit(x, y, both);
      ADD_FAILURE() << "no ValueError";
    } catch (const ValueError& err) {
      EXPECT_NE(std::string(err.what()).find("fit: expected validation_data or validation_dataset, got both."),
                std::string::npos) << err.what();
    }
  }
}

// ---- validation_steps (fit), steps (evaluate, predict) ----

namespace {
// Batches of each validation or evaluate run, from the test hooks.
class TestBatchCounter : public Callback {
 public:
  std::vector<int> runs;
  void on_test_begin(const Logs&) override { runs.push_back(0); }
  void on_test_batch_end(int, const Logs&) override { ++runs.back(); }
};

// x[0, 0] of every batch that reaches the model, in order (a sequential map runs lazily).
std::function<Element(const Element&)> record_first(std::shared_ptr<std::vector<float>> seen) {
  return [seen](const Element& e) {
    seen->push_back(e[0].to_vector<float>()[0]);
    return e;
  };
}

void expect_value_error(const std::function<void()>& call, const std::string& where, const std::string& hint) {
  try {
    call();
    ADD_FAILURE() << "no ValueError for " << where;
  } catch (const ValueError& err) {
    std::string what = err.what();
    EXPECT_NE(what.find(where), std::string::npos) << what;
    EXPECT_NE(what.find(hint), std::string::npos) << what;
  }
}
}  // namespace

TEST(DatasetFit, ValidationStepsTakeAFreshPassOfAnInfiniteDatasetEachEpoch) {
  set_random_seed(3);
  auto [x, y] = toy(64);
  auto [xv, yv] = toy(40);  // 5 batches of 8
  auto m = model();
  auto seen = std::make_shared<std::vector<float>>();
  auto val = Dataset::from_tensor_slices({xv, yv}).batch(8).map(record_first(seen)).repeat();
  auto counter = std::make_shared<TestBatchCounter>();
  History h = m->fit(Dataset::from_tensor_slices({x, y}).batch(16),
                     {.epochs = 2, .verbose = 0, .callbacks = {counter}, .validation_dataset = val,
                      .validation_steps = 3});
  EXPECT_EQ(counter->runs, (std::vector<int>{3, 3}));
  // Both epochs see batches 0, 1, 2: a new pass each time, not the continuation 3, 4, 0.
  auto v = xv.to_vector<float>();
  std::vector<float> first_three{v[0], v[16], v[32]};
  std::vector<float> expected = first_three;
  expected.insert(expected.end(), first_three.begin(), first_three.end());
  EXPECT_EQ(*seen, expected);
  // The last epoch's val_loss is evaluate() over those 3 batches (the weights have not moved since).
  EXPECT_NEAR(h["val_loss"].back(), m->evaluate(xv.slice_batch(0, 24), yv.slice_batch(0, 24),
                                                {.batch_size = 8, .verbose = 0}).at("loss"), 1e-6);
  // A finite validation set shorter than validation_steps: each epoch stops at its end.
  counter->runs.clear();
  m->fit(Dataset::from_tensor_slices({x, y}).batch(16),
         {.epochs = 2, .verbose = 0, .callbacks = {counter},
          .validation_dataset = Dataset::from_tensor_slices({xv, yv}).batch(8), .validation_steps = 7});
  EXPECT_EQ(counter->runs, (std::vector<int>{5, 5}));
  // Tensor validation data honours it too: the first 2 batches of batch_size.
  counter->runs.clear();
  m->fit(x, y, {.batch_size = 8, .verbose = 0, .callbacks = {counter}, .validation_data = ValidationData(xv, yv),
                .validation_steps = 2});
  EXPECT_EQ(counter->runs, (std::vector<int>{2}));
}

TEST(DatasetFit, EvaluateAndPredictTakeStepsBatchesOfARepeat) {
  set_random_seed(4);
  auto [x, y] = toy(40);  // 5 batches of 8
  auto m = model();
  auto ds = Dataset::from_tensor_slices({x, y}).batch(8).repeat();
  // evaluate: the loss over the first 3 batches, computed directly from predict and the loss.
  Logs logs = m->evaluate(ds, {.verbose = 0, .steps = 3});
  Tensor probs = m->predict(x.slice_batch(0, 24));
  auto p = probs.to_vector<float>();
  auto labels = y.to_vector<int64_t>();
  double loss = 0;
  for (size_t i = 0; i < 24; ++i) loss -= std::log(static_cast<double>(p[2 * i + static_cast<size_t>(labels[i])]));
  EXPECT_NEAR(logs.at("loss"), loss / 24, 1e-5);
  // Tensors honour steps the same way.
  EXPECT_NEAR(m->evaluate(x, y, {.batch_size = 8, .verbose = 0, .steps = 3}).at("loss"), logs.at("loss"), 1e-6);
  // predict: exactly steps * batch rows, here crossing the repeat's pass boundary (7 > 5 batches).
  Tensor out = m->predict(Dataset::from_tensor_slices({x}).batch(8).repeat(), {.steps = 7});
  ASSERT_EQ(out.shape(), (Shape{56, 2}));
  auto all = m->predict(x).to_vector<float>();
  auto got = out.to_vector<float>();
  EXPECT_EQ(std::vector<float>(got.begin(), got.begin() + 80), all);
  EXPECT_EQ(std::vector<float>(got.begin() + 80, got.end()), std::vector<float>(all.begin(), all.begin() + 32));
  EXPECT_EQ(m->predict(x, {.batch_size = 8, .steps = 2}).shape(), (Shape{16, 2}));
  // A finite Dataset shorter than steps stops at its end.
  auto counter = std::make_shared<TestBatchCounter>();
  m->evaluate(Dataset::from_tensor_slices({x, y}).batch(8), {.verbose = 0, .callbacks = {counter}, .steps = 9});
  EXPECT_EQ(counter->runs, (std::vector<int>{5}));
}

TEST(DatasetFit, InfiniteDatasetsWithoutStepsAreValueErrorsWithAHint) {
  auto [x, y] = toy(32);
  auto m = model();
  auto inf = Dataset::from_tensor_slices({x, y}).batch(8).repeat();
  expect_value_error([&] { m->evaluate(inf, {.verbose = 0}); }, "evaluate: expected a finite dataset or steps",
                     "Pass steps, or remove repeat().");
  expect_value_error([&] { m->predict(Dataset::from_tensor_slices({x}).batch(8).repeat()); },
                     "predict: expected a finite dataset or steps", "Pass steps, or remove repeat().");
  expect_value_error([&] { m->fit(x, y, {.verbose = 0, .validation_dataset = inf}); },
                     "fit (validation): expected a finite dataset or validation_steps",
                     "Pass validation_steps, or remove repeat().");
  expect_value_error([&] { m->evaluate(inf, {.verbose = 0, .steps = 0}); }, "evaluate: expected steps >= 1", "got 0");
  expect_value_error([&] { m->predict(x, {.steps = -2}); }, "predict: expected steps >= 1", "got -2");
}
