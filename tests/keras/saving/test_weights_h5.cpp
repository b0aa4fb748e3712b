// The Keras 3 weights tree (.weights.h5): layout, round trips, matching modes, all-or-nothing
// errors, optimizer state, and a file written by real Keras 3
// (tests/data/hdf5/make_keras_weights.py).
#include <gtest/gtest.h>

#include <fstream>

#include "keras/utils/file_util.h"
#include "keras/saving/hdf5/hdf5.h"
#include "keras/saving/weights_h5.h"
#include "keras/saving/weights_h5_file.h"
#include "support/weights_models.h"

using namespace weights_test;
namespace h5 = keras::hdf5;
namespace opt = keras::optimizers;

namespace {

const std::string kData = std::string(KERAS_SOURCE_DIR) + "/tests/data/hdf5/";

h5::File tree_of(const keras::Layer& model, const opt::Optimizer* optimizer = nullptr) {
  auto file = h5::File::create_in_memory("model.weights.h5");
  auto root = file.root();
  keras::write_weights_tree(root, model, optimizer);
  return file;
}

// Reads `file` back from its bytes (a fresh file handle, as after saving).
h5::Group reopen(const h5::File& file) { return h5::File::open_image(file.image(), file.name()).root(); }

void train_steps(Model& model, int steps) {
  Tensor x = keras::random::normal({8 * steps, 4}, 0, 1, uint64_t{3});
  Tensor y = keras::random::normal({8 * steps, 3}, 0, 1, uint64_t{4});
  model.fit(x, y, {.batch_size = 8, .epochs = 1, .verbose = 0});
}

}  // namespace

TEST(WeightsTree, LayoutFollowsKeras) {
  auto model = nested();
  auto root = reopen(tree_of(*model));
  EXPECT_EQ(root.open_group("vars").read_string_attr("name"), "outer");
  EXPECT_EQ(root.open_group("layers").children(), (std::vector<std::string>{"dense", "input_layer", "sequential"}));
  EXPECT_TRUE(root.open_group("layers/input_layer/vars").children().empty());  // Functional keeps its InputLayer
  EXPECT_EQ(root.open_group("layers/dense/vars").read_string_attr("name"), "head");
  EXPECT_EQ(root.open_group("layers/sequential/vars").read_string_attr("name"), "inner");
  // The nested Sequential leaves its InputLayer out; keys are class names, deduplicated in order.
  EXPECT_EQ(root.open_group("layers/sequential/layers").children(),
            (std::vector<std::string>{"batch_normalization", "dense", "dense_1"}));
  EXPECT_EQ(root.open_dataset("layers/sequential/layers/dense/vars/0").shape(), (keras::Shape{4, 3}));
  EXPECT_EQ(root.open_dataset("layers/sequential/layers/dense_1/vars/0").shape(), (keras::Shape{3, 2}));
  // Creation order within a layer, frozen or not.
  auto bn = root.open_group("layers/sequential/layers/batch_normalization/vars");
  EXPECT_EQ(bn.children().size(), 4u);
  auto bn_layer = std::dynamic_pointer_cast<Model>(model->get_layer("inner"))->layers()[1];
  auto bn_vars = bn_layer->weights();
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(bn.open_dataset(std::to_string(i)).read().to_vector<float>(), bn_vars[i].value().to_vector<float>());
  EXPECT_FALSE(root.exists("optimizer"));
}

TEST(WeightsTree, MlpAndCnnRoundTripBitForBit) {
  auto dir = temp_dir("weights_h5");
  for (int which = 0; which < 2; ++which) {
    auto a = which == 0 ? mlp() : cnn();
    auto b = which == 0 ? mlp("other") : cnn("other");
    randomize(*a, 1);
    randomize(*b, 2);
    ASSERT_NE(snapshot(*a), snapshot(*b));
    std::string path = (dir / ("m" + std::to_string(which) + ".weights.h5")).string();
    keras::save_weights_h5(*a, path);
    auto report = keras::load_weights_h5(*b, path);
    EXPECT_EQ(snapshot(*a), snapshot(*b));
    EXPECT_EQ(report.loaded.size(), a->weights().size());
    EXPECT_TRUE(report.skipped.empty()) << report.str();
    EXPECT_TRUE(report.missing.empty()) << report.str();
  }
  // Weightless layers get empty vars groups; BatchNormalization keeps its four arrays.
  auto root = h5::File::open((dir / "m1.weights.h5").string()).root();
  EXPECT_TRUE(root.open_group("layers/max_pooling2d/vars").children().empty());
  EXPECT_TRUE(root.open_group("layers/flatten/vars").children().empty());
  EXPECT_EQ(root.open_group("layers/batch_normalization/vars").children().size(), 4u);
  std::filesystem::remove_all(dir);
}

