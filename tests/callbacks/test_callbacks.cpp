// Built-in callbacks against Keras 3's rules: hooks driven directly with scripted logs, and
// through small fits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "callbacks/callbacks.h"
#include "callbacks/py_format.h"
#include "keras/keras.h"

using namespace keras;
namespace cb = keras::callbacks;
namespace L = keras::layers;
namespace fs = std::filesystem;

namespace {
Logs logs_of(std::initializer_list<std::pair<const char*, double>> items) {
  Logs l;
  for (const auto& [k, v] : items) l.set(k, v);
  return l;
}

std::pair<Tensor, Tensor> toy_data(int64_t n, uint64_t seed) {
  Tensor x = random::normal({n, 2}, 0, 1, seed);
  std::vector<int64_t> y(static_cast<size_t>(n));
  auto xv = x.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) y[static_cast<size_t>(i)] = xv[2 * i] + xv[2 * i + 1] > 0 ? 1 : 0;
  return {x, Tensor::from_vector(y)};
}

std::shared_ptr<Sequential> compiled_mlp(CompileOptions options = {}) {
  auto m = std::make_shared<Sequential>(std::initializer_list<SequentialEntry>{
      L::Input({2}), L::Dense({.units = 8, .activation = "relu"}), L::Dense({.units = 2, .activation = "softmax"})});
  if (options.loss.empty()) options.loss = "sparse_categorical_crossentropy";
  if (options.metrics.empty()) options.metrics = {"accuracy"};
  m->compile(options);
  return m;
}

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("keras_cb_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Feeds `values` of `key` as epoch ends; returns the epoch at which stop_training was set (-1 none).
int run_epochs(Callback& c, Model& m, const std::string& key, const std::vector<double>& values) {
  m.stop_training = false;
  c.set_model(&m);
  c.on_train_begin({});
  for (size_t e = 0; e < values.size(); ++e) {
    Logs l;
    l.set(key, values[e]);
    c.on_epoch_end(static_cast<int>(e), l);
    if (m.stop_training) return static_cast<int>(e);
  }
  return -1;
}
}  // namespace

// ---------------------------------------------------------------- formatting

TEST(PyFormat, FloatReprMatchesPython) {
  EXPECT_EQ(cb::python_float_repr(0.1), "0.1");
  EXPECT_EQ(cb::python_float_repr(1.0), "1.0");
  EXPECT_EQ(cb::python_float_repr(-2.5), "-2.5");
  EXPECT_EQ(cb::python_float_repr(1e-5), "1e-05");
  EXPECT_EQ(cb::python_float_repr(0.0001), "0.0001");
  EXPECT_EQ(cb::python_float_repr(1.5e16), "1.5e+16");
  EXPECT_EQ(cb::python_float_repr(1e16), "1e+16");
  EXPECT_EQ(cb::python_float_repr(123456789.0), "123456789.0");
  EXPECT_EQ(cb::python_float_repr(static_cast<double>(0.6931472f)), "0.6931471824645996");
  EXPECT_EQ(cb::python_float_repr(std::nan("")), "nan");
  EXPECT_EQ(cb::python_float_repr(-std::numeric_limits<double>::infinity()), "-inf");
}

TEST(PyFormat, FieldsAndSpecs) {
  std::map<std::string, cb::FormatValue> v{{"epoch", int64_t{3}}, {"val_loss", 0.4123}, {"loss", 0.5}, {"acc", 0.5}};
  EXPECT_EQ(cb::format_python("t", "w.{epoch:02d}-{val_loss:.2f}.keras", v), "w.03-0.41.keras");
  EXPECT_EQ(cb::format_python("t", "{epoch}/{loss}", v), "3/0.5");
  EXPECT_EQ(cb::format_python("t", "{{epoch}}", v), "{epoch}");
  EXPECT_EQ(cb::format_python("t", "[{epoch:>4}|{epoch:<3}|{epoch:^5}|{epoch:*^5}]", v), "[   3|3  |  3  |**3**]");
  EXPECT_EQ(cb::format_python("t", "{loss:+.1e}", v), "+5.0e-01");
  EXPECT_EQ(cb::format_python("t", "{acc:.1%}", v), "50.0%");
  EXPECT_EQ(cb::format_python("t", "{loss:08.3f}", v), "0000.500");
  EXPECT_EQ(cb::format_python("t", "{epoch:.2f}", v), "3.00");
  EXPECT_EQ(cb::format_python("t", "{loss:.3}", v), "0.5");
  EXPECT_EQ(cb::format_python("t", "{loss!r}", v), "0.5");
  EXPECT_THROW(cb::format_python("t", "{nope}", v), ValueError);
  EXPECT_THROW(cb::format_python("t", "{loss:d}", v), ValueError);
  EXPECT_THROW(cb::format_python("t", "{}", v), ValueError);
  EXPECT_THROW(cb::format_python("t", "{epoch", v), ValueError);
  EXPECT_THROW(cb::format_python("t", "a}b", v), ValueError);
  EXPECT_THROW(cb::format_python("t", "{loss:.2q}", v), ValueError);
  try {
    cb::format_python("ModelCheckpoint filepath", "{val_acc}", v);
    FAIL();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("val_acc"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("val_loss"), std::string::npos);  // lists the known keys
  }
}

