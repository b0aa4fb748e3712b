#include "layers/initializers.h"

#include <cmath>
#include <map>

#include "layers/layer_config.h"

namespace keras::initializers {

namespace {
double extent_product(const Shape& shape, const std::vector<int64_t>& axes, const char* which) {
  double product = 1;
  const auto rank = static_cast<int64_t>(shape.size());
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      fail<ValueError>(std::string("compute_fans ") + which, "axes of a shape " + shape_str(shape),
                       "axis " + std::to_string(axis));
    product *= double(shape[static_cast<size_t>(axis < 0 ? axis + rank : axis)]);
  }
  return product;
}

json axes_json(const Axes& axes) { return axes ? json(*axes) : json(nullptr); }
}  // namespace

std::pair<double, double> compute_fans(const Shape& shape, const Axes& input_axes, const Axes& output_axes) {
  if (input_axes && output_axes)
    return {extent_product(shape, *input_axes, "input_axes"), extent_product(shape, *output_axes, "output_axes")};
  if (shape.empty()) return {1.0, 1.0};
  if (shape.size() == 1) return {double(shape[0]), double(shape[0])};
  if (shape.size() == 2) return {double(shape[0]), double(shape[1])};
  double receptive = 1;
  for (size_t i = 0; i + 2 < shape.size(); ++i) receptive *= double(shape[i]);
  return {double(shape[shape.size() - 2]) * receptive, double(shape.back()) * receptive};
}

Generator RandomInitializer::generator() const {
  return Generator(seed_ ? static_cast<uint64_t>(*seed_) : global_generator().next_seed());
}

// ---- VarianceScaling ----
VarianceScaling::VarianceScaling(double scale, std::string mode, std::string distribution, Seed seed,
                                 Axes input_axes, Axes output_axes)
    : RandomInitializer(seed),
      scale_(scale),
      mode_(std::move(mode)),
      distribution_(std::move(distribution)),
      input_axes_(std::move(input_axes)),
      output_axes_(std::move(output_axes)) {
  if (!(scale_ > 0)) fail<ValueError>("VarianceScaling", "scale > 0", std::to_string(scale_));
  if (mode_ != "fan_in" && mode_ != "fan_out" && mode_ != "fan_avg")
    fail<ValueError>("VarianceScaling", "mode 'fan_in', 'fan_out' or 'fan_avg'", "'" + mode_ + "'");
  if (distribution_ == "normal") distribution_ = "truncated_normal";  // Keras's alias
  if (distribution_ != "truncated_normal" && distribution_ != "untruncated_normal" && distribution_ != "uniform")
    fail<ValueError>("VarianceScaling", "distribution 'truncated_normal', 'untruncated_normal' or 'uniform'",
                     "'" + distribution_ + "'");
}

Tensor VarianceScaling::operator()(const Shape& shape, DType dtype) const {
  auto [fan_in, fan_out] = compute_fans(shape, input_axes_, output_axes_);
  double n = mode_ == "fan_in" ? fan_in : mode_ == "fan_out" ? fan_out : (fan_in + fan_out) / 2.0;
  double scale = scale_ / std::max(1.0, n);
  Generator gen = generator();
  if (distribution_ == "truncated_normal") {
    // Stddev of a unit normal truncated to [-2, 2]; dividing restores the intended variance.
    double stddev = std::sqrt(scale) / 0.87962566103423978;
    return random::truncated_normal(shape, 0.0, stddev, gen, dtype);
  }
  if (distribution_ == "untruncated_normal") return random::normal(shape, 0.0, std::sqrt(scale), gen, dtype);
  double limit = std::sqrt(3.0 * scale);
  return random::uniform(shape, -limit, limit, gen, dtype);
}

json VarianceScaling::axes_config() const {
  return {{"input_axes", axes_json(input_axes_)}, {"output_axes", axes_json(output_axes_)}};
}

json VarianceScaling::get_config() const {
  json c = {{"scale", scale_}, {"mode", mode_}, {"distribution", distribution_}, {"seed", seed_json()}};
  c.update(axes_config());
  return c;
}

