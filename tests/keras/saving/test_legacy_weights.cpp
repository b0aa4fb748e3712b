// Legacy Keras 2 HDF5 weights (.h5): layout, round trips, topological / by_name / skip_mismatch
// loading, nested-model order, all-or-nothing errors, optimizer weights, and files written by
// tf_keras (tests/data/hdf5/make_keras_weights.py).
#include <gtest/gtest.h>

#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/legacy_weights.h"
#include "keras/saving/weights_h5_file.h"
#include "support/weights_models.h"

using namespace weights_test;
namespace h5 = keras::hdf5;
namespace opt = keras::optimizers;

namespace {

const std::string kData = std::string(KERAS_SOURCE_DIR) + "/tests/data/hdf5/";

h5::Group legacy_of(const keras::Layer& model, const std::string& name = "w.h5") {
  auto file = h5::File::create_in_memory(name);
  auto root = file.root();
  keras::write_legacy_weights(root, model);
  return h5::File::open_image(file.image(), name).root();
}

std::vector<float> predict_expected(const std::string& which, Tensor* x) {
  auto expected = h5::File::open(kData + "nested_expected.h5").root();
  *x = expected.open_dataset("x").read({3, 4});
  return expected.open_dataset(which).read({3, 2}).to_vector<float>();
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}

}  // namespace

TEST(LegacyWeights, LayoutIsKeras2) {
  auto model = nested();
  auto root = legacy_of(*model);
  EXPECT_EQ(root.read_string_attr("keras_version"), keras::kLegacyKerasVersion);
  EXPECT_EQ(root.read_string_attr("backend"), "tensorflow");
  EXPECT_EQ(root.read_string_list_attr("layer_names"), (std::vector<std::string>{"input_layer", "inner", "head"}));
  EXPECT_TRUE(root.open_group("input_layer").read_string_list_attr("weight_names").empty());
  EXPECT_EQ(root.open_group("head").read_string_list_attr("weight_names"),
            (std::vector<std::string>{"head/kernel:0", "head/bias:0"}));
  EXPECT_EQ(root.open_dataset("head/head/kernel:0").shape(), (keras::Shape{2, 2}));
  // A nested model: trainable weights in layer order, then the non-trainable ones (the frozen
  // Dense and the moving statistics) - keras-formats.md section 1.
  EXPECT_EQ(root.open_group("inner").read_string_list_attr("weight_names"),
            (std::vector<std::string>{"inner/batch_normalization/gamma:0", "inner/batch_normalization/beta:0",
                                      "inner/dense_1/kernel:0", "inner/dense_1/bias:0", "inner/dense/kernel:0",
                                      "inner/dense/bias:0", "inner/batch_normalization/moving_mean:0",
                                      "inner/batch_normalization/moving_variance:0"}));
  EXPECT_TRUE(root.open_group("top_level_model_weights").read_string_list_attr("weight_names").empty());
}

TEST(LegacyWeights, RoundTripsBitForBit) {
  auto dir = temp_dir("legacy");
  for (int which = 0; which < 3; ++which) {
    std::shared_ptr<Model> a = which == 0 ? std::shared_ptr<Model>(mlp()) : which == 1 ? std::shared_ptr<Model>(cnn()) : nested();
    std::shared_ptr<Model> b = which == 0 ? std::shared_ptr<Model>(mlp()) : which == 1 ? std::shared_ptr<Model>(cnn()) : nested();
    randomize(*a, 20 + which);
    randomize(*b, 30 + which);
    std::string path = (dir / ("m" + std::to_string(which) + ".h5")).string();
    keras::save_weights_h5(*a, path);
    auto report = keras::load_weights_h5(*b, path);
    EXPECT_EQ(snapshot(*a), snapshot(*b)) << which;
    EXPECT_EQ(report.loaded.size(), a->weights().size());
    EXPECT_TRUE(report.missing.empty()) << report.str();
  }
  std::filesystem::remove_all(dir);
}

// tf_keras's MobileNetV3 names layers as paths, "blk/pad" before "blk": the second layer's group
// already exists when it is written (tiny_mobilenet_v3_small.k2.h5 holds model_weights/
// expanded_conv/depthwise/{pad, BatchNorm, expanded_conv/depthwise/depthwise_kernel:0}).
TEST(LegacyWeights, LayerNamesThatArePathsOfEachOther) {
  namespace L = keras::layers;
  auto make = [] {
    auto x = L::Input({4});
    auto h = L::Dense({.units = 3, .name = "blk/pad"})(x);
    auto y = L::Dense({.units = 2, .name = "blk"})(h);
    return std::make_shared<Model>(x, L::Dense({.units = 2, .name = "blk/bn"})(y));
  };
  auto a = make(), b = make();
  randomize(*a, 40);
  randomize(*b, 41);
  auto dir = temp_dir("legacy_paths");
  const std::string path = (dir / "paths.h5").string();
  keras::save_weights_h5(*a, path);
  keras::load_weights_h5(*b, path);
  EXPECT_EQ(snapshot(*a), snapshot(*b));
  std::filesystem::remove_all(dir);
}

