#include <gtest/gtest.h>

#include <cmath>

#include "layers/initializers.h"

using namespace keras;
namespace init = keras::initializers;

namespace {

struct Stats {
  double mean = 0, std = 0, min = 1e300, max = -1e300;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  auto v = t.to_vector<double>();
  for (double x : v) s.mean += x, s.min = std::min(s.min, x), s.max = std::max(s.max, x);
  s.mean /= v.size();
  for (double x : v) s.std += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(s.std / v.size());
  return s;
}

const Shape kShape{200, 300};  // fan_in 200, fan_out 300, fan_avg 250

// Uniform in [-limit, limit]: std = limit / sqrt(3).
void expect_uniform(const Initializer& f, double limit) {
  SCOPED_TRACE(f.class_name());
  Tensor t = f(kShape);
  EXPECT_EQ(t.shape(), kShape);
  EXPECT_EQ(t.dtype(), DType::float32);
  Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, 0.0, 0.02 * limit);
  EXPECT_NEAR(s.std, limit / std::sqrt(3.0), 0.02 * limit);
  EXPECT_GE(s.min, -limit);
  EXPECT_LE(s.max, limit);
  EXPECT_LT(s.min, -0.99 * limit);
  EXPECT_GT(s.max, 0.99 * limit);
}

// Truncated normal whose realised std is `stddev`, truncated at 2 * stddev / 0.8796...
void expect_truncated(const Initializer& f, double stddev, double raw_stddev) {
  SCOPED_TRACE(f.class_name());
  Stats s = stats_of(f(kShape));
  EXPECT_NEAR(s.mean, 0.0, 0.02 * stddev);
  EXPECT_NEAR(s.std, stddev, 0.02 * stddev);
  EXPECT_GE(s.min, -2 * raw_stddev * 1.0001);
  EXPECT_LE(s.max, 2 * raw_stddev * 1.0001);
  EXPECT_LT(s.min, -1.9 * raw_stddev);
}

constexpr double kTruncStd = 0.87962566103423978;

}  // namespace

TEST(Initializers, ComputeFans) {
  EXPECT_EQ(init::compute_fans({}), (std::pair<double, double>{1, 1}));
  EXPECT_EQ(init::compute_fans({7}), (std::pair<double, double>{7, 7}));
  EXPECT_EQ(init::compute_fans({200, 300}), (std::pair<double, double>{200, 300}));
  EXPECT_EQ(init::compute_fans({3, 3, 16, 32}), (std::pair<double, double>{144, 288}));
  EXPECT_EQ(init::compute_fans({5, 4, 8}), (std::pair<double, double>{20, 40}));
}

// Keras 3.15's input_axes / output_axes (values from keras.src.initializers compute_fans): used
// only when both are given; negative axes count from the end.
TEST(Initializers, ComputeFansOverChosenAxes) {
  EXPECT_EQ(init::compute_fans({3, 3, 16, 32}, std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{3}),
            (std::pair<double, double>{144, 32}));
  EXPECT_EQ(init::compute_fans({4, 5, 6}, std::vector<int64_t>{-1}, std::vector<int64_t>{0, 1}),
            (std::pair<double, double>{6, 20}));
  EXPECT_EQ(init::compute_fans({4, 5, 6}, std::vector<int64_t>{0}, std::nullopt), (std::pair<double, double>{20, 24}));
  EXPECT_THROW(init::compute_fans({4, 5}, std::vector<int64_t>{2}, std::vector<int64_t>{0}), ValueError);
  // fan_in = 300 (axis 1) instead of 200.
  expect_uniform(init::HeUniform(std::nullopt, std::vector<int64_t>{1}, std::vector<int64_t>{0}), std::sqrt(6.0 / 300));
  // Keras's config, and read back from it.
  init::HeUniform he(std::nullopt, std::vector<int64_t>{1}, std::vector<int64_t>{0});
  EXPECT_EQ(he.get_config(), json::parse(R"({"seed": null, "input_axes": [1], "output_axes": [0]})"));
  auto back = init::from_config(init::serialize(std::make_shared<init::HeUniform>(he)));
  EXPECT_EQ(back->get_config(), he.get_config());
  EXPECT_THROW(init::from_config(json::parse(R"({"class_name": "HeUniform", "config": {"input_axes": 1}})")), ValueError);
}

