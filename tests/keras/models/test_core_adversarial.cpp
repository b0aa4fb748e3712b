// Adversarial tests of the core engine: tape accumulation, graph construction, views, fit edge
// cases and state restored after exceptions. Expected values are computed by hand from the
// Keras / tf.GradientTape semantics.
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {

Tensor vec(std::vector<float> v) { return Tensor::from_vector(v); }
Tensor col(std::vector<float> v) {
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, Shape{n, 1});
}
std::vector<float> vals(const Tensor& t) { return t.contiguous().to_vector<float>(); }

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// y = x * w with a scalar weight w (shape {1}), so everything can be computed by hand.
class Scale : public Layer {
 public:
  explicit Scale(double init, std::string name = "") : Layer(LayerOptions{name}), init_(init) {}
  std::string class_name() const override { return "Scale"; }
  void build(const std::vector<Shape>&) override {
    w_ = add_weight("w", {1}, std::make_shared<initializers::Constant>(init_));
  }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return s; }
  TensorList call(const TensorList& in, const CallContext& ctx) override {
    seen_training = ctx.training;
    if (throw_in_call) {
      NoGradGuard inner;  // must be restored by unwinding
      throw std::runtime_error("boom");
    }
    return {ops::multiply(in[0], w_.value())};
  }
  double w() const { return w_.value().item(); }
  bool throw_in_call = false;
  bool seen_training = false;

 private:
  double init_;
  Variable w_;
};

// Two-input sum, for diamond graphs.
class Sum2 : public Layer {
 public:
  std::string class_name() const override { return "Sum2"; }
  std::vector<Shape> compute_output_shape(const std::vector<Shape>& s) override { return {s[0]}; }
  TensorList call(const TensorList& in, const CallContext&) override { return {ops::add(in[0], in[1])}; }
};

class Counter : public Callback {
 public:
  int train_batches = 0, test_begin = 0, test_end = 0, epochs_seen = 0;
  bool stop_after_first_batch = false;
  void on_train_batch_end(int, const Logs&) override {
    ++train_batches;
    if (stop_after_first_batch) model()->stop_training = true;
  }
  void on_test_begin(const Logs&) override { ++test_begin; }
  void on_test_end(const Logs&) override { ++test_end; }
  void on_epoch_end(int, Logs&) override { ++epochs_seen; }
};

// A one-weight model y = w * x compiled with SGD(lr) and MSE.
std::pair<std::shared_ptr<Model>, std::shared_ptr<Scale>> scale_model(double w0, double lr, int64_t dim = 1) {
  auto s = std::make_shared<Scale>(w0);
  auto in = L::Input({dim});
  auto out = (*s)(in);
  auto m = std::make_shared<Model>(in, out);
  m->compile({.optimizer = optimizers::SGD({.learning_rate = lr}), .loss = "mse"});
  return {m, s};
}

// One SGD step of y = w x with MSE on (xs, ys): w - lr * 2/n * sum((w x - y) x).
double sgd_step(double w, double lr, const std::vector<double>& xs, const std::vector<double>& ys) {
  double g = 0;
  for (size_t i = 0; i < xs.size(); ++i) g += (w * xs[i] - ys[i]) * xs[i];
  return w - lr * 2.0 / static_cast<double>(xs.size()) * g;
}
double mse(double w, const std::vector<double>& xs, const std::vector<double>& ys) {
  double s = 0;
  for (size_t i = 0; i < xs.size(); ++i) s += (w * xs[i] - ys[i]) * (w * xs[i] - ys[i]);
  return s / static_cast<double>(xs.size());
}

}  // namespace

// ---------------------------------------------------------------- tape