// ---- constants ----
Tensor Zeros::operator()(const Shape& shape, DType dtype) const { return Tensor::zeros(shape, dtype); }
Tensor Ones::operator()(const Shape& shape, DType dtype) const { return Tensor::ones(shape, dtype); }
Tensor Constant::operator()(const Shape& shape, DType dtype) const { return Tensor::full(shape, value_, dtype); }

// ---- distributions ----
RandomNormal::RandomNormal(double mean, double stddev, Seed seed) : RandomInitializer(seed), mean_(mean), stddev_(stddev) {
  if (stddev_ < 0) fail<ValueError>("RandomNormal", "stddev >= 0", std::to_string(stddev_));
}
Tensor RandomNormal::operator()(const Shape& shape, DType dtype) const {
  Generator gen = generator();
  return random::normal(shape, mean_, stddev_, gen, dtype);
}

TruncatedNormal::TruncatedNormal(double mean, double stddev, Seed seed)
    : RandomInitializer(seed), mean_(mean), stddev_(stddev) {
  if (stddev_ < 0) fail<ValueError>("TruncatedNormal", "stddev >= 0", std::to_string(stddev_));
}
Tensor TruncatedNormal::operator()(const Shape& shape, DType dtype) const {
  Generator gen = generator();
  return random::truncated_normal(shape, mean_, stddev_, gen, dtype);
}

RandomUniform::RandomUniform(double minval, double maxval, Seed seed)
    : RandomInitializer(seed), minval_(minval), maxval_(maxval) {
  if (minval_ > maxval_)
    fail<ValueError>("RandomUniform", "minval <= maxval", std::to_string(minval_) + " > " + std::to_string(maxval_));
}
Tensor RandomUniform::operator()(const Shape& shape, DType dtype) const {
  Generator gen = generator();
  return random::uniform(shape, minval_, maxval_, gen, dtype);
}

// ---- Orthogonal ----
Tensor Orthogonal::operator()(const Shape& shape, DType dtype) const {
  if (shape.size() < 2)
    fail<ValueError>("Orthogonal", "a shape of rank >= 2", shape_str(shape), "Orthogonal needs a matrix-like shape.");
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) rows *= shape[i];
  int64_t cols = shape.back();
  int64_t m = std::max(rows, cols), n = std::min(rows, cols);
  Generator gen = generator();
  std::vector<double> a = random::normal({m, n}, 0.0, 1.0, gen, DType::float64).to_vector<double>();
  // Modified Gram-Schmidt with one re-orthogonalisation pass. Its R has a positive diagonal, so Q
  // is exactly the sign-corrected Q that Keras derives from a Householder QR.
  std::vector<double> q(static_cast<size_t>(m * n));
  std::vector<double> v(static_cast<size_t>(m));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t r = 0; r < m; ++r) v[r] = a[r * n + j];
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t i = 0; i < j; ++i) {
        double dot = 0;
        for (int64_t r = 0; r < m; ++r) dot += q[r * n + i] * v[r];
        for (int64_t r = 0; r < m; ++r) v[r] -= dot * q[r * n + i];
      }
    double norm = 0;
    for (int64_t r = 0; r < m; ++r) norm += v[r] * v[r];
    norm = std::sqrt(norm);
    for (int64_t r = 0; r < m; ++r) q[r * n + j] = norm > 0 ? v[r] / norm : 0.0;
  }
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = gain_ * (rows >= cols ? q[r * n + c] : q[c * n + r]);
  return Tensor::from_vector(out, shape).astype(dtype);
}

