// keras::applications::imagenet_utils::decode_predictions against real Keras 3.15.1. The class
// index is written by the test (Keras's format, 1000 entries {"i": ["n%08d" % (1440764 + i),
// "class_i"]}) into a temporary KERAS_HOME/models, where Keras's get_file keeps
// imagenet_class_index.json. The expected results are what Keras printed with that index:
//   i = np.arange(1000)
//   p = np.stack([(i*37 % 1000)/1000, ((i*91 + 5) % 1000)/1000*0.5]).astype("float32")
//   imagenet_utils.CLASS_INDEX = {str(i): ["n%08d" % (1440764 + i), "class_%d" % i] for i in range(1000)}
//   imagenet_utils.decode_predictions(p, top=3)
//   p64 = p.astype("float64"); p64[1, 7] = 0.5 + 1e-12; decode_predictions(p64, top=2)
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include <unistd.h>

#include "keras/keras.h"
#include "tests/support/expect_error.h"

using namespace keras;
using keras::applications::imagenet_utils::decode_predictions;
using keras::applications::imagenet_utils::DecodedPrediction;
using keras::testing::expect_error;

namespace {

namespace fs = std::filesystem;

// The class index in Keras's format, `classes` entries "0".."classes-1".
void write_index(const fs::path& file, int classes, const std::string& prefix = "class_") {
  nlohmann::json index = nlohmann::json::object();
  for (int i = 0; i < classes; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "n%08d", 1440764 + i);
    index[std::to_string(i)] = {id, prefix + std::to_string(i)};
  }
  fs::create_directories(file.parent_path());
  std::ofstream(file) << index.dump();
}

class DecodePredictions : public ::testing::Test {
 protected:
  void SetUp() override {
    home_ = fs::temp_directory_path() / ("keras_decode_" + std::to_string(::getpid()));
    write_index(home_ / "models" / "imagenet_class_index.json", 1000);
    ::setenv("KERAS_HOME", home_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("KERAS_HOME");
    fs::remove_all(home_);
  }
  // The two rows of the header's `p`.
  static Tensor keras_preds(DType dtype) {
    std::vector<double> v;
    for (int row = 0; row < 2; ++row)
      for (int i = 0; i < 1000; ++i)
        v.push_back(row == 0 ? (i * 37 % 1000) / 1000.0 : ((i * 91 + 5) % 1000) / 1000.0 * 0.5);
    return Tensor::from_vector(v, {2, 1000}).astype(DType::float32).astype(dtype);
  }
  fs::path home_;
};

}  // namespace

TEST_F(DecodePredictions, TopClassesAsKeras) {
  const auto got = decode_predictions(keras_preds(DType::float32), 3);
  const std::vector<std::vector<DecodedPrediction>> keras = {
      {{"n01440791", "class_27", 0.9990000128746033},
       {"n01440818", "class_54", 0.9980000257492065},
       {"n01440845", "class_81", 0.996999979019165}},
      {{"n01441698", "class_934", 0.49950000643730164},
       {"n01441687", "class_923", 0.49900001287460327},
       {"n01441676", "class_912", 0.4984999895095825}}};
  EXPECT_EQ(got, keras);  // scores exactly: float32 widened
  EXPECT_EQ(decode_predictions(keras_preds(DType::float32)).at(1).size(), 5u);  // Keras's default top
  // Every family module exports it, as Keras's do.
  EXPECT_EQ(applications::nasnet::decode_predictions(keras_preds(DType::float32), 3), keras);
  EXPECT_EQ(applications::inception_resnet_v2::decode_predictions(keras_preds(DType::float32), 3), keras);
  namespace a = applications;
  using Decode = std::vector<std::vector<DecodedPrediction>> (*)(const Tensor&, int64_t);
  const std::initializer_list<Decode> families = {
      &a::convnext::decode_predictions, &a::densenet::decode_predictions, &a::efficientnet::decode_predictions,
      &a::efficientnet_v2::decode_predictions, &a::inception_v3::decode_predictions,
      &a::mobilenet::decode_predictions, &a::mobilenet_v2::decode_predictions,
      &a::mobilenet_v3::decode_predictions, &a::resnet::decode_predictions, &a::resnet50::decode_predictions,
      &a::resnet_v2::decode_predictions, &a::vgg16::decode_predictions, &a::vgg19::decode_predictions,
      &a::xception::decode_predictions};
  for (Decode decode : families)
    EXPECT_EQ((*decode)(keras_preds(DType::float32), 3), keras);
}