// ---------------------------------------------------------------- EarlyStopping

TEST(EarlyStopping, PatienceCounting) {
  auto m = compiled_mlp();
  cb::EarlyStoppingImpl es({.monitor = "val_loss", .patience = 2});
  EXPECT_EQ(run_epochs(es, *m, "val_loss", {1.0, 0.9, 0.95, 0.96, 0.97}), 3);
  EXPECT_EQ(es.stopped_epoch(), 3);
  EXPECT_EQ(es.best_epoch(), 1);
  EXPECT_DOUBLE_EQ(*es.best(), 0.9);
  // patience 0 stops at the first non-improving epoch after epoch 0.
  cb::EarlyStoppingImpl es0({.monitor = "val_loss"});
  EXPECT_EQ(run_epochs(es0, *m, "val_loss", {1.0, 0.9, 0.9}), 2);  // equal is not an improvement
}

TEST(EarlyStopping, MinDeltaMustBeExceeded) {
  auto m = compiled_mlp();
  cb::EarlyStoppingImpl es({.monitor = "val_loss", .min_delta = -0.1, .patience = 1});  // |min_delta| used
  // 0.95 is better than 1.0 but by less than 0.1: not an improvement -> stop at epoch 1.
  EXPECT_EQ(run_epochs(es, *m, "val_loss", {1.0, 0.95, 0.5}), 1);
  cb::EarlyStoppingImpl es2({.monitor = "val_loss", .min_delta = 0.1, .patience = 2});
  EXPECT_EQ(run_epochs(es2, *m, "val_loss", {1.0, 0.95, 0.85, 0.84, 0.83}), 4);
  EXPECT_DOUBLE_EQ(*es2.best(), 0.85);
  // max mode: current - min_delta > best.
  cb::EarlyStoppingImpl es3({.monitor = "val_acc", .min_delta = 0.05, .patience = 1, .mode = "max"});
  EXPECT_EQ(run_epochs(es3, *m, "val_acc", {0.5, 0.6, 0.62}), 2);
}

TEST(EarlyStopping, BaselineAndStartFromEpoch) {
  auto m = compiled_mlp();
  // Improvements that do not beat the baseline keep counting toward patience.
  cb::EarlyStoppingImpl with_base({.monitor = "val_loss", .patience = 2, .baseline = 0.5});
  EXPECT_EQ(run_epochs(with_base, *m, "val_loss", {0.8, 0.7, 0.75}), 2);
  EXPECT_EQ(with_base.wait(), 3);
  cb::EarlyStoppingImpl no_base({.monitor = "val_loss", .patience = 2});
  EXPECT_EQ(run_epochs(no_base, *m, "val_loss", {0.8, 0.7, 0.75}), -1);
  cb::EarlyStoppingImpl beats({.monitor = "val_loss", .patience = 1, .baseline = 0.5});
  EXPECT_EQ(run_epochs(beats, *m, "val_loss", {0.4, 0.3, 0.2}), -1);
  // Epochs before start_from_epoch are ignored entirely.
  cb::EarlyStoppingImpl late({.monitor = "val_loss", .start_from_epoch = 2});
  EXPECT_EQ(run_epochs(late, *m, "val_loss", {1.0, 2.0, 3.0, 2.5, 4.0}), 4);
  EXPECT_EQ(late.best_epoch(), 3);
  // Missing monitor: warning, no stop.
  cb::EarlyStoppingImpl missing({.monitor = "val_nope", .mode = "min"});
  EXPECT_EQ(run_epochs(missing, *m, "loss", {1.0, 2.0, 3.0}), -1);
}