TEST(WeightsTree, NestedFrozenModelLoadsByStructureNotNames) {
  auto a = nested();
  randomize(*a, 3);
  auto file = tree_of(*a);
  // Other layer names and other freezing: the tree is keyed by class and position only.
  auto b = nested("renamed");
  b->get_layer("head")->set_name("classifier");
  std::dynamic_pointer_cast<Model>(b->get_layer("inner"))->layers()[0]->set_trainable(true);
  randomize(*b, 4);
  keras::read_weights_tree(reopen(file), *b);
  EXPECT_EQ(snapshot(*a), snapshot(*b));
}

TEST(WeightsTree, ByNameWithNameMapAndReport) {
  auto a = mlp();
  a->layers()[0]->set_name("encoder");
  a->layers()[1]->set_name("decoder");
  randomize(*a, 5);
  auto file = tree_of(*a);
  // Target: the encoder under another name, plus a layer the file does not have.
  auto b = std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {4}}), L::Dense({.units = 8, .name = "enc"}),
                                   L::Dense({.units = 5, .name = "fresh"})});
  randomize(*b, 6);
  auto before = snapshot(*b);
  keras::LoadWeightsOptions options{.by_name = true, .name_map = {{"encoder", "enc"}}};
  auto report = keras::read_weights_tree(reopen(file), *b, nullptr, options);
  auto after = snapshot(*b);
  EXPECT_EQ(after[0], snapshot(*a)[0]);
  EXPECT_EQ(after[1], snapshot(*a)[1]);
  EXPECT_EQ(after[2], before[2]);
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"enc/kernel", "enc/bias"}));
  EXPECT_EQ(report.missing, (std::vector<std::string>{"fresh/kernel", "fresh/bias"}));
  ASSERT_EQ(report.skipped.size(), 1u) << report.str();
  EXPECT_EQ(report.skipped[0].first, "/layers/dense_1/vars");
  EXPECT_TRUE(contains(report.skipped[0].second, "decoder")) << report.str();
  EXPECT_TRUE(contains(report.str(), "unchanged fresh/kernel")) << report.str();
  // name_map means nothing without by_name.
  EXPECT_THROW(keras::read_weights_tree(reopen(file), *b, nullptr, {.name_map = {{"a", "b"}}}), keras::ValueError);
}

TEST(WeightsTree, StrictRefusesALoadThatLeavesAnythingOverAndChangesNothing) {
  auto a = mlp();
  randomize(*a, 5);
  auto file = tree_of(*a);
  // The file's layers and the model's match only in part: by name, "dense" loads, "dense_1" of the
  // file has no partner and the model's "fresh" gets no value.
  auto b = std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {4}}), L::Dense({.units = 8, .name = "dense"}),
                                   L::Dense({.units = 5, .name = "fresh"})});
  randomize(*b, 6);
  auto before = snapshot(*b);
  std::string err = error_of<keras::IOError>(
      [&] { keras::read_weights_tree(reopen(file), *b, nullptr, {.by_name = true, .strict = true}); });
  EXPECT_TRUE(contains(err, "model.weights.h5")) << err;
  EXPECT_TRUE(contains(err, "skipped entries: 1, unmatched weights: 2; nothing was loaded")) << err;
  EXPECT_TRUE(contains(err, "skipped /layers/dense_1/vars")) << err;
  EXPECT_TRUE(contains(err, "unchanged fresh/kernel")) << err;
  EXPECT_EQ(snapshot(*b), before);
  // The same load without strict takes what fits.
  auto report = keras::read_weights_tree(reopen(file), *b, nullptr, {.by_name = true});
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"dense/kernel", "dense/bias"}));
  // Strict and complete: loads as usual.
  auto c = mlp();
  report = keras::read_weights_tree(reopen(file), *c, nullptr, {.strict = true});
  EXPECT_EQ(snapshot(*c), snapshot(*a));
  EXPECT_TRUE(report.skipped.empty() && report.missing.empty()) << report.str();
  // A compiled model whose optimizer is built but absent from the file: its state is unmatched.
  auto d = mlp();
  d->compile({.optimizer = "adam", .loss = "mse"});
  d->optimizer()->build(d->trainable_weights());
  err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(file), *d, d->optimizer(), {.strict = true}); });
  EXPECT_TRUE(contains(err, "unchanged adam/iteration")) << err;
}

