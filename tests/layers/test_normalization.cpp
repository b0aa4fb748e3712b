// Normalization (layers/normalization.h): the layer harness over its forms, outputs against values
// printed by real Keras 3.15.1, configs equal to the JSON Keras writes, adapt() against plain-loop
// statistics, and the errors Keras raises.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/ops.h"
#include "keras/keras.h"
#include "keras/saving/model_config.h"
#include "support/expect_error.h"
#include "support/layer_harness.h"

using namespace keras;
using keras::testing::expect_error;
using keras::testing::run_layer_harness;
namespace L = keras::layers;

namespace {

// x = np.arange(24, dtype="float32").reshape(2, 3, 4) * float32(0.37) - float32(2.0), each step
// rounded to float32 as numpy does.
Tensor sample_x() {
  return ops::add(ops::multiply(Tensor::arange(0, 24).view({2, 3, 4}), 0.37), -2.0);
}

void expect_close(const std::vector<float>& got, const std::vector<double>& want, const std::string& tag) {
  ASSERT_EQ(got.size(), want.size()) << tag;
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * std::abs(want[i]) + 1e-7) << tag << " [" << i << "]";
}

// Mean and biased variance of x (N, A, B) over every axis but `keep`, by plain loops in double.
std::pair<std::vector<double>, std::vector<double>> loop_moments(const std::vector<float>& x, Shape s, int keep) {
  std::vector<double> sum(s[keep], 0.0), sq(s[keep], 0.0);
  std::vector<int64_t> n(s[keep], 0);
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        int64_t idx[3] = {i, j, k};
        double v = x[(i * s[1] + j) * s[2] + k];
        sum[idx[keep]] += v;
        n[idx[keep]] += 1;
      }
  std::vector<double> mean(s[keep]);
  for (int64_t p = 0; p < s[keep]; ++p) mean[p] = sum[p] / n[p];
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        int64_t idx[3] = {i, j, k};
        double d = x[(i * s[1] + j) * s[2] + k] - mean[idx[keep]];
        sq[idx[keep]] += d * d;
      }
  for (int64_t p = 0; p < s[keep]; ++p) sq[p] /= n[p];
  return {mean, sq};
}

}  // namespace

// ---------------- the harness ----------------

TEST(NormalizationHarness, LearnedStatistics) {
  run_layer_harness({.name = "Normalization axis -1 (mean, variance, count weights)",
                     .make = [] { return LayerPtr(L::Normalization()); },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {{4}, {4}, {}},
                     .trainable_count = 0});
  run_layer_harness({.name = "Normalization axis (1, 2)",
                     .make = [] { return LayerPtr(L::Normalization({.axis = {1, 2}})); },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {{3, 4}, {3, 4}, {}},
                     .trainable_count = 0});
  run_layer_harness({.name = "Normalization axis None",
                     .make = [] { return LayerPtr(L::Normalization({.axis = {}})); },
                     .input_shape = {2, 5},
                     .weight_shapes = {{}, {}, {}},
                     .trainable_count = 0});
}

TEST(NormalizationHarness, GivenStatistics) {
  run_layer_harness({.name = "Normalization given mean/variance (no weights)",
                     .make = [] { return LayerPtr(L::Normalization({.mean = {1, 2, 3, 4}, .variance = {4, 9, 0.5, 2}})); },
                     .input_shape = {2, 3, 4},
                     .weight_shapes = {}});
  run_layer_harness({.name = "Normalization invert, scalar mean/variance",
                     .make = [] { return LayerPtr(L::Normalization({.axis = {}, .mean = 3.0, .variance = 2.0, .invert = true})); },
                     .input_shape = {3, 2},
                     .weight_shapes = {}});
}

// ---------------- outputs against real Keras ----------------