TEST(Initializers, VarianceScalingPresetsMatchKerasFormulas) {
  expect_uniform(init::GlorotUniform(), std::sqrt(6.0 / 500));
  expect_uniform(init::HeUniform(), std::sqrt(6.0 / 200));
  expect_uniform(init::LecunUniform(), std::sqrt(3.0 / 200));
  expect_truncated(init::GlorotNormal(), std::sqrt(1.0 / 250), std::sqrt(1.0 / 250) / kTruncStd);
  expect_truncated(init::HeNormal(), std::sqrt(2.0 / 200), std::sqrt(2.0 / 200) / kTruncStd);
  expect_truncated(init::LecunNormal(), std::sqrt(1.0 / 200), std::sqrt(1.0 / 200) / kTruncStd);
}

TEST(Initializers, VarianceScalingModesAndDistributions) {
  Stats s = stats_of(init::VarianceScaling(2.0, "fan_out", "untruncated_normal", 3)(kShape));
  EXPECT_NEAR(s.std, std::sqrt(2.0 / 300), 0.02 * std::sqrt(2.0 / 300));
  EXPECT_GT(s.max, 2.2 * std::sqrt(2.0 / 300));  // not truncated
  expect_uniform(init::VarianceScaling(3.0, "fan_avg", "uniform"), std::sqrt(9.0 / 250));
  init::VarianceScaling alias(1.0, "fan_in", "normal");
  EXPECT_EQ(alias.distribution(), "truncated_normal");
  // Conv kernel: fan_in = 3 * 3 * 16.
  Stats conv = stats_of(init::HeUniform(1)({3, 3, 16, 64}));
  EXPECT_NEAR(conv.std, std::sqrt(2.0 / 144), 0.03 * std::sqrt(2.0 / 144));
  EXPECT_THROW(init::VarianceScaling(0.0), ValueError);
  EXPECT_THROW(init::VarianceScaling(1.0, "fan_sideways"), ValueError);
  EXPECT_THROW(init::VarianceScaling(1.0, "fan_in", "cauchy"), ValueError);
}

TEST(Initializers, ConstantsAndDistributions) {
  for (float v : init::Zeros()({3, 4}).to_vector<float>()) EXPECT_EQ(v, 0.0f);
  for (float v : init::Ones()({3, 4}).to_vector<float>()) EXPECT_EQ(v, 1.0f);
  for (float v : init::Constant(3.5)({5}).to_vector<float>()) EXPECT_EQ(v, 3.5f);
  EXPECT_EQ(init::Zeros()({2}, DType::int64).dtype(), DType::int64);
  EXPECT_EQ(init::GlorotUniform()({2, 2}, DType::float64).dtype(), DType::float64);

  Stats n = stats_of(init::RandomNormal()(kShape));
  EXPECT_NEAR(n.mean, 0.0, 0.001);
  EXPECT_NEAR(n.std, 0.05, 0.001);
  Stats n2 = stats_of(init::RandomNormal(1.0, 0.5, 9)(kShape));
  EXPECT_NEAR(n2.mean, 1.0, 0.01);
  EXPECT_NEAR(n2.std, 0.5, 0.01);
  expect_uniform(init::RandomUniform(), 0.05);
  Stats u = stats_of(init::RandomUniform(2.0, 4.0)(kShape));
  EXPECT_GE(u.min, 2.0);
  EXPECT_LE(u.max, 4.0);
  EXPECT_NEAR(u.mean, 3.0, 0.01);
  expect_truncated(init::TruncatedNormal(), 0.05 * kTruncStd, 0.05);
  EXPECT_THROW(init::RandomNormal(0.0, -1.0), ValueError);
  EXPECT_THROW(init::RandomUniform(1.0, 0.0), ValueError);
}