TEST(WeightsTree, MismatchesFailAndLeaveTheModelUnchanged) {
  auto a = mlp();
  randomize(*a, 7);
  auto file = tree_of(*a);
  auto wide = std::make_shared<Sequential>(
      std::vector<keras::LayerPtr>{L::InputLayer({.shape = {4}}), L::Dense({.units = 8}), L::Dense({.units = 5})});
  randomize(*wide, 8);
  auto before = snapshot(*wide);
  std::string err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(file), *wide); });
  EXPECT_TRUE(contains(err, "model.weights.h5: /layers/dense_1/vars/0: expected shape (8, 5)")) << err;
  EXPECT_TRUE(contains(err, "got (8, 3)")) << err;
  EXPECT_EQ(snapshot(*wide), before);  // the first layer matched, yet nothing was assigned

  // skip_mismatch loads the rest and reports the skipped object.
  auto report = keras::read_weights_tree(reopen(file), *wide, nullptr, {.skip_mismatch = true});
  auto after = snapshot(*wide);
  EXPECT_EQ(after[0], snapshot(*a)[0]);
  EXPECT_EQ(after[2], before[2]);
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].first, "/layers/dense_1/vars");
  EXPECT_EQ(report.missing, (std::vector<std::string>{"dense_1/kernel", "dense_1/bias"}));

  // A missing dataset and a missing group, each naming the entry.
  auto handmade = h5::File::create_in_memory("hand.weights.h5");
  auto root = handmade.root();
  auto v = root.create_group("layers/dense/vars");
  v.write_dataset("0", Tensor::zeros({4, 8}));
  v.write_dataset("2", Tensor::zeros({8}));
  err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(handmade), *wide); });
  EXPECT_TRUE(contains(err, "hand.weights.h5: /layers/dense/vars/1: expected a dataset")) << err;
  EXPECT_EQ(snapshot(*wide), after);
  root.open_group("layers/dense/vars").write_dataset("1", Tensor::zeros({8}));
  root.open_group("layers/dense/vars").write_dataset("extra", Tensor::zeros({8}));
  err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(handmade), *wide); });
  EXPECT_TRUE(contains(err, "/layers/dense/vars: expected 2 variable(s) for Layer 'dense' (Dense) (kernel, bias), got 4"))
      << err;
  auto only_first = h5::File::create_in_memory("first.weights.h5");
  auto r2 = only_first.root();
  auto v2 = r2.create_group("layers/dense/vars");
  v2.write_dataset("0", Tensor::zeros({4, 8}));
  v2.write_dataset("1", Tensor::zeros({8}));
  err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(only_first), *wide); });
  EXPECT_TRUE(contains(err, "first.weights.h5: /layers/dense_1/vars: expected a group with 2 variable(s)")) << err;
  EXPECT_EQ(snapshot(*wide), after);
}

TEST(WeightsTree, OlderContainerNameAndUnbuiltModels) {
  // Keras 2.13-2.15 called the layer containers `_layer_checkpoint_dependencies`.
  auto a = mlp();
  randomize(*a, 11);
  auto file = h5::File::create_in_memory("old.weights.h5");
  auto root = file.root();
  auto ws = a->weights();
  for (int layer = 0; layer < 2; ++layer) {
    auto vars = root.create_group(std::string("_layer_checkpoint_dependencies/") + (layer ? "dense_1" : "dense") + "/vars");
    vars.write_dataset("0", ws[2 * layer].value());
    vars.write_dataset("1", ws[2 * layer + 1].value());
  }
  auto b = mlp();
  auto report = keras::read_weights_tree(reopen(file), *b);
  EXPECT_EQ(snapshot(*a), snapshot(*b));
  EXPECT_TRUE(report.skipped.empty()) << report.str();
  // A model without weights yet is told to build first.
  auto unbuilt = std::make_shared<Sequential>(std::vector<keras::LayerPtr>{L::Dense({.units = 8}), L::Dense({.units = 3})});
  std::string err = error_of<keras::IOError>([&] { keras::read_weights_tree(reopen(tree_of(*a)), *unbuilt); });
  EXPECT_TRUE(contains(err, "expected 0 variable(s) for Layer 'dense' (Dense), got 2")) << err;
  EXPECT_TRUE(contains(err, "Input")) << err;
}