TEST(Normalization, OutputsMatchKeras) {
  Tensor x1 = ops::slice(sample_x(), {0, 0, 0}, {1, 3, 4});
  // keras.layers.Normalization(axis=-1, mean=[1., 2., 3., 4.], variance=[4., 9., 0., 1e-16])(x[:1]):
  // the last two columns divide by epsilon = 1e-7, not by sqrt(variance).
  expect_close(L::Normalization({.mean = {1, 2, 3, 4}, .variance = {4, 9, 0, 1e-16}})(x1).to_vector<float>(),
               {-1.5, -1.2100000381469727, -42600000.0, -48900000.0, -0.7599999904632568, -0.7166666984558105,
                -27800000.0, -34100000.0, -0.019999980926513672, -0.22333335876464844, -12999999.0, -19299998.0},
               "given");
  // Same with invert=True: mean + x * max(sqrt(variance), 1e-7).
  expect_close(L::Normalization({.mean = {1, 2, 3, 4}, .variance = {4, 9, 0, 1e-16}, .invert = true})(x1).to_vector<float>(),
               {-3.0, -2.8899998664855957, 2.999999761581421, 4.0, -0.039999961853027344, 1.5500000715255737, 3.0, 4.0,
                2.9200000762939453, 5.989999771118164, 3.000000238418579, 4.0},
               "invert");
  // axis=(1, 2) with a mean of shape (4,): aligned to the last kept axis, repeated along axis 1.
  expect_close(L::Normalization({.axis = {1, 2}, .mean = {1, -1, 0.5, 2}, .variance = {0.25, 4, 1, 2}})(x1).to_vector<float>(),
               {-6.0, -0.3149999976158142, -1.7599999904632568, -2.0435385704040527, -3.0399999618530273,
                0.42500001192092896, -0.2799999713897705, -0.9970204830169678, -0.07999992370605469, 1.1649999618530273,
                1.2000000476837158, 0.04949759691953659},
               "axis (1, 2)");
  // axis=None, mean=3.0, variance=2.0.
  expect_close(L::Normalization({.axis = {}, .mean = 3.0, .variance = 2.0})(x1).to_vector<float>(),
               {-3.535533905029297, -3.27390456199646, -3.012275218963623, -2.750645399093628, -2.489015817642212,
                -2.227386474609375, -1.965756893157959, -1.704127311706543, -1.4424978494644165, -1.18086838722229,
                -0.919238805770874, -0.657609224319458},
               "axis None");
}

TEST(Normalization, AdaptMatchesKerasAndPlainLoops) {
  Tensor x = sample_x();
  L::Normalization norm({.axis = {1}});
  norm->adapt(x);
  // layer = keras.layers.Normalization(axis=1); layer.adapt(x): weights and layer(x).
  expect_close(norm->weights()[0].value().to_vector<float>(), {0.7750000357627869, 2.254999876022339, 3.7350001335144043}, "mean");
  expect_close(norm->weights()[1].value().to_vector<float>(), {5.099525451660156, 5.09952449798584, 5.099525451660156}, "variance");
  EXPECT_EQ(norm->weights()[2].value().to_vector<int64_t>(), std::vector<int64_t>{0}) << "Keras 3's adapt leaves count";
  EXPECT_EQ(norm->weights()[2].dtype(), DType::int64);
  expect_close(norm(x).to_vector<float>(),
               {-1.228847861289978, -1.0650014877319336, -0.9011551737785339, -0.7373086810112, -1.2288479804992676,
                -1.0650014877319336, -0.9011551141738892, -0.7373086810112, -1.228847861289978, -1.0650016069412231,
                -0.9011551737785339, -0.7373086810112, 0.7373086810112, 0.9011550545692444, 1.0650016069412231,
                1.228847861289978, 0.737308919429779, 0.9011552333831787, 1.0650016069412231, 1.2288480997085571,
                0.7373086810112, 0.9011550545692444, 1.0650016069412231, 1.228847861289978},
               "adapted output");

  // Uneven batches combine to the statistics of all the data (plain loops), for every kept axis.
  for (int keep : {0, 1, 2}) {
    SCOPED_TRACE("keep axis " + std::to_string(keep));
    Tensor big = random::normal({5, 3, 4}, 1.5, 2.0, uint64_t{41});
    auto [mean, var] = loop_moments(big.to_vector<float>(), {5, 3, 4}, keep);
    L::Normalization whole({.axis = {keep}});
    whole->adapt(big);
    // Batches of 2, 2, 1 rows (axis 0 kept: every batch must have all 5 rows, so one batch).
    std::vector<Tensor> parts = keep == 0 ? std::vector<Tensor>{big}
                                          : std::vector<Tensor>{ops::slice(big, {0, 0, 0}, {2, 3, 4}),
                                                                ops::slice(big, {2, 0, 0}, {2, 3, 4}),
                                                                ops::slice(big, {4, 0, 0}, {1, 3, 4})};
    L::Normalization batched({.axis = {keep}});
    size_t at = 0;
    batched->adapt_batches([&]() -> std::optional<Tensor> {
      if (at == parts.size()) return std::nullopt;
      return parts[at++];
    });
    for (auto* layer : {&whole, &batched}) {
      expect_close((*layer)->weights()[0].value().to_vector<float>(), mean, "mean");
      expect_close((*layer)->weights()[1].value().to_vector<float>(), var, "variance");
    }
  }
}