TEST(Initializers, OrthogonalIsOrthogonal) {
  for (Shape shape : {Shape{200, 300}, Shape{300, 200}, Shape{4, 5, 20}, Shape{16, 16}}) {
    SCOPED_TRACE(shape_str(shape));
    double gain = 2.0;
    Tensor t = init::Orthogonal(gain, 11)(shape);
    EXPECT_EQ(t.shape(), shape);
    int64_t rows = shape_numel(shape) / shape.back(), cols = shape.back();
    auto q = t.to_vector<double>();
    // The smaller dimension's vectors are orthonormal (times gain^2).
    bool by_cols = rows >= cols;
    int64_t k = by_cols ? cols : rows, len = by_cols ? rows : cols;
    auto at = [&](int64_t vec, int64_t i) { return by_cols ? q[i * cols + vec] : q[vec * cols + i]; };
    double worst = 0;
    for (int64_t a = 0; a < k; ++a)
      for (int64_t b = a; b < k; ++b) {
        double dot = 0;
        for (int64_t i = 0; i < len; ++i) dot += at(a, i) * at(b, i);
        worst = std::max(worst, std::abs(dot - (a == b ? gain * gain : 0.0)));
      }
    EXPECT_LT(worst, 1e-5);
  }
  EXPECT_THROW(init::Orthogonal()({5}), ValueError);
}

TEST(Initializers, SeededIsDeterministicUnseededFollowsGlobalSeed) {
  init::GlorotUniform seeded(5);
  EXPECT_EQ(seeded({20, 30}).to_vector<float>(), seeded({20, 30}).to_vector<float>());
  EXPECT_EQ(seeded({20, 30}).to_vector<float>(), init::GlorotUniform(5)({20, 30}).to_vector<float>());
  EXPECT_NE(seeded({20, 30}).to_vector<float>(), init::GlorotUniform(6)({20, 30}).to_vector<float>());
  init::Orthogonal orth(1.0, 3);
  EXPECT_EQ(orth({8, 8}).to_vector<float>(), orth({8, 8}).to_vector<float>());

  init::HeNormal unseeded;
  EXPECT_NE(unseeded({20, 30}).to_vector<float>(), unseeded({20, 30}).to_vector<float>());
  set_random_seed(77);
  auto a = unseeded({20, 30}).to_vector<float>();
  auto b = init::RandomUniform()({10}).to_vector<float>();
  set_random_seed(77);
  EXPECT_EQ(unseeded({20, 30}).to_vector<float>(), a);
  EXPECT_EQ(init::RandomUniform()({10}).to_vector<float>(), b);
}