TEST(WeightsTree, OptimizerStateRoundTrip) {
  auto dir = temp_dir("weights_h5_opt");
  std::string path = (dir / "ckpt.weights.h5").string();
  auto a = mlp();
  a->compile({.optimizer = opt::Adam({.learning_rate = 0.01}), .loss = "mse"});
  train_steps(*a, 3);
  keras::save_weights_h5(*a, path);
  auto root = h5::File::open(path).root();
  ASSERT_TRUE(root.has_group("optimizer/vars"));
  EXPECT_EQ(root.open_group("optimizer/vars").read_string_attr("name"), "adam");
  EXPECT_EQ(root.open_group("optimizer/vars").children().size(), a->optimizer()->variables().size());

  auto b = mlp();
  b->compile({.optimizer = opt::Adam({.learning_rate = 0.5}), .loss = "mse"});
  ASSERT_FALSE(b->optimizer()->built());
  auto report = keras::load_weights_h5(*b, path);
  EXPECT_TRUE(b->optimizer()->built());
  EXPECT_EQ(snapshot(*a), snapshot(*b));
  EXPECT_EQ(snapshot(a->optimizer()->variables()), snapshot(b->optimizer()->variables()));
  EXPECT_EQ(b->optimizer()->iterations(), 3);
  EXPECT_NEAR(b->optimizer()->learning_rate(), 0.01, 1e-9);
  EXPECT_TRUE(report.skipped.empty()) << report.str();

  // A different optimizer layout is an error, and then neither weights nor state change.
  auto c = mlp();
  c->compile({.optimizer = opt::SGD({.learning_rate = 0.1, .momentum = 0.9}), .loss = "mse"});
  randomize(*c, 9);
  auto before = snapshot(*c);
  std::string err = error_of<keras::IOError>([&] { keras::load_weights_h5(*c, path); });
  EXPECT_TRUE(contains(err, "/optimizer/vars: expected 6 variable(s) for optimizer 'SGD'")) << err;
  EXPECT_EQ(snapshot(*c), before);
  EXPECT_EQ(c->optimizer()->iterations(), 0);
  // An uncompiled model takes the weights and reports the state it had nowhere to put.
  auto d = mlp();
  report = keras::load_weights_h5(*d, path);
  EXPECT_EQ(snapshot(*a), snapshot(*d));
  ASSERT_EQ(report.skipped.size(), 1u);
  EXPECT_EQ(report.skipped[0].first, "/optimizer/vars");
  std::filesystem::remove_all(dir);
}

TEST(WeightsTree, BadFilesGiveIOErrorAndLeaveTheModelUnchanged) {
  auto dir = temp_dir("weights_h5_bad");
  auto a = mlp();
  randomize(*a, 10);
  std::string path = (dir / "w.weights.h5").string();
  keras::save_weights_h5(*a, path);
  std::string bytes = keras::read_file_bytes(path);
  auto b = mlp();
  auto before = snapshot(*b);
  std::string cut = (dir / "cut.weights.h5").string();
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  std::string err = error_of<keras::IOError>([&] { keras::load_weights_h5(*b, cut); });
  EXPECT_TRUE(contains(err, "cut.weights.h5")) << err;
  err = error_of<keras::IOError>([&] { keras::load_weights_h5(*b, (dir / "none.weights.h5").string()); });
  EXPECT_TRUE(contains(err, "none.weights.h5")) << err;
  EXPECT_EQ(snapshot(*b), before);
  EXPECT_THROW(keras::save_weights_h5(*a, (dir / "w.keras").string()), keras::ValueError);
  // A failed save leaves the previous file intact.
  EXPECT_THROW(keras::save_weights_h5(*a, (dir / "missing_dir" / "w.weights.h5").string()), keras::IOError);
  std::filesystem::remove_all(dir);
}

TEST(WeightsTree, ReadsAFileWrittenByKeras3) {
  auto model = nested();
  model->compile({.optimizer = opt::Adam({.learning_rate = 0.01}), .loss = "mse"});
  auto report = keras::load_weights_h5(*model, kData + "keras3_nested.weights.h5");
  EXPECT_EQ(report.loaded.size(), model->weights().size() + model->optimizer()->variables().size()) << report.str();
  EXPECT_TRUE(report.skipped.empty()) << report.str();
  EXPECT_EQ(model->optimizer()->iterations(), 2);
  auto expected = h5::File::open(kData + "nested_expected.h5").root();
  Tensor x = expected.open_dataset("x").read({3, 4});
  std::vector<float> want = expected.open_dataset("keras3").read({3, 2}).to_vector<float>();
  std::vector<float> got = model->predict(x).to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
}