// ---- lookup ----
namespace {
Seed seed_of(const json& c) {
  if (c.contains("seed") && c["seed"].is_number_integer()) return c["seed"].get<int64_t>();
  return std::nullopt;  // null, absent, or a serialized SeedGenerator (not reproducible here)
}
// input_axes / output_axes: a list of ints, or null or absent (Keras 2, Keras 3 before 3.15).
Axes axes_of(const json& c, const char* key) {
  if (!c.contains(key) || c[key].is_null()) return std::nullopt;
  if (!c[key].is_array()) fail<ValueError>(std::string("initializer config '") + key + "'", "a list of ints or null", c[key].dump());
  std::vector<int64_t> axes;
  for (const auto& a : c[key]) {
    if (!a.is_number_integer()) fail<ValueError>(std::string("initializer config '") + key + "'", "a list of ints", c[key].dump());
    axes.push_back(a.get<int64_t>());
  }
  return axes;
}
double num(const json& c, const char* key, double fallback) {
  return c.contains(key) && c[key].is_number() ? c[key].get<double>() : fallback;
}

std::map<std::string, InitializerFactory>& table() {
  static std::map<std::string, InitializerFactory> t = [] {
    std::map<std::string, InitializerFactory> m;
    auto add = [&](std::initializer_list<const char*> names, InitializerFactory f) {
      for (const char* n : names) m[n] = f;
    };
    add({"GlorotUniform", "glorot_uniform"}, [](const json& c) { return std::make_shared<GlorotUniform>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"GlorotNormal", "glorot_normal"}, [](const json& c) { return std::make_shared<GlorotNormal>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"HeUniform", "he_uniform"}, [](const json& c) { return std::make_shared<HeUniform>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"HeNormal", "he_normal"}, [](const json& c) { return std::make_shared<HeNormal>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"LecunUniform", "lecun_uniform"}, [](const json& c) { return std::make_shared<LecunUniform>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"LecunNormal", "lecun_normal"}, [](const json& c) { return std::make_shared<LecunNormal>(seed_of(c), axes_of(c, "input_axes"), axes_of(c, "output_axes")); });
    add({"VarianceScaling", "variance_scaling"}, [](const json& c) {
      return std::make_shared<VarianceScaling>(num(c, "scale", 1.0), c.value("mode", std::string("fan_in")),
                                               c.value("distribution", std::string("truncated_normal")), seed_of(c),
                                               axes_of(c, "input_axes"), axes_of(c, "output_axes"));
    });
    add({"Zeros", "zeros", "zero"}, [](const json&) { return std::make_shared<Zeros>(); });
    add({"Ones", "ones", "one"}, [](const json&) { return std::make_shared<Ones>(); });
    add({"Constant", "constant"}, [](const json& c) { return std::make_shared<Constant>(num(c, "value", 0.0)); });
    add({"RandomNormal", "random_normal", "normal"}, [](const json& c) {
      return std::make_shared<RandomNormal>(num(c, "mean", 0.0), num(c, "stddev", 0.05), seed_of(c));
    });
    add({"TruncatedNormal", "truncated_normal"}, [](const json& c) {
      return std::make_shared<TruncatedNormal>(num(c, "mean", 0.0), num(c, "stddev", 0.05), seed_of(c));
    });
    add({"RandomUniform", "random_uniform", "uniform"}, [](const json& c) {
      return std::make_shared<RandomUniform>(num(c, "minval", -0.05), num(c, "maxval", 0.05), seed_of(c));
    });
    // Keras 3 serializes Orthogonal under its Python class name OrthogonalInitializer.
    add({"Orthogonal", "OrthogonalInitializer", "orthogonal"},
        [](const json& c) { return std::make_shared<Orthogonal>(num(c, "gain", 1.0), seed_of(c)); });
    return m;
  }();
  return t;
}

InitializerPtr make(const std::string& name, const json& config, const std::string& where) {
  auto it = table().find(name);
  if (it == table().end()) {
    std::string known;
    for (const auto& n : known_names()) known += (known.empty() ? "" : ", ") + n;
    fail<ValueError>(where, "a known initializer", "'" + name + "'", "Known: " + known + ".");
  }
  return it->second(config);
}
}  // namespace

void register_initializer(const std::string& name, InitializerFactory factory) { table()[name] = std::move(factory); }

std::vector<std::string> known_names() {
  std::vector<std::string> out;
  for (const auto& [n, f] : table()) out.push_back(n);
  return out;
}

InitializerPtr get(const std::string& name) { return make(name, json::object(), "initializers::get"); }

InitializerPtr from_config(const json& j) {
  if (j.is_null()) return nullptr;
  auto [name, config] = config::unwrap_object(j, "initializers::from_config");
  return make(name, config, "initializers::from_config");
}

json serialize(const InitializerPtr& init) {
  if (!init) return nullptr;
  return config::keras_object("keras.initializers", init->class_name(), init->get_config());
}

}  // namespace keras::initializers