TEST(Normalization, AdaptFromDataset) {
  Tensor x = random::normal({10, 4}, -1.0, 3.0, uint64_t{5});
  auto [mean, var] = loop_moments(x.to_vector<float>(), {10, 1, 4}, 2);
  // Batches of (x, y) pairs: x is used.
  L::Normalization a;
  adapt(*a, data::Dataset::from_tensor_slices({x, Tensor::zeros({10})}).batch(3));
  expect_close(a->weights()[0].value().to_vector<float>(), mean, "batched mean");
  expect_close(a->weights()[1].value().to_vector<float>(), var, "batched variance");
  // Elements of rank 1 are single samples (Keras batches them by 128 first).
  L::Normalization b;
  adapt(*b, data::Dataset::from_tensor_slices({x}));
  EXPECT_EQ(b->weights()[0].shape(), Shape{4});
  expect_close(b->weights()[0].value().to_vector<float>(), mean, "unbatched mean");
  expect_close(b->weights()[1].value().to_vector<float>(), var, "unbatched variance");
  expect_error<ValueError>([] { L::Normalization c; adapt(*c, data::Dataset::from_tensor_slices({Tensor::zeros({4, 2})}).take(0)); },
                           {"adapt(Dataset)", "empty dataset"});
}

// ---------------- configs: the JSON Keras writes ----------------

namespace {
json dtype_policy() {
  return json::parse(R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null})");
}
// The entry serialize_model writes for `layer` called on Input(shape), without its inbound_nodes.
json serialized_entry(LayerPtr layer, const Shape& shape) {
  auto in = L::Input(shape);
  Model model(in, (*layer)(in));
  json entry = serialize_model(model)["config"]["layers"][1];
  entry.erase("inbound_nodes");
  entry.erase("name");
  return entry;
}
}  // namespace

TEST(NormalizationConfig, KerasJsonRoundTrips) {
  // EfficientNetB0.k3.json: the adapted layer of EfficientNet (axis written as [3]).
  json efficientnet = json::parse(R"({"module": "keras.layers", "class_name": "Normalization", "config": {"name": "normalization",
      "trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
      "registered_name": null}, "axis": [3], "invert": false, "mean": null, "variance": null}, "registered_name": null,
      "build_config": {"input_shape": [null, 32, 32, 3]}})");
  // ConvNeXtTiny.k3.json: ImageNet statistics in the config.
  json convnext = json::parse(R"({"module": "keras.layers", "class_name": "Normalization", "config": {
      "name": "convnext_tiny_prestem_normalization", "trainable": true, "dtype": {"module": "keras", "class_name":
      "DTypePolicy", "config": {"name": "float32"}, "registered_name": null}, "axis": [-1], "invert": false,
      "mean": [123.675, 116.28, 103.53], "variance": [3409.9760250000004, 3262.6944000000003, 3291.890625]},
      "registered_name": null, "build_config": {"input_shape": [null, 32, 32, 3]}})");
  for (const json& want : {efficientnet, convnext}) {
    json config = want["config"];
    config["dtype"] = "float32";  // the tf_keras form (EfficientNetV2B0.k2.json) reads the same
    for (const json& c : {want["config"], config}) {
      LayerPtr layer = layer_from_config("Normalization", c);
      EXPECT_EQ(serialized_entry(layer, {32, 32, 3}), want);
    }
  }
  // Scalars, nested lists and axis=None (written as []), as Keras 3 writes them.
  json scalar = {{"name", "n"}, {"trainable", true}, {"dtype", dtype_policy()}, {"axis", json::array()},
                 {"invert", true}, {"mean", 3.0}, {"variance", 2.0}};
  EXPECT_EQ(serialized_entry(layer_from_config("Normalization", scalar), {2})["config"], scalar);
  json nested = scalar;
  nested["axis"] = {1, 2};
  nested["mean"] = json::parse("[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]");
  nested["variance"] = json::parse("[[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]");
  EXPECT_EQ(serialized_entry(layer_from_config("Normalization", nested), {3, 2})["config"], nested);
  // axis as a bare int or null (Keras's constructor arguments) reads as [int] / [].
  EXPECT_EQ(layer_from_config("Normalization", {{"axis", 2}})->get_config()["axis"], json::array({2}));
  EXPECT_EQ(layer_from_config("Normalization", {{"axis", nullptr}})->get_config()["axis"], json::array());
}

