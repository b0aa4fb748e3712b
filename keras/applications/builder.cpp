#include "keras/applications/builder.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "keras/applications/imagenet_utils.h"
#include "keras/saving/saving.h"
#include "layers/dense.h"
#include "layers/global_average_pooling2d.h"
#include "layers/global_max_pooling2d.h"
#include "layers/input_layer.h"
#include "layers/keras_operation.h"

namespace keras::applications::detail {
namespace L = keras::layers;

void check_args(const Args& a) {
  if (!a.weights.empty() && a.weights != "imagenet" && !std::filesystem::exists(a.weights))
    fail<ValueError>(a.where, "weights \"\" (random initialisation), \"imagenet\" or the path of a weights file",
                     "\"" + a.weights + "\", which does not exist");
  if (a.weights == "imagenet" && a.include_top && a.classes != 1000)
    fail<ValueError>(a.where, "classes 1000 with weights \"imagenet\" and include_top", std::to_string(a.classes),
                     "The ImageNet classifier has 1000 classes; use include_top = false for a new head.");
  if (a.include_top && a.classes < 1) fail<ValueError>(a.where, "classes >= 1", std::to_string(a.classes));
  if (!a.pooling.empty() && a.pooling != "avg" && a.pooling != "max")
    fail<ValueError>(a.where, "pooling \"\", \"avg\" or \"max\"", "\"" + a.pooling + "\"");
}

std::string weights_file(const Args& a, const std::string& file, const std::string& url_dir) {
  if (a.weights != "imagenet") return a.weights;
  return keras_cached_file(a.where + " weights \"imagenet\"", file, url_dir + file);
}

std::string keras_cached_file(const std::string& where, const std::string& file, const std::string& url) {
  const char* home = std::getenv("KERAS_HOME");
  const char* user = std::getenv("HOME");
  const std::filesystem::path dir = home ? std::filesystem::path(home)
                                         : std::filesystem::path(user ? user : ".") / ".keras";
  const std::string path = (dir / "models" / file).string();
  if (!std::filesystem::exists(path))
    fail<IOError>(where, "the file Keras downloads, at " + path, "no such file",
                  "This library never downloads: fetch " + url + " there (or anywhere, and pass its path).");
  return path;
}

std::string standard_weights_file(const Args& a, const std::string& folder, const std::string& stem) {
  const std::string file = stem + "_weights_tf_dim_ordering_tf_kernels" + (a.include_top ? "" : "_notop") + ".h5";
  return weights_file(a, file, kKerasWeightsUrl + folder + "/");
}

std::string AutoNames::operator()(const std::string& class_name) {
  const std::string base = snake_case(class_name);
  const int n = used_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

KerasTensor image_input(const Args& a, int64_t default_size, int64_t min_size) {
  const Shape shape = imagenet_utils::obtain_input_shape(a.where, a.input_shape, default_size, min_size, a.include_top,
                                                         a.weights == "imagenet");
  return L::Input(shape, {.name = "input_layer"});
}

Start start(const Args& a, int64_t default_size, int64_t min_size, const std::string& folder, const std::string& stem) {
  check_args(a);
  auto input = image_input(a, default_size, min_size);
  return {input, standard_weights_file(a, folder, stem)};
}

namespace {
bool is_weights_size(int64_t h, int64_t w, const std::vector<int64_t>& sizes) {
  return h == w && std::find(sizes.begin(), sizes.end(), h) != sizes.end();
}
}  // namespace

KerasTensor sized_input(const Args& a, const std::vector<int64_t>& sizes) {
  const Shape& s = a.input_shape;
  const int64_t default_size = s.size() >= 2 && is_weights_size(s[0], s[1], sizes) ? s[0] : 224;
  return image_input(a, default_size, 32);
}

int64_t weights_rows(const KerasTensor& input, const std::vector<int64_t>& sizes) {
  return is_weights_size(input.shape.at(1), input.shape.at(2), sizes) ? input.shape[1] : 224;
}

std::string sized_name(const std::string& prefix, double alpha, int64_t rows) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", alpha);
  return prefix + "_" + text + "_" + (rows < 0 ? "None" : std::to_string(rows));
}

std::string activation_name(const std::string& classifier_activation) {
  return classifier_activation.empty() || classifier_activation == "None" ? "linear" : classifier_activation;
}

KerasTensor predictions(const Args& a, const KerasTensor& x) {
  imagenet_utils::validate_activation(a.where, a.classifier_activation, a.weights);
  return L::Dense({.units = a.classes, .activation = activation_name(a.classifier_activation), .name = "predictions"})(x);
}

KerasTensor pooling(const Args& a, const KerasTensor& x, AutoNames& names, bool named) {
  if (a.pooling == "avg")
    return L::GlobalAveragePooling2D({.name = named ? "avg_pool" : names("GlobalAveragePooling2D")})(x);
  if (a.pooling == "max")
    return L::GlobalMaxPooling2D({.name = named ? "max_pool" : names("GlobalMaxPooling2D")})(x);
  return x;
}

KerasTensor classifier_or_pooling(const Args& a, const KerasTensor& x, AutoNames& names, bool named_top,
                                  bool named_pools) {
  if (!a.include_top) return pooling(a, x, names, named_pools);
  auto pooled = L::GlobalAveragePooling2D({.name = named_top ? "avg_pool" : names("GlobalAveragePooling2D")})(x);
  return predictions(a, pooled);
}

int64_t make_divisible(double v, int64_t divisor) {
  int64_t n = std::max(divisor, static_cast<int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(n) < 0.9 * v) n += divisor;
  return n;
}

namespace {
KerasTensor numpy_operation(const std::string& class_name, const std::vector<KerasTensor>& tensors,
                            std::vector<std::optional<double>> args, AutoNames& names) {
  const std::string name = names(class_name);
  auto layer = L::keras_operation_layer({"keras.src.ops.numpy", class_name, std::move(args)}, name, name);
  return (*layer)(tensors).at(0);
}
}  // namespace

KerasTensor numpy_operation(const std::string& class_name, const KerasTensor& x, const KerasTensor& y,
                            AutoNames& names) {
  return numpy_operation(class_name, {x, y}, {std::nullopt, std::nullopt}, names);
}
KerasTensor numpy_operation(const std::string& class_name, const KerasTensor& x, double y, AutoNames& names) {
  return numpy_operation(class_name, {x}, {std::nullopt, y}, names);
}

std::shared_ptr<Model> finish(const Args& a, const KerasTensor& input, const KerasTensor& output,
                              const std::string& weights_path) {
  auto model = std::make_shared<Model>(input, output, a.name);
  if (!weights_path.empty()) model->load_weights(weights_path);
  return model;
}

}  // namespace keras::applications::detail