TEST(LegacyWeights, NestedModelSurvivesAChangeOfFreezing) {
  auto a = nested();
  randomize(*a, 40);
  auto root = legacy_of(*a);
  auto b = nested();
  std::dynamic_pointer_cast<Model>(b->get_layer("inner"))->layers()[0]->set_trainable(true);  // order differs now
  randomize(*b, 41);
  keras::read_legacy_weights(root, *b);
  EXPECT_EQ(snapshot(*a), snapshot(*b));
}

TEST(LegacyWeights, TopologicalIgnoresNamesButCountsLayers) {
  auto a = mlp();
  randomize(*a, 42);
  auto root = legacy_of(*a);
  auto renamed = mlp();
  renamed->layers()[0]->set_name("x1");
  renamed->layers()[1]->set_name("x2");
  keras::read_legacy_weights(root, *renamed);
  EXPECT_EQ(snapshot(*a), snapshot(*renamed));

  auto deeper = std::make_shared<Sequential>(std::vector<keras::LayerPtr>{
      L::InputLayer({.shape = {4}}), L::Dense({.units = 8}), L::Dense({.units = 3}), L::Dense({.units = 3})});
  auto before = snapshot(*deeper);
  std::string err = error_of<keras::IOError>([&] { keras::read_legacy_weights(root, *deeper, {.skip_mismatch = true}); });
  EXPECT_TRUE(contains(err, "w.h5: /: expected 3 saved layers with weights")) << err;
  EXPECT_TRUE(contains(err, "Layer count mismatch")) << err;
  EXPECT_EQ(snapshot(*deeper), before);
}

TEST(LegacyWeights, ByNameSkipMismatchAndNameMap) {
  auto a = mlp();
  a->layers()[0]->set_name("encoder");
  a->layers()[1]->set_name("decoder");
  randomize(*a, 43);
  auto root = legacy_of(*a);
  // "enc" takes encoder through name_map; "decoder" has another width; "fresh" is new.
  auto b = std::make_shared<Sequential>(std::vector<keras::LayerPtr>{
      L::InputLayer({.shape = {4}}), L::Dense({.units = 8, .name = "enc"}), L::Dense({.units = 5, .name = "decoder"}),
      L::Dense({.units = 2, .name = "fresh"})});
  randomize(*b, 44);
  auto before = snapshot(*b);
  keras::LoadWeightsOptions options{.by_name = true, .name_map = {{"encoder", "enc"}}};
  std::string err = error_of<keras::IOError>([&] { keras::read_legacy_weights(root, *b, options); });
  EXPECT_TRUE(contains(err, "w.h5: /decoder/decoder/kernel:0: expected shape (8, 5)")) << err;
  EXPECT_EQ(snapshot(*b), before);

  options.skip_mismatch = true;
  auto report = keras::read_legacy_weights(root, *b, options);
  auto after = snapshot(*b);
  EXPECT_EQ(after[0], snapshot(*a)[0]);
  EXPECT_EQ(after[1], snapshot(*a)[1]);
  EXPECT_EQ(after[2], before[2]);  // decoder kernel: shape differs, skipped
  EXPECT_EQ(after[3], before[3]);  // decoder bias (5,) vs (3,): skipped too
  EXPECT_EQ(after[4], before[4]);
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"enc/kernel", "enc/bias"}));
  ASSERT_EQ(report.skipped.size(), 2u) << report.str();
  EXPECT_EQ(report.skipped[0].first, "/decoder/decoder/kernel:0");
  EXPECT_EQ(report.missing, (std::vector<std::string>{"decoder/kernel", "decoder/bias", "fresh/kernel", "fresh/bias"}));
  EXPECT_THROW(keras::read_legacy_weights(root, *b, {.name_map = {{"a", "b"}}}), keras::ValueError);

  // Strict: the skipped decoder and the unmatched weights refuse the whole load.
  randomize(*b, 45);
  before = snapshot(*b);
  options.strict = true;
  err = error_of<keras::IOError>([&] { keras::read_legacy_weights(root, *b, options); });
  EXPECT_TRUE(contains(err, "w.h5")) << err;
  EXPECT_TRUE(contains(err, "skipped entries: 2, unmatched weights: 4; nothing was loaded")) << err;
  EXPECT_EQ(snapshot(*b), before);
}