// ---------------- errors ----------------

TEST(NormalizationErrors, ConstructorAsKeras) {
  expect_error<ValueError>([] { L::Normalization({.mean = {1, 2}}); }, {"mean and variance given together", "variance none"});
  expect_error<ValueError>([] { L::Normalization({.mean = {1, 2}, .variance = {1, 2, 3}}); },
                           {"mean and variance of one shape", "mean (2,)", "variance (3,)"});
  expect_error<ValueError>([] { L::Normalization({.axis = {-1}, .mean = L::NormalizationValue({1, 2, 3, 4}, {2, 2}),
                                                   .variance = L::NormalizationValue({1, 2, 3, 4}, {2, 2})}); },
                           {"rank <= 1", "(2, 2)"});
  expect_error<ValueError>([] { layer_from_config("Normalization", {{"axis", "last"}}); }, {"'axis'", "\"last\""});
  expect_error<ValueError>([] { layer_from_config("Normalization", {{"mean", json::parse("[[1, 2], [3]]")}, {"variance", 1}}); },
                           {"'mean'", "rectangular"});
}

TEST(NormalizationErrors, InputsThatDoNotFit) {
  // Axis outside [-rank, rank), repeated, or of unknown extent.
  expect_error<ShapeError>([] { L::Normalization({.axis = {3}})(Tensor::zeros({2, 4})); }, {"axis 3", "(2, 4)"});
  expect_error<ShapeError>([] { L::Normalization({.axis = {1, -1}})(Tensor::zeros({2, 4})); }, {"distinct axes"});
  expect_error<ShapeError>([] { L::Normalization({.axis = {0}})(L::Input({4})); }, {"known extent on kept axis 0", "(None, 4)"});
  // Built for (None, 4): another last extent or rank is refused, at call and at adapt.
  L::Normalization norm;
  norm(Tensor::zeros({2, 4}));
  expect_error<ShapeError>([&] { norm(Tensor::zeros({2, 5})); }, {"extent 4 on kept axis 1", "(2, 5)"});
  expect_error<ShapeError>([&] { norm->adapt(Tensor::zeros({2, 3, 4})); }, {"adapt", "(2, 3, 4)", "rank 2"});
  // Given statistics that do not broadcast onto the kept extents (Keras fails in build too).
  expect_error<ValueError>([] { L::Normalization({.mean = {1, 2}, .variance = {1, 2}})(Tensor::zeros({2, 3})); },
                           {"broadcast onto the kept extents (3,)", "got shape (2,)"});
  // adapt() on a layer given its statistics, or with no data.
  expect_error<StateError>([] { L::Normalization({.mean = 0.0, .variance = 1.0})->adapt(Tensor::zeros({2, 3})); },
                           {"adapt", "given mean and variance"});
  expect_error<ValueError>([] { L::Normalization()->adapt_batches([] { return std::optional<Tensor>(); }); },
                           {"adapt", "at least one non-empty batch"});
}