TEST(Initializers, ConfigRoundTrip) {
  std::vector<InitializerPtr> all = {
      std::make_shared<init::GlorotUniform>(1), std::make_shared<init::GlorotNormal>(),
      std::make_shared<init::HeUniform>(), std::make_shared<init::HeNormal>(2),
      std::make_shared<init::LecunUniform>(), std::make_shared<init::LecunNormal>(),
      std::make_shared<init::VarianceScaling>(0.5, "fan_out", "uniform", 4), std::make_shared<init::Zeros>(),
      std::make_shared<init::Ones>(), std::make_shared<init::Constant>(0.25),
      std::make_shared<init::RandomNormal>(0.1, 0.2, 3), std::make_shared<init::RandomUniform>(-1, 2),
      std::make_shared<init::TruncatedNormal>(0.0, 0.3), std::make_shared<init::Orthogonal>(1.5, 8)};
  for (const auto& i : all) {
    SCOPED_TRACE(i->class_name());
    json j = init::serialize(i);
    EXPECT_EQ(j["module"], "keras.initializers");
    EXPECT_EQ(j["class_name"], i->class_name());
    EXPECT_TRUE(j["registered_name"].is_null());
    InitializerPtr back = init::from_config(json::parse(j.dump()));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->class_name(), i->class_name());
    EXPECT_EQ(back->get_config(), i->get_config());
    // Keras 2 form.
    InitializerPtr k2 = init::from_config({{"class_name", i->class_name()}, {"config", i->get_config()}});
    EXPECT_EQ(k2->get_config(), i->get_config());
  }
  // Keras 3.15's configs (tests/data/keras/applications/*.k3.json.gz).
  EXPECT_EQ(init::GlorotUniform().get_config(), json({{"seed", nullptr}, {"input_axes", nullptr}, {"output_axes", nullptr}}));
  EXPECT_EQ(init::RandomUniform(-1, 2, 3).get_config(), json({{"minval", -1.0}, {"maxval", 2.0}, {"seed", 3}}));
  EXPECT_EQ(init::VarianceScaling().get_config(),
            json({{"scale", 1.0}, {"mode", "fan_in"}, {"distribution", "truncated_normal"}, {"seed", nullptr},
                  {"input_axes", nullptr}, {"output_axes", nullptr}}));
  // Keras 2 and Keras 3 before 3.15 write no axes.
  EXPECT_EQ(init::from_config(json::parse(R"({"class_name": "GlorotUniform", "config": {"seed": 3}})"))->get_config(),
            json({{"seed", 3}, {"input_axes", nullptr}, {"output_axes", nullptr}}));
  // Keras 3 file form of Orthogonal, a bare string, and null.
  json k3 = json::parse(R"({"module": "keras.initializers", "class_name": "OrthogonalInitializer",
                            "config": {"gain": 2.0, "seed": 5}, "registered_name": null})");
  auto orth = init::from_config(k3);
  EXPECT_EQ(orth->class_name(), "Orthogonal");
  EXPECT_EQ(orth->get_config(), json({{"gain", 2.0}, {"seed", 5}}));
  EXPECT_EQ(init::from_config("he_uniform")->class_name(), "HeUniform");
  EXPECT_EQ(init::from_config(nullptr), nullptr);
  // Seeded via config reproduces the same values.
  auto s1 = init::from_config(json::parse(R"({"class_name": "GlorotNormal", "config": {"seed": 42}})"));
  EXPECT_EQ((*s1)({4, 4}).to_vector<float>(), init::GlorotNormal(42)({4, 4}).to_vector<float>());
}

TEST(Initializers, GetByName) {
  std::vector<std::pair<std::string, std::string>> names = {
      {"glorot_uniform", "GlorotUniform"}, {"glorot_normal", "GlorotNormal"}, {"he_uniform", "HeUniform"},
      {"he_normal", "HeNormal"},           {"lecun_uniform", "LecunUniform"}, {"lecun_normal", "LecunNormal"},
      {"zeros", "Zeros"},                  {"ones", "Ones"},                  {"orthogonal", "Orthogonal"},
      {"random_normal", "RandomNormal"},   {"random_uniform", "RandomUniform"}, {"uniform", "RandomUniform"},
      {"truncated_normal", "TruncatedNormal"}, {"constant", "Constant"},    {"variance_scaling", "VarianceScaling"},
      {"GlorotUniform", "GlorotUniform"}, {"HeNormal", "HeNormal"}};
  for (const auto& [name, cls] : names) EXPECT_EQ(init::get(name)->class_name(), cls) << name;
  InitializerArg arg = "he_normal";
  EXPECT_EQ(arg.ptr()->class_name(), "HeNormal");
  InitializerArg obj = std::make_shared<init::Constant>(2.0);
  EXPECT_EQ(obj.ptr()->class_name(), "Constant");
}

TEST(Initializers, UnknownNameListsKnownOnes) {
  try {
    init::get("glorot_unifrom");
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("glorot_unifrom"), std::string::npos) << m;
    EXPECT_NE(m.find("glorot_uniform"), std::string::npos) << m;
    EXPECT_NE(m.find("he_normal"), std::string::npos) << m;
  }
  EXPECT_THROW(init::from_config(json::parse(R"({"class_name": "Nope", "config": {}})")), ValueError);
  EXPECT_THROW(init::from_config(json(42)), ValueError);
  EXPECT_THROW(InitializerArg("bogus"), ValueError);
}