TEST(EarlyStopping, RestoreBestWeights) {
  auto m = compiled_mlp();
  m->build_for({-1, 2});
  cb::EarlyStoppingImpl es({.monitor = "val_loss", .patience = 5, .restore_best_weights = true});
  es.set_model(m.get());
  es.on_train_begin({});
  std::vector<double> losses{1.0, 0.5, 0.7};
  for (int e = 0; e < 3; ++e) {
    TensorList w;
    for (const auto& v : m->weights()) w.push_back(Tensor::full(v.shape(), e + 1.0));
    m->set_weights(w);
    Logs l = logs_of({{"val_loss", losses[static_cast<size_t>(e)]}});
    es.on_epoch_end(e, l);
  }
  EXPECT_FALSE(m->stop_training);
  es.on_train_end({});  // restored even without an early stop
  for (const auto& v : m->weights())
    for (float f : v.value().to_vector<float>()) EXPECT_EQ(f, 2.0f);
}

TEST(EarlyStopping, AutoModeUsesMetricDirection) {
  auto m = compiled_mlp();
  auto [x, y] = toy_data(32, 1);
  m->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0});  // resolves the compiled metrics
  cb::EarlyStoppingImpl acc({.monitor = "val_accuracy", .patience = 0});
  EXPECT_EQ(run_epochs(acc, *m, "val_accuracy", {0.5, 0.6, 0.55}), 2);  // max
  cb::EarlyStoppingImpl loss({.monitor = "loss", .patience = 0});
  EXPECT_EQ(run_epochs(loss, *m, "loss", {0.5, 0.4, 0.45}), 2);  // min
  cb::EarlyStoppingImpl unknown({.monitor = "val_mystery"});
  EXPECT_THROW(run_epochs(unknown, *m, "val_mystery", {1.0}), ValueError);
  EXPECT_THROW(cb::EarlyStopping({.mode = "up"}), ValueError);
}

TEST(EarlyStopping, StopsFit) {
  auto m = compiled_mlp();
  auto [x, y] = toy_data(32, 2);
  int epochs_run = 0;
  auto counter = cb::LambdaCallback({.on_epoch_end = [&](int, Logs&) { ++epochs_run; }});
  // A constant monitored value never improves after epoch 0: stop at epoch 1 with patience 1.
  auto constant = cb::LambdaCallback({.on_epoch_end = [](int, Logs& l) { l.set("flat", 1.0); }});
  auto es = cb::EarlyStopping({.monitor = "flat", .patience = 1, .mode = "min"});
  m->fit(x, y, {.batch_size = 16, .epochs = 10, .verbose = 0, .callbacks = {constant, es, counter}});
  EXPECT_EQ(epochs_run, 2);
  EXPECT_EQ(es->stopped_epoch(), 1);
}

// ---------------------------------------------------------------- ReduceLROnPlateau