TEST_F(DecodePredictions, Float64ScoresKeepTheirPrecision) {
  Tensor p = keras_preds(DType::float64).contiguous().clone();
  p.data<double>()[1000 + 7] = 0.5 + 1e-12;
  const auto got = decode_predictions(p, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (std::vector<DecodedPrediction>{{"n01440791", "class_27", 0.9990000128746033},
                                                    {"n01440818", "class_54", 0.9980000257492065}}));
  EXPECT_EQ(got[1], (std::vector<DecodedPrediction>{{"n01440771", "class_7", 0.5 + 1e-12},
                                                    {"n01441698", "class_934", 0.49950000643730164}}));
}

// Equal scores come in ascending class order (Keras's order among them is NumPy's unstable
// argsort's), and which of them make the top follows the same rule.
TEST_F(DecodePredictions, TiesInClassOrder) {
  Tensor p = Tensor::zeros({2, 1000}).contiguous();
  float* d = p.data<float>();
  d[3] = 0.5f;
  d[900] = d[17] = d[5] = 0.25f;
  const auto got = decode_predictions(p, 3);
  EXPECT_EQ(got[0], (std::vector<DecodedPrediction>{
                        {"n01440767", "class_3", 0.5}, {"n01440769", "class_5", 0.25}, {"n01440781", "class_17", 0.25}}));
  EXPECT_EQ(got[1][0].description, "class_0");  // an all-zero row
  EXPECT_EQ(got[1][2].description, "class_2");
}

TEST_F(DecodePredictions, TopBeyondTheClassesGivesAll) {
  const auto got = decode_predictions(keras_preds(DType::float32), 1500);
  ASSERT_EQ(got[0].size(), 1000u);
  std::set<std::string> ids;
  for (size_t k = 0; k < got[0].size(); ++k) {
    ids.insert(got[0][k].class_id);
    if (k > 0) EXPECT_GE(got[0][k - 1].score, got[0][k].score) << k;
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(got[0].back().score, 0.0);
}

TEST_F(DecodePredictions, ExplicitIndexPath) {
  const fs::path other = home_ / "elsewhere" / "index.json";
  write_index(other, 1000, "other_");
  const auto got = decode_predictions(keras_preds(DType::float32), {.top = 1, .class_index_path = other.string()});
  EXPECT_EQ(got[0], (std::vector<DecodedPrediction>{{"n01440791", "other_27", 0.9990000128746033}}));
}

TEST_F(DecodePredictions, Errors) {
  // Keras: "`decode_predictions` expects a batch of predictions (i.e. a 2D array of shape
  // (samples, 1000)). Received array with shape: (2, 999)"
  expect_error<ValueError>([] { decode_predictions(Tensor::zeros({2, 999})); },
                           {"decode_predictions", "(samples, 1000)", "(2, 999)"});
  expect_error<ValueError>([] { decode_predictions(Tensor::zeros({1000})); }, {"(samples, 1000)", "(1000,)"});
  expect_error<ValueError>([] { decode_predictions(Tensor::zeros({1, 1000}), 0); }, {"top >= 1", "got 0"});
  // The index is never downloaded: the error names where Keras keeps it and where it comes from.
  const fs::path missing = home_ / "empty";
  ::setenv("KERAS_HOME", missing.c_str(), 1);
  expect_error<IOError>([] { decode_predictions(Tensor::zeros({1, 1000})); },
                        {"decode_predictions", (missing / "models" / "imagenet_class_index.json").string(),
                         "https://storage.googleapis.com/download.tensorflow.org/data/imagenet_class_index.json"});
  const fs::path short_index = home_ / "short.json";
  write_index(short_index, 999);
  expect_error<ValueError>([&] { decode_predictions(Tensor::zeros({1, 1000}), {.class_index_path = short_index.string()}); },
                           {short_index.string(), "999 entries"});
  std::ofstream(home_ / "bad.json") << "{\"0\": [";
  expect_error<IOError>([&] { decode_predictions(Tensor::zeros({1, 1000}), {.class_index_path = (home_ / "bad.json").string()}); },
                        {"bad.json"});
}