TEST(LegacyWeights, BadGroupsFailWithoutChangingTheModel) {
  auto model = mlp();
  randomize(*model, 45);
  auto before = snapshot(*model);
  auto file = h5::File::create_in_memory("hand.h5");
  auto root = file.root();
  root.write_string_attr("keras_version", "2.15.0");
  root.write_string_list_attr("layer_names", {"dense", "dense_1"});
  auto d0 = root.create_group("dense");
  d0.write_string_list_attr("weight_names", {"dense/kernel:0", "dense/bias:0"});
  d0.write_dataset("dense/kernel:0", Tensor::zeros({4, 8}));
  d0.write_dataset("dense/bias:0", Tensor::zeros({8}));
  auto d1 = root.create_group("dense_1");
  d1.write_string_list_attr("weight_names", {"dense_1/kernel:0", "dense_1/bias:0"});
  d1.write_dataset("dense_1/kernel:0", Tensor::zeros({8, 3}));
  auto reopened = [&] { return h5::File::open_image(file.image(), "hand.h5").root(); };
  std::string err = error_of<keras::IOError>([&] { keras::read_legacy_weights(reopened(), *model); });
  EXPECT_TRUE(contains(err, "hand.h5: /dense_1/dense_1/bias:0: expected a dataset")) << err;
  EXPECT_EQ(snapshot(*model), before);
  d1.write_dataset("dense_1/bias:0", Tensor::zeros({8}));
  err = error_of<keras::IOError>([&] { keras::read_legacy_weights(reopened(), *model); });
  EXPECT_TRUE(contains(err, "/dense_1/dense_1/bias:0: expected shape (3,) for 'dense_1/bias'")) << err;
  EXPECT_EQ(snapshot(*model), before);

  auto k1 = h5::File::create_in_memory("keras1.h5");
  auto k1root = k1.root();
  k1root.write_string_list_attr("layer_names", {});
  err = error_of<keras::IOError>([&] { keras::read_legacy_weights(k1root, *model); });
  EXPECT_TRUE(contains(err, "Keras 1")) << err;
  auto empty = h5::File::create_in_memory("empty.h5");
  err = error_of<keras::IOError>([&] { keras::read_legacy_weights(empty.root(), *model); });
  EXPECT_TRUE(contains(err, "empty.h5: /: expected Keras HDF5 layer weights")) << err;
}

TEST(LegacyWeights, OptimizerWeightsRoundTrip) {
  auto a = mlp();
  a->compile({.optimizer = opt::Adam({.learning_rate = 0.02}), .loss = "mse"});
  a->fit(keras::random::normal({16, 4}, 0, 1, uint64_t{1}), keras::random::normal({16, 3}, 0, 1, uint64_t{2}),
         {.batch_size = 8, .epochs = 1, .verbose = 0});
  auto file = h5::File::create_in_memory("full.h5");
  auto group = file.root().create_group("optimizer_weights");
  keras::write_legacy_optimizer_weights(group, *a->optimizer());
  auto back = h5::File::open_image(file.image(), "full.h5").root().open_group("optimizer_weights");
  // tf_keras's layout: no learning rate (training_config holds it), slots named by class.
  const auto names = back.read_string_list_attr("weight_names");
  EXPECT_EQ(names[0], "iteration:0");
  EXPECT_EQ(names[1], "Adam/dense_kernel_momentum:0");
  EXPECT_EQ(names.size(), a->optimizer()->variables().size() - 1);

  auto b = mlp();
  b->compile({.optimizer = opt::Adam({.learning_rate = 0.02}), .loss = "mse"});
  auto report = keras::read_legacy_optimizer_weights(back, *b->optimizer(), *b);
  EXPECT_EQ(snapshot(a->optimizer()->variables()), snapshot(b->optimizer()->variables()));
  EXPECT_EQ(b->optimizer()->iterations(), 2);
  ASSERT_EQ(report.missing.size(), 1u) << report.str();
  EXPECT_EQ(report.missing[0], "adam/learning_rate");

  auto c = mlp();
  c->compile({.optimizer = opt::SGD({.momentum = 0.5}), .loss = "mse"});
  std::string err = error_of<keras::IOError>([&] { keras::read_legacy_optimizer_weights(back, *c->optimizer(), *c); });
  EXPECT_TRUE(contains(err, "full.h5: /optimizer_weights: expected 6 weight(s) for optimizer 'SGD'")) << err;
  EXPECT_EQ(c->optimizer()->iterations(), 0);
}

TEST(LegacyWeights, ReadsFilesWrittenByTfKeras) {
  Tensor x;
  std::vector<float> want = predict_expected("tf_keras", &x);
  // save_weights: the layer weights at the root, the nested model in trainable-first order.
  auto a = nested();
  auto report = keras::load_weights_h5(*a, kData + "tf_keras_nested.h5");
  EXPECT_EQ(report.loaded.size(), a->weights().size()) << report.str();
  expect_close(a->predict(x).to_vector<float>(), want);
  // model.save: the same under /model_weights, and optimizer state without a learning rate.
  auto b = nested();
  b->compile({.optimizer = opt::Adam({.learning_rate = 0.01}), .loss = "mse"});
  keras::load_weights_h5(*b, kData + "tf_keras_nested_full.h5");
  expect_close(b->predict(x).to_vector<float>(), want);
  auto root = h5::File::open(kData + "tf_keras_nested_full.h5").root();
  report = keras::read_legacy_optimizer_weights(root.open_group("optimizer_weights"), *b->optimizer(), *b);
  EXPECT_EQ(b->optimizer()->iterations(), 2);
  EXPECT_EQ(report.missing, (std::vector<std::string>{"adam/learning_rate"}));
  // by_name against the saved names.
  auto c = nested();
  report = keras::read_legacy_weights(root, *c, {.by_name = true, .name_map = {{"input_2", "input_layer"}}});
  expect_close(c->predict(x).to_vector<float>(), want);
  EXPECT_TRUE(report.skipped.empty()) << report.str();
}