TEST(TapeAdversarial, SameTensorTwiceAccumulates) {
  Tensor x = vec({1, -2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::sum(ops::multiply(x, x));  // d/dx = 2x
  auto g = tape.gradient(y, {x});
  ASSERT_TRUE(g[0].defined());
  expect_near(vals(g[0]), {2, -4, 6});
}

TEST(TapeAdversarial, DiamondAndIntermediateSource) {
  Tensor x = vec({1, 2});
  GradientTape tape;
  tape.watch(x);
  Tensor a = ops::multiply(x, 2.0);                      // a = 2x
  Tensor y = ops::sum(ops::add(ops::multiply(a, a), a));  // y = a^2 + a
  auto g = tape.gradient(y, {x, a, y});
  // dy/da = 2a + 1 = {5, 9}; dy/dx = 2 (2a + 1) = {10, 18}; dy/dy = 1.
  expect_near(vals(g[0]), {10, 18});
  expect_near(vals(g[1]), {5, 9});
  expect_near(vals(g[2]), {1});
}

TEST(TapeAdversarial, NonScalarTargetIsSummed) {
  Tensor x = vec({1, 2, 3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::multiply(ops::multiply(x, x), 3.0);  // shape {3}
  auto g = tape.gradient(y, {x});
  expect_near(vals(g[0]), {6, 12, 18});
}

TEST(TapeAdversarial, SameSourceListedTwiceAndUnconnected) {
  Tensor x = vec({2});
  Tensor z = vec({5});
  GradientTape tape;
  tape.watch(x);
  tape.watch(z);
  Tensor y = ops::multiply(x, 4.0);
  auto g = tape.gradient(y, {x, z, x});
  expect_near(vals(g[0]), {4});
  EXPECT_FALSE(g[1].defined());  // tf returns None for an unconnected source
  expect_near(vals(g[2]), {4});
}

TEST(TapeAdversarial, PersistentTapeTwiceGivesSameAnswer) {
  Tensor x = vec({3});
  GradientTape tape(true);
  tape.watch(x);
  Tensor a = ops::multiply(x, x);
  Tensor y = ops::multiply(a, x);  // x^3
  auto g1 = tape.gradient(y, {x});
  auto g2 = tape.gradient(y, {x});
  auto g3 = tape.gradient(a, {x});
  expect_near(vals(g1[0]), {27});
  expect_near(vals(g2[0]), {27});
  expect_near(vals(g3[0]), {6});
}

TEST(TapeAdversarial, NonPersistentSecondCallThrows) {
  Tensor x = vec({3});
  GradientTape tape;
  tape.watch(x);
  Tensor y = ops::multiply(x, x);
  tape.gradient(y, {x});
  EXPECT_THROW(tape.gradient(y, {x}), StateError);
}

// tf.GradientTape(persistent=True) keeps recording after gradient() while its context is open.
TEST(TapeAdversarial, PersistentTapeKeepsRecordingAfterGradient) {
  Tensor x = vec({2});
  GradientTape tape(true);
  tape.watch(x);
  Tensor y = ops::multiply(x, x);
  auto g1 = tape.gradient(y, {x});
  Tensor z = ops::multiply(y, x);  // recorded in TF: dz/dx = 3x^2 = 12
  auto g2 = tape.gradient(z, {x});
  expect_near(vals(g1[0]), {4});
  ASSERT_TRUE(g2[0].defined()) << "ops after gradient() on a persistent tape were not recorded";
  expect_near(vals(g2[0]), {12});
}

// watch() is tape-local in TF: a later tape that does not watch x gives None for it.
TEST(TapeAdversarial, WatchDoesNotLeakIntoALaterTape) {
  Tensor x = vec({2});
  {
    GradientTape t1;
    t1.watch(x);
    t1.gradient(ops::multiply(x, x), {x});
  }
  GradientTape t2;
  Tensor y = ops::multiply(x, x);
  auto g = t2.gradient(y, {x});
  EXPECT_FALSE(g[0].defined()) << "t1.watch(x) leaked into t2 (requires_grad set on the impl forever)";
  EXPECT_FALSE(x.requires_grad());
}

TEST(TapeAdversarial, GradModeRestoredAfterExceptionsAndPerThread) {
  EXPECT_FALSE(grad_recording());
  {
    GradientTape tape;
    EXPECT_TRUE(grad_recording());
    try {
      NoGradGuard g;
      EXPECT_FALSE(grad_recording());
      throw std::runtime_error("x");
    } catch (const std::runtime_error&) {
    }
    EXPECT_TRUE(grad_recording());
    bool other_thread = true;
    std::thread([&] { other_thread = grad_recording(); }).join();
    EXPECT_FALSE(other_thread);
  }
  EXPECT_FALSE(grad_recording());
  // A tape whose gradient() was called, then destroyed: depth must not go negative / stay up.
  {
    GradientTape t;
    Tensor x = vec({1});
    t.watch(x);
    t.gradient(ops::multiply(x, x), {x});
    EXPECT_FALSE(grad_recording());
    t.stop_recording();
  }
  EXPECT_FALSE(grad_recording());
  { GradientTape t; }
  EXPECT_FALSE(grad_recording());
}

TEST(TapeAdversarial, FrozenVariableRecordsNothing) {
  Variable w(vec({2}), "w", /*trainable=*/false);
  Variable v(vec({3}), "v", true);
  GradientTape tape;
  Tensor y = ops::multiply(w.value(), w.value());
  EXPECT_FALSE(y.requires_grad());
  Tensor z = ops::multiply(y, v.value());
  auto g = tape.gradient(z, {w.value(), v.value()});
  EXPECT_FALSE(g[0].defined());
  expect_near(vals(g[1]), {4});
}

// ---------------------------------------------------------------- views

TEST(ViewsAdversarial, SliceOfPermuted) {
  Tensor x = Tensor::arange(0, 6).view({2, 3});  // [[0,1,2],[3,4,5]]
  Tensor p = x.permuted();                       // [[0,3],[1,4],[2,5]]
  EXPECT_FALSE(p.is_contiguous());
  Tensor s = p.slice_batch(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  expect_near(vals(s), {1, 4, 2, 5});
  expect_near(vals(p.view({6})), {0, 3, 1, 4, 2, 5});
  expect_near(vals(ops::add(s, 1.0)), {2, 5, 3, 6});
  EXPECT_DOUBLE_EQ(element_as_double(s, 3), 5);
}

TEST(ViewsAdversarial, ViewOfSliceKeepsOffsetAndWritesThrough) {
  Tensor x = Tensor::arange(0, 6).view({2, 3});
  Tensor r = x.slice_batch(1, 2).view({3});
  expect_near(vals(r), {3, 4, 5});
  Tensor row = x.slice_batch(0, 1);
  row.copy_from(Tensor::full({1, 3}, 9));
  expect_near(vals(x), {9, 9, 9, 3, 4, 5});
  x.slice_batch(1, 2).fill_(7);
  expect_near(vals(x), {9, 9, 9, 7, 7, 7});
  // Slicing a permuted tensor to an empty batch is legal.
  EXPECT_EQ(x.permuted().slice_batch(3, 3).numel(), 0);
}

// ---------------------------------------------------------------- graphs

TEST(GraphAdversarial, SharedLayerTwiceAccumulatesGradient) {
  auto s = std::make_shared<Scale>(3.0);
  auto in = L::Input({1});
  auto out = (*s)((*s)(in));  // 9 x
  Model m(in, out);
  EXPECT_EQ(m.weights().size(), 1u);
  EXPECT_EQ(m.layers().size(), 2u);  // InputLayer + Scale once
  Tensor x = col({1, 2});
  GradientTape tape;
  Tensor y = ops::sum(m(x));  // w^2 (x0 + x1)
  EXPECT_NEAR(y.item(), 27, 1e-5);
  auto g = tape.gradient(y, {m.trainable_weights()[0].value()});
  expect_near(vals(g[0]), {2 * 3 * 3.0f});  // 2 w sum(x) = 18
}

TEST(GraphAdversarial, DiamondGraph) {
  auto a = std::make_shared<Scale>(2.0, "a");
  auto b = std::make_shared<Scale>(3.0, "b");
  auto c = std::make_shared<Scale>(5.0, "c");
  auto add = std::make_shared<Sum2>();
  auto in = L::Input({1});
  auto h = (*a)(in);
  auto out = (*add)(std::vector<KerasTensor>{(*b)(h), (*c)(h)})[0];
  Model m(in, out);
  EXPECT_EQ(m.layers().size(), 5u);
  Tensor x = col({1, 2});
  GradientTape tape;
  Tensor y = ops::sum(m(x));  // a (b + c) sum(x) = 48
  EXPECT_NEAR(y.item(), 48, 1e-4);
  auto g = tape.gradient(y, {a->weights()[0].value(), b->weights()[0].value()});
  expect_near(vals(g[0]), {24});  // (b + c) sum(x)
  expect_near(vals(g[1]), {6});   // a sum(x)
}

TEST(GraphAdversarial, OutputsThatAreIntermediatesAndRepeated) {
  auto a = std::make_shared<Scale>(2.0);
  auto b = std::make_shared<Scale>(3.0);
  auto in = L::Input({1});
  auto h = (*a)(in);
  auto o = (*b)(h);
  Model m(std::vector<KerasTensor>{in}, std::vector<KerasTensor>{o, h, h, in});
  TensorList ys = m(TensorList{col({1, 2})});
  ASSERT_EQ(ys.size(), 4u);
  expect_near(vals(ys[0]), {6, 12});
  expect_near(vals(ys[1]), {2, 4});
  expect_near(vals(ys[2]), {2, 4});
  expect_near(vals(ys[3]), {1, 2});
  // Run twice: the per-call intermediate release must not corrupt a second call.
  TensorList ys2 = m(TensorList{col({3})});
  expect_near(vals(ys2[0]), {18});
  expect_near(vals(ys2[1]), {6});
}

TEST(GraphAdversarial, SameProducerTwiceAsInputsOfOneLayer) {
  auto a = std::make_shared<Scale>(2.0);
  auto add = std::make_shared<Sum2>();
  auto in = L::Input({1});
  auto h = (*a)(in);
  Model m(in, (*add)(std::vector<KerasTensor>{h, h})[0]);
  Tensor x = col({1, 2});
  GradientTape tape;
  Tensor y = ops::sum(m(x));  // 2 a sum(x) = 12
  EXPECT_NEAR(y.item(), 12, 1e-5);
  auto g = tape.gradient(y, {a->weights()[0].value()});
  expect_near(vals(g[0]), {6});
}

// ---------------------------------------------------------------- fit

TEST(FitAdversarial, BatchLargerThanDataset) {
  auto [m, s] = scale_model(1.0, 0.01);
  std::vector<double> xs{1, 2, 3}, ys{2, 4, 6};
  auto h = m->fit(col({1, 2, 3}), col({2, 4, 6}), {.batch_size = 10, .epochs = 1, .verbose = 0});
  EXPECT_NEAR(s->w(), sgd_step(1.0, 0.01, xs, ys), 1e-5);
  ASSERT_EQ(h["loss"].size(), 1u);
  EXPECT_NEAR(h["loss"][0], mse(1.0, xs, ys), 1e-4);
}

TEST(FitAdversarial, LastPartialBatchNoShuffleAndWeightedLoss) {
  auto [m, s] = scale_model(1.0, 0.01);
  auto counter = std::make_shared<Counter>();
  auto h = m->fit(col({1, 2, 3}), col({2, 4, 6}),
                  {.batch_size = 2, .epochs = 1, .verbose = 0, .callbacks = {counter}, .shuffle = false});
  EXPECT_EQ(counter->train_batches, 2);
  double w1 = sgd_step(1.0, 0.01, {1, 2}, {2, 4});
  double w2 = sgd_step(w1, 0.01, {3}, {6});
  EXPECT_NEAR(s->w(), w2, 1e-5);
  // Keras weights the epoch loss by batch size: (2 L1 + 1 L2) / 3.
  double want = (2 * mse(1.0, {1, 2}, {2, 4}) + 1 * mse(w1, {3}, {6})) / 3;
  EXPECT_NEAR(h["loss"][0], want, 1e-4);
}

TEST(FitAdversarial, ValidationDataUsesFinalWeightsAndPartialBatches) {
  auto [m, s] = scale_model(1.0, 0.01);
  auto h = m->fit(col({1, 2}), col({2, 4}),
                  {.batch_size = 2, .epochs = 1, .verbose = 0,
                   .validation_data = ValidationData{col({1, 2, 3}), col({1, 1, 1})}, .shuffle = false});
  double w1 = sgd_step(1.0, 0.01, {1, 2}, {2, 4});
  EXPECT_NEAR(s->w(), w1, 1e-5);
  ASSERT_EQ(h["val_loss"].size(), 1u);
  EXPECT_NEAR(h["val_loss"][0], mse(w1, {1, 2, 3}, {1, 1, 1}), 1e-4);
  EXPECT_NEAR(h["loss"][0], mse(1.0, {1, 2}, {2, 4}), 1e-4);
}

// Keras 3 fit() runs validation through evaluate(callbacks=callbacks): on_test_begin/end fire.
TEST(FitAdversarial, ValidationCallsTestHooksOfFitCallbacks) {
  auto [m, s] = scale_model(1.0, 0.01);
  auto counter = std::make_shared<Counter>();
  m->fit(col({1, 2}), col({2, 4}),
         {.batch_size = 2, .epochs = 2, .verbose = 0, .callbacks = {counter},
          .validation_data = ValidationData{col({1}), col({1})}});
  EXPECT_EQ(counter->test_begin, 2);
  EXPECT_EQ(counter->test_end, 2);
}

TEST(FitAdversarial, ZeroEpochsAndInitialEpoch) {
  auto [m, s] = scale_model(1.0, 0.01);
  auto h0 = m->fit(col({1}), col({2}), {.epochs = 0, .verbose = 0});
  EXPECT_TRUE(h0.epochs().empty());
  EXPECT_DOUBLE_EQ(s->w(), 1.0);
  auto h = m->fit(col({1}), col({2}), {.epochs = 4, .verbose = 0, .initial_epoch = 2});
  EXPECT_EQ(h.epochs(), (std::vector<int>{2, 3}));
  EXPECT_NEAR(s->w(), sgd_step(sgd_step(1.0, 0.01, {1}, {2}), 0.01, {1}, {2}), 1e-6);
  auto h2 = m->fit(col({1}), col({2}), {.epochs = 2, .verbose = 0, .initial_epoch = 2});
  EXPECT_TRUE(h2.epochs().empty());
}

TEST(FitAdversarial, StopTrainingMidEpoch) {
  auto [m, s] = scale_model(1.0, 0.01);
  auto counter = std::make_shared<Counter>();
  counter->stop_after_first_batch = true;
  auto h = m->fit(col({1, 2, 3}), col({2, 4, 6}),
                  {.batch_size = 1, .epochs = 3, .verbose = 0, .callbacks = {counter}, .shuffle = false});
  EXPECT_EQ(counter->train_batches, 1);
  EXPECT_EQ(h.epochs().size(), 1u);
  EXPECT_NEAR(s->w(), sgd_step(1.0, 0.01, {1}, {2}), 1e-6);
}

TEST(FitAdversarial, FailedFitLeavesModelUsable) {
  auto [m, s] = scale_model(1.0, 0.01);
  // Labels of the wrong shape for MSE: the loss throws inside the tape.
  EXPECT_ANY_THROW(m->fit(col({1, 2}), Tensor::ones({2, 5}), {.verbose = 0}));
  EXPECT_FALSE(grad_recording());
  EXPECT_FALSE(current_training());
  EXPECT_DOUBLE_EQ(s->w(), 1.0);
  // A layer throwing in its call (training mode, inside a NoGradGuard).
  s->throw_in_call = true;
  EXPECT_THROW(m->fit(col({1}), col({2}), {.verbose = 0}), std::runtime_error);
  EXPECT_FALSE(grad_recording());
  EXPECT_FALSE(current_training());
  s->throw_in_call = false;
  auto h = m->fit(col({1, 2}), col({2, 4}), {.batch_size = 2, .verbose = 0, .shuffle = false});
  EXPECT_NEAR(s->w(), sgd_step(1.0, 0.01, {1, 2}, {2, 4}), 1e-6);
  EXPECT_NEAR(h["loss"][0], mse(1.0, {1, 2}, {2, 4}), 1e-4);
  // Inference after training runs with training=false.
  m->predict(col({1}));
  EXPECT_FALSE(s->seen_training);
}

TEST(FitAdversarial, TrainingScopeRestoredAfterLayerThrows) {
  auto s = std::make_shared<Scale>(1.0);
  s->throw_in_call = true;
  {
    TrainingScope outer(false);
    EXPECT_THROW((*s)(col({1}), CallArgs{.training = true}), std::runtime_error);
    EXPECT_FALSE(current_training());
  }
  {
    TrainingScope outer(true);
    EXPECT_THROW((*s)(col({1}), CallArgs{.training = false}), std::runtime_error);
    EXPECT_TRUE(current_training());
  }
  EXPECT_FALSE(current_training());
  EXPECT_FALSE(grad_recording());
}

TEST(FitAdversarial, NonContiguousInputsTrainLikeContiguous) {
  // x given as a permuted (2, 3) -> (3, 2) view must train exactly like its contiguous copy.
  auto [m1, s1] = scale_model(1.0, 0.01, 2);
  auto [m2, s2] = scale_model(1.0, 0.01, 2);
  Tensor xt = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3}).permuted();
  ASSERT_FALSE(xt.is_contiguous());
  Tensor xc = xt.clone();
  Tensor y = ops::multiply(xc, 2.0);
  m1->fit(xt, y, {.batch_size = 2, .verbose = 0, .shuffle = false});
  m2->fit(xc, y, {.batch_size = 2, .verbose = 0, .shuffle = false});
  EXPECT_DOUBLE_EQ(s1->w(), s2->w());
  EXPECT_NE(s1->w(), 1.0);
  auto [m3, s3] = scale_model(1.0, 0.01, 2);
  m3->fit(xt, y, {.batch_size = 2, .verbose = 0, .shuffle = true});
  EXPECT_NE(s3->w(), 1.0);
  expect_near(vals(m1->predict(xt)), vals(m1->predict(xc)));
}

TEST(FitAdversarial, ValidationSplitTakesTheTailBeforeShuffling) {
  auto [m, s] = scale_model(1.0, 0.01);
  // Last 25% (x=4, y=0) is validation; training sees only the first three samples.
  auto h = m->fit(col({1, 2, 3, 4}), col({2, 4, 6, 0}),
                  {.batch_size = 8, .epochs = 1, .verbose = 0, .validation_split = 0.25, .shuffle = true});
  double w1 = sgd_step(1.0, 0.01, {1, 2, 3}, {2, 4, 6});
  EXPECT_NEAR(s->w(), w1, 1e-5);
  EXPECT_NEAR(h["val_loss"][0], mse(w1, {4}, {0}), 1e-3);
}

TEST(FitAdversarial, EvaluateWeightsPartialBatches) {
  auto [m, s] = scale_model(1.0, 0.01);
  Logs l = m->evaluate(col({1, 2, 3}), col({0, 0, 0}), {.batch_size = 2, .verbose = 0});
  EXPECT_NEAR(l.at("loss"), (1 + 4 + 9) / 3.0, 1e-4);  // not the mean of batch means (2.5 + 9) / 2
}

TEST(GraphAdversarial, NestedModelCalledTwice) {
  auto s = std::make_shared<Scale>(3.0);
  auto iin = L::Input({1});
  auto inner = std::make_shared<Model>(iin, (*s)(iin), "inner");
  auto in = L::Input({1});
  auto out = (*inner)((*inner)(in));  // 9 x
  Model outer(in, out);
  EXPECT_EQ(outer.weights().size(), 1u);
  EXPECT_EQ(outer.weights()[0].path(), "inner/scale/w");
  Tensor x = col({1, 2});
  GradientTape tape;
  Tensor y = ops::sum(outer(x));
  EXPECT_NEAR(y.item(), 27, 1e-4);
  auto g = tape.gradient(y, {outer.trainable_weights()[0].value()});
  expect_near(vals(g[0]), {18});
}

