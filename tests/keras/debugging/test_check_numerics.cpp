// Check-numerics mode (keras/debugging/check_numerics.h): a NaN made by a model's third layer is
// caught at that layer in the forward pass, an infinity made only by a gradient's division is
// caught in the backward walk, each with its whole message; off, training runs as before.
#include <gtest/gtest.h>
#include <gmock/gmock.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>

#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {

// y = log(x): NaN for negative inputs.
class Log : public Layer {
 public:
  explicit Log(std::string name) : Layer(LayerOptions{std::move(name)}) {}
  std::string class_name() const override { return "Log"; }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  TensorList call(const TensorList& in, const CallContext&) override { return {ops::log(in[0])}; }
};

// y = sqrt(x): finite at 0, but its gradient there divides by sqrt(0) = 0.
class Root : public Layer {
 public:
  explicit Root(std::string name) : Layer(LayerOptions{std::move(name)}) {}
  std::string class_name() const override { return "Root"; }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  TensorList call(const TensorList& in, const CallContext&) override { return {ops::sqrt(in[0])}; }
};

Tensor eye3(float sign) {
  std::vector<float> v(9, 0.f);
  for (int i = 0; i < 3; ++i) v[static_cast<size_t>(i * 4)] = sign;
  return Tensor::from_vector(v, {3, 3});
}

// Input(3) -> dense_a (identity) -> dense_b (negation) -> log_c, trained with learning rate 0 so
// every batch sees the same weights.
std::shared_ptr<Sequential> log_model() {
  auto m = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({3}), L::Dense({.units = 3, .name = "dense_a"}),
                                             L::Dense({.units = 3, .name = "dense_b"}), std::make_shared<Log>("log_c")},
      "net");
  m->get_layer("dense_a")->set_weights({eye3(1), Tensor::zeros({3})});
  m->get_layer("dense_b")->set_weights({eye3(-1), Tensor::zeros({3})});
  m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse"});
  return m;
}

std::shared_ptr<Sequential> root_model() {
  auto m = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({3}), L::Dense({.units = 3, .name = "dense_a"}),
                                             std::make_shared<Root>("root")},
      "net");
  m->get_layer("dense_a")->set_weights({eye3(1), Tensor::zeros({3})});
  m->compile({.optimizer = optimizers::SGD({.learning_rate = 0.0}), .loss = "mse"});
  return m;
}

// Turns checking on for one test and off again, whatever the test does.
struct Checking {
  Checking() { debugging::enable_check_numerics(); }
  ~Checking() { debugging::disable_check_numerics(); }
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const NumericsError& e) {
    return e.what();
  }
  return "(no NumericsError)";
}

// Batch 0 is finite through every layer; batch 1 turns negative after dense_b, so log_c makes NaNs.
const Tensor kLogX = Tensor::from_vector(std::vector<float>{-1, -2, -3, -0.5, -1, -4, 1, -2, 3, 0.5, 1, -1}, {4, 3});

}  // namespace

TEST(CheckNumerics, ThirdLayerNaNIsCaughtAtThatLayerInForward) {
  auto m = log_model();
  Checking on;
  const std::string msg = error_of([&] {
    m->fit(kLogX, Tensor::zeros({4, 3}), {.batch_size = 2, .epochs = 1, .verbose = 0, .shuffle = false});
  });
  EXPECT_EQ(msg,
            "check_numerics: op 'log' in layer 'net/log_c' (forward; train epoch 0, step 1): expected finite values in "
            "output 0 (float32 (2, 3)), got 4 NaN and 0 Inf among 6 values, the first at (0, 0). Inputs: #0 float32 "
            "(2, 3) min=-3 max=2 NaN=0 Inf=0. The inputs are finite, so 'log' made the first non-finite value.");
  // The loop's step ends with the loop.
  EXPECT_EQ(instrumentation::step().mode, "");
}

TEST(CheckNumerics, InfinityOnlyInBackwardIsCaughtInTheGradient) {
  auto m = root_model();
  const Tensor x = Tensor::from_vector(std::vector<float>{4, 0, 1, 9, 1, 0.25f}, {2, 3});
  // Forward alone is finite: sqrt(0) = 0.
  {
    Checking on;
    EXPECT_NO_THROW(m->predict(x, {.verbose = 0}));
  }
  Checking on;
  const std::string msg = error_of([&] { m->fit(x, Tensor::ones({2, 3}), {.batch_size = 2, .verbose = 0, .shuffle = false}); });
  EXPECT_EQ(msg,
            "check_numerics: op 'divide' in layer 'net/root' (gradient of 'sqrt'; train epoch 0, step 0): expected "
            "finite values in output 0 (float32 (2, 3)), got 0 NaN and 1 Inf among 6 values, the first at (0, 1). "
            "Inputs: #0 float32 (2, 3) min=-0.166667 max=0.333333 NaN=0 Inf=0; #1 float32 (2, 3) min=0 max=3 NaN=0 "
            "Inf=0. The inputs are finite, so 'divide' made the first non-finite value.");
}