TEST(ReduceLROnPlateau, PatienceCooldownMinLr) {
  auto m = compiled_mlp({.optimizer = optimizers::SGD({.learning_rate = 1.0})});
  cb::ReduceLROnPlateauImpl r({.monitor = "val_loss", .factor = 0.5, .patience = 1, .cooldown = 2, .min_lr = 0.3});
  r.set_model(m.get());
  r.on_train_begin({});
  std::vector<double> logged;
  for (int e = 0; e < 9; ++e) {
    Logs l = logs_of({{"val_loss", 1.0}});
    r.on_epoch_end(e, l);
    logged.push_back(l.at("learning_rate"));
  }
  // e0 improves; e1 waits 1 -> 0.5 and cooldown 2; e2 cooldown; e3 cooldown ends, waits 1 -> 0.3
  // (0.25 clipped to min_lr); afterwards lr == min_lr: no more reductions.
  std::vector<double> expected{1.0, 1.0, 0.5, 0.5, 0.3, 0.3, 0.3, 0.3, 0.3};
  ASSERT_EQ(logged.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(logged[i], expected[i], 1e-6) << "epoch " << i;
}

TEST(ReduceLROnPlateau, ImprovementNeedsMinDelta) {
  auto m = compiled_mlp({.optimizer = optimizers::SGD({.learning_rate = 1.0})});
  cb::ReduceLROnPlateauImpl r({.monitor = "val_loss", .factor = 0.1, .patience = 2, .min_delta = 0.1});
  r.set_model(m.get());
  r.on_train_begin({});
  for (double v : {1.0, 0.95, 0.92}) {  // neither beats 1.0 - 0.1
    Logs l = logs_of({{"val_loss", v}});
    r.on_epoch_end(0, l);
  }
  EXPECT_NEAR(m->optimizer()->learning_rate(), 0.1, 1e-7);
  EXPECT_THROW(cb::ReduceLROnPlateau({.factor = 1.0}), ValueError);
}

TEST(LearningRateScheduler, SetsRateEachEpochAndLogsIt) {
  auto m = compiled_mlp({.optimizer = optimizers::SGD({.learning_rate = 0.01})});
  auto [x, y] = toy_data(32, 3);
  std::vector<double> seen;
  auto sched = cb::LearningRateScheduler([&](int epoch, double lr) {
    seen.push_back(lr);
    return 0.1 * (epoch + 1);
  });
  History h = m->fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0, .callbacks = {sched}});
  ASSERT_EQ(h["learning_rate"].size(), 3u);
  for (int e = 0; e < 3; ++e) EXPECT_NEAR(h["learning_rate"][static_cast<size_t>(e)], 0.1 * (e + 1), 1e-6);
  EXPECT_NEAR(seen[0], 0.01, 1e-7);
  EXPECT_NEAR(seen[2], 0.2, 1e-6);
  auto bad = cb::LearningRateScheduler([](int, double) { return std::nan(""); });
  EXPECT_THROW(m->fit(x, y, {.batch_size = 16, .epochs = 1, .verbose = 0, .callbacks = {bad}}), ValueError);
}

// ---------------------------------------------------------------- CSVLogger

TEST(CSVLogger, HeaderNaFillingAndLineEnds) {
  fs::path dir = temp_dir("csv");
  std::string file = (dir / "log.csv").string();
  auto csv = cb::CSVLogger(file);
  csv->on_train_begin({});
  Logs l0 = logs_of({{"loss", 0.25}, {"accuracy", 0.5}});
  csv->on_epoch_end(0, l0);
  Logs l1 = logs_of({{"loss", 0.125}, {"accuracy", 0.75}, {"val_loss", 0.3}});
  csv->on_epoch_end(1, l1);
  csv->on_train_end({});
  EXPECT_EQ(slurp(file),
            "epoch,accuracy,loss,val_accuracy,val_loss\r\n"
            "0,0.5,0.25,NA,NA\r\n"
            "1,0.75,0.125,NA,0.3\r\n");
  // With validation keys present: just the sorted keys. Append writes no second header.
  std::string f2 = (dir / "log2.csv").string();
  auto a = cb::CSVLogger(f2, ";");
  a->on_train_begin({});
  Logs v = logs_of({{"val_loss", 1.0}, {"loss", 2.0}});
  a->on_epoch_end(0, v);
  a->on_train_end({});
  auto b = cb::CSVLogger(f2, ";", /*append=*/true);
  b->on_train_begin({});
  b->on_epoch_end(1, v);
  b->on_train_end({});
  EXPECT_EQ(slurp(f2), "epoch;loss;val_loss\r\n0;2.0;1.0\r\n1;2.0;1.0\r\n");
  // Append to a new file writes the header.
  std::string f3 = (dir / "log3.csv").string();
  auto c = cb::CSVLogger(f3, ",", true);
  c->on_train_begin({});
  c->on_epoch_end(0, v);
  c->on_train_end({});
  EXPECT_EQ(slurp(f3), "epoch,loss,val_loss\r\n0,2.0,1.0\r\n");
  fs::remove_all(dir);
}

TEST(CSVLogger, ThroughFit) {
  fs::path dir = temp_dir("csvfit");
  auto m = compiled_mlp();
  auto [x, y] = toy_data(40, 4);
  m->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {cb::CSVLogger((dir / "f.csv").string())},
                .validation_split = 0.2});
  std::string text = slurp(dir / "f.csv");
  EXPECT_EQ(text.rfind("epoch,accuracy,loss,val_accuracy,val_loss\r\n0,", 0), 0u) << text;
  EXPECT_NE(text.find("\r\n1,"), std::string::npos);
  EXPECT_EQ(text.find("NA"), std::string::npos);
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- TerminateOnNaN

