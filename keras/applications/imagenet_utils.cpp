#include "keras/applications/imagenet_utils.h"

#include <array>
#include <vector>

#include "backend/errors.h"
#include "backend/ops.h"

namespace keras::applications::imagenet_utils {
namespace {

constexpr std::array<double, 3> kCaffeMean = {103.939, 116.779, 123.68};  // B, G, R
constexpr std::array<double, 3> kTorchMean = {0.485, 0.456, 0.406};
constexpr std::array<double, 3> kTorchStd = {0.229, 0.224, 0.225};

// Three per-channel values shaped to broadcast against x along `axis` (1s elsewhere), on x's
// device (not the default one: host images meet a GPU default on a machine with a GPU).
Tensor per_channel(const std::array<double, 3>& v, const Tensor& x, int64_t axis) {
  Shape shape(static_cast<size_t>(x.rank()), 1);
  shape[static_cast<size_t>(axis)] = 3;
  return Tensor::from_vector(std::vector<double>(v.begin(), v.end()), Shape{3}, x.device()).astype(x.dtype()).view(shape);
}

}  // namespace

Tensor preprocess_input(const Tensor& input, const PreprocessOptions& o) {
  const std::string where = "imagenet_utils.preprocess_input";
  if (o.mode != "caffe" && o.mode != "tf" && o.mode != "torch")
    fail<ValueError>(where, "mode one of \"caffe\", \"tf\" or \"torch\"", "\"" + o.mode + "\"");
  if (o.data_format != "channels_last" && o.data_format != "channels_first")
    fail<ValueError>(where, "data_format \"channels_last\" or \"channels_first\"", "\"" + o.data_format + "\"");
  Tensor x = is_floating(input.dtype()) ? input : ops::cast(input, DType::float32);
  if (o.mode == "tf") return x / 127.5 - 1.0;

  const int64_t ndim = static_cast<int64_t>(x.shape().size());
  const int64_t axis = o.data_format == "channels_last" ? ndim - 1 : (ndim == 3 ? 0 : 1);
  if (ndim < 1 || axis < 0 || axis >= ndim || x.shape()[static_cast<size_t>(axis)] != 3)
    fail<ValueError>(where, "3 channels (RGB) on the channel axis of a " + o.data_format + " image batch",
                     "shape " + shape_str(x.shape()), "Mode \"" + o.mode + "\" works per colour channel.");
  if (o.mode == "torch") {
    x = x / 255.0;
    x = x + -per_channel(kTorchMean, x, axis);
    return x / per_channel(kTorchStd, x, axis);
  }
  // caffe: RGB -> BGR, then zero-centred by the BGR mean.
  x = ops::take(x, Tensor::from_vector(std::vector<int64_t>{2, 1, 0}, Shape{3}, x.device()), static_cast<int>(axis));
  return x + -per_channel(kCaffeMean, x, axis);
}

Shape obtain_input_shape(const std::string& where, const Shape& input_shape, int64_t default_size, int64_t min_size,
                         bool require_flatten, bool imagenet_weights) {
  const int64_t channels = !imagenet_weights && input_shape.size() == 3 ? input_shape[2] : 3;
  const Shape default_shape = {default_size, default_size, channels};
  if (imagenet_weights && require_flatten) {
    if (!input_shape.empty() && input_shape != default_shape)
      fail<ValueError>(where, "input_shape " + shape_str(default_shape) + " with include_top and ImageNet weights",
                       shape_str(input_shape), "The classifier's weights fix the input size; use include_top = false.");
    return default_shape;
  }
  Shape shape = input_shape;
  if (!shape.empty()) {
    if (shape.size() != 3)
      fail<ValueError>(where, "an input_shape of three integers (H, W, C)", shape_str(shape));
    if (shape[2] != 3 && imagenet_weights)
      fail<ValueError>(where, "an input with 3 channels for ImageNet weights", "input_shape " + shape_str(shape));
    if ((shape[0] >= 0 && shape[0] < min_size) || (shape[1] >= 0 && shape[1] < min_size))
      fail<ValueError>(where, "an input of at least " + std::to_string(min_size) + "x" + std::to_string(min_size),
                       "input_shape " + shape_str(shape));
  } else {
    shape = require_flatten ? default_shape : Shape{-1, -1, 3};
  }
  if (require_flatten && (shape[0] < 0 || shape[1] < 0 || shape[2] < 0))
    fail<ValueError>(where, "a static input_shape with include_top", "input_shape " + shape_str(shape),
                     "Give H and W, or use include_top = false.");
  return shape;
}

std::pair<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> correct_pad(const Shape& input_shape,
                                                                                  int64_t kernel_size) {
  const int64_t h = input_shape.at(1), w = input_shape.at(2);
  const int64_t adjust_h = h < 0 ? 1 : 1 - h % 2, adjust_w = w < 0 ? 1 : 1 - w % 2;
  const int64_t correct = kernel_size / 2;
  return {{correct - adjust_h, correct}, {correct - adjust_w, correct}};
}

void validate_activation(const std::string& where, const std::string& classifier_activation,
                         const std::string& weights) {
  if (weights.empty()) return;
  const std::string& a = classifier_activation;
  if (a != "softmax" && a != "linear" && !a.empty() && a != "None")
    fail<ValueError>(where, "classifier_activation \"softmax\" or linear with pretrained weights and include_top",
                     "\"" + a + "\"", "Pretrained classifiers were trained with softmax.");
}

}  // namespace keras::applications::imagenet_utils