TEST(CheckNumerics, EagerOpOnBadDataNamesTheInput) {
  Checking on;
  const Tensor x = Tensor::from_vector(std::vector<float>{1, std::nanf(""), 2}, {3});
  EXPECT_EQ(error_of([&] { ops::exp(x); }),
            "check_numerics: op 'exp' outside any layer (forward): expected finite values in output 0 (float32 (3,)), "
            "got 1 NaN and 0 Inf among 3 values, the first at (1,). Inputs: #0 float32 (3,) min=1 max=2 NaN=1 Inf=0. "
            "Input #0 already held non-finite values, which no checked op made: they came from data, a weight or a "
            "tensor made before check-numerics was enabled.");
  // Views are not checked (their values are another op's), integer ops neither.
  EXPECT_NO_THROW(x.view({3, 1}));
  EXPECT_NO_THROW(ops::argmax(x, 0));
}

TEST(CheckNumerics, AnUpdateThatOverflowsAWeightIsCaught) {
  auto m = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({1}), L::Dense({.units = 1, .name = "d"})}, "net");
  m->get_layer("d")->set_weights({Tensor::full({1, 1}, 1.0), Tensor::zeros({1})});
  m->compile({.optimizer = optimizers::SGD({.learning_rate = 1e38}), .loss = "mse"});
  Checking on;
  const std::string msg =
      error_of([&] { m->fit(Tensor::full({1, 1}, 10.0), Tensor::zeros({1, 1}), {.batch_size = 1, .verbose = 0}); });
  EXPECT_THAT(msg, ::testing::HasSubstr("(updated in place)")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("op 'sgd_update' outside any layer (update; train epoch 0, step 0)")) << msg;
}

TEST(CheckNumerics, NaNInsideAFusedReluProductIsSeen) {
  // inf - inf inside the product: oneDNN's fused relu would turn that NaN into 0, so while
  // checking, Dense runs its activation as an op of its own and the product's NaN is caught.
  auto m = std::make_shared<Sequential>(
      std::initializer_list<SequentialEntry>{L::Input({2}), L::Dense({.units = 1, .activation = "relu", .name = "d"})},
      "net");
  const float inf = std::numeric_limits<float>::infinity();
  m->get_layer("d")->set_weights({Tensor::from_vector(std::vector<float>{inf, -inf}, {2, 1}), Tensor::zeros({1})});
  Checking on;
  const std::string msg = error_of([&] { m->predict(Tensor::ones({1, 2}), {.verbose = 0}); });
  EXPECT_THAT(msg, ::testing::HasSubstr("check_numerics: op 'dense' in layer 'net/d' (forward; predict step 0)")) << msg;
  EXPECT_THAT(msg, ::testing::HasSubstr("#1 float32 (2, 1) min=-inf max=inf NaN=0 Inf=2")) << msg;
}

TEST(CheckNumerics, OffRaisesNothingAndTrainsIdentically) {
  EXPECT_FALSE(debugging::check_numerics_enabled());
  // The NaN model trains through when off (its loss is NaN), as without this mode.
  auto bad = log_model();
  History h = bad->fit(kLogX, Tensor::zeros({4, 3}), {.batch_size = 2, .verbose = 0, .shuffle = false});
  EXPECT_TRUE(std::isnan(h["loss"].back()));
  // A finite model: on and off give the same weights, bit for bit.
  auto train = [](bool check) {
    utils::set_random_seed(11);
    Sequential m({L::Input({4}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2})});
    m.compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
    Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, -1, 0.5f, 2, 0, 3, 3, -2, 1, 0, 1, 0, 1}, {4, 4});
    if (check) debugging::enable_check_numerics();
    m.fit(x, Tensor::ones({4, 2}), {.batch_size = 2, .epochs = 3, .verbose = 0});
    debugging::disable_check_numerics();
    std::vector<float> all;
    for (const auto& w : m.get_weights())
      for (float v : w.to_vector<float>()) all.push_back(v);
    return all;
  };
  EXPECT_EQ(train(false), train(true));
}

TEST(CheckNumerics, EnableIsIdempotentAndDisableStops) {
  debugging::enable_check_numerics();
  debugging::enable_check_numerics();
  EXPECT_TRUE(debugging::check_numerics_enabled());
  debugging::disable_check_numerics();
  EXPECT_FALSE(debugging::check_numerics_enabled());
  EXPECT_NO_THROW(ops::log(Tensor::full({2}, -1.0)));
}

// KERAS_CHECK_NUMERICS=1 turns the mode on when the library loads: this test binary runs itself
// with the variable set and asks the child whether it was on from its first op.
TEST(CheckNumerics, EnvironmentVariableTurnsItOnAtLoad) {
  if (std::getenv("KERAS_CHECK_NUMERICS_CHILD")) {
    EXPECT_TRUE(debugging::check_numerics_enabled());
    EXPECT_THROW(ops::log(Tensor::full({2}, -1.0)), NumericsError);
    return;
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string cmd = "KERAS_CHECK_NUMERICS=1 KERAS_CHECK_NUMERICS_CHILD=1 '" + self +
                          "' --gtest_filter=CheckNumerics.EnvironmentVariableTurnsItOnAtLoad > /dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  const std::string off = "KERAS_CHECK_NUMERICS=0 KERAS_CHECK_NUMERICS_CHILD=1 '" + self +
                          "' --gtest_filter=CheckNumerics.EnvironmentVariableTurnsItOnAtLoad > /dev/null 2>&1";
  EXPECT_NE(std::system(off.c_str()), 0);  // "0" leaves it off, so the child's expectations fail
}