TEST(TerminateOnNaN, StopsAndNamesTheLayer) {
  auto m = compiled_mlp();
  m->build_for({-1, 2});
  Tensor x = Tensor::ones({4, 2});
  auto t = cb::TerminateOnNaN({.last_batch = [&](const Model&) { return TensorList{x}; }, .print = false});
  t->set_model(m.get());
  t->on_train_begin({});
  t->on_train_batch_end(0, logs_of({{"loss", 0.5}}));
  EXPECT_FALSE(m->stop_training);
  // Make the second layer overflow: its output is the first non-finite one.
  auto k = m->get_layer("dense_1")->weights()[0];
  k.assign(Tensor::full(k.shape(), std::numeric_limits<float>::infinity()));
  t->on_train_batch_end(3, logs_of({{"loss", std::nan("")}}));
  EXPECT_TRUE(m->stop_training);
  EXPECT_EQ(t->culprit(), "dense_1");
  EXPECT_NE(t->report().find("Batch 3: Invalid loss, terminating training"), std::string::npos);
  EXPECT_NE(t->report().find("dense_1/kernel"), std::string::npos) << t->report();
  EXPECT_EQ(cb::first_non_finite_output(*m, {x}), "dense_1");
  Tensor bad = Tensor::from_vector(std::vector<float>{1, std::nanf("")}, {1, 2});
  EXPECT_EQ(cb::first_non_finite_output(*m, {bad}), "<input>");
  // Without the batch: the first layer whose weights are not finite.
  auto t2 = cb::TerminateOnNaN({.last_batch = [](const Model&) { return TensorList{}; }, .print = false});
  t2->set_model(m.get());
  t2->on_train_batch_end(0, logs_of({{"loss", std::numeric_limits<double>::infinity()}}));
  EXPECT_EQ(t2->culprit(), "dense_1");
}

TEST(TerminateOnNaN, StopsFitOnNaNInput) {
  auto m = compiled_mlp();
  auto [x, y] = toy_data(32, 5);
  std::vector<float> xv = x.to_vector<float>();
  // An infinity, not a NaN: relu maps NaN to 0 (see the report), which would hide it.
  xv[0] = std::numeric_limits<float>::infinity();
  xv[1] = 1.0f;
  Tensor xn = Tensor::from_vector(xv, {32, 2});
  int batches = 0;
  auto count = cb::LambdaCallback({.on_train_batch_end = [&](int, const Logs&) { ++batches; }});
  auto t = cb::TerminateOnNaN({.last_batch = [&](const Model&) { return TensorList{xn}; }, .print = false});
  m->fit(xn, y, {.batch_size = 8, .epochs = 3, .verbose = 0, .callbacks = {t, count}, .shuffle = false});
  EXPECT_TRUE(t->terminated());
  EXPECT_EQ(batches, 1);
  EXPECT_EQ(t->culprit(), "<input>");
}

// ---------------------------------------------------------------- LambdaCallback

TEST(LambdaCallback, HooksFireInFit) {
  auto m = compiled_mlp();
  auto [x, y] = toy_data(40, 6);
  int train_begin = 0, train_end = 0, epoch_begin = 0, epoch_end = 0, batch_end = 0, test_begin = 0;
  auto l = cb::LambdaCallback({.on_train_begin = [&](const Logs&) { ++train_begin; },
                               .on_train_end = [&](const Logs&) { ++train_end; },
                               .on_epoch_begin = [&](int, const Logs&) { ++epoch_begin; },
                               .on_epoch_end = [&](int, Logs& logs) { ++epoch_end; logs.set("extra", 7); },
                               .on_train_batch_end = [&](int, const Logs&) { ++batch_end; },
                               .on_test_begin = [&](const Logs&) { ++test_begin; }});
  History h = m->fit(x, y, {.batch_size = 16, .epochs = 2, .verbose = 0, .callbacks = {l}, .validation_split = 0.2});
  EXPECT_EQ(train_begin, 1);
  EXPECT_EQ(train_end, 1);
  EXPECT_EQ(epoch_begin, 2);
  EXPECT_EQ(epoch_end, 2);
  EXPECT_EQ(batch_end, 4);  // 32 samples / 16
  EXPECT_EQ(test_begin, 2);
  EXPECT_EQ(h["extra"], (std::vector<double>{7, 7}));
}
