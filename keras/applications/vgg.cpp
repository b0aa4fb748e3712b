#include "keras/applications/vgg.h"

#include <vector>

#include "keras/applications/builder.h"
#include "layers/conv2d.h"
#include "layers/dense.h"
#include "layers/flatten.h"
#include "layers/max_pooling2d.h"

namespace keras::applications {
namespace {
namespace L = keras::layers;

// Five blocks of 3x3 relu convolutions ("same") and a 2x2 max pooling; convs[i] is block i+1's count.
std::shared_ptr<Model> vgg(const detail::Args& a, const std::vector<int>& convs, const std::string& stem) {
  const auto [input, weights] = detail::start(a, 224, 32, stem, stem);
  KerasTensor x = input;
  const int64_t filters[] = {64, 128, 256, 512, 512};
  for (size_t b = 0; b < convs.size(); ++b) {
    const std::string block = "block" + std::to_string(b + 1);
    for (int c = 1; c <= convs[b]; ++c)
      x = L::Conv2D({.filters = filters[b], .kernel_size = 3, .padding = "same", .activation = "relu",
                     .name = block + "_conv" + std::to_string(c)})(x);
    x = L::MaxPooling2D({.pool_size = 2, .strides = L::PairArg(2), .name = block + "_pool"})(x);
  }
  detail::AutoNames names;
  if (a.include_top) {
    x = L::Flatten({.name = "flatten"})(x);
    x = L::Dense({.units = 4096, .activation = "relu", .name = "fc1"})(x);
    x = L::Dense({.units = 4096, .activation = "relu", .name = "fc2"})(x);
    x = detail::predictions(a, x);
  } else {
    x = detail::pooling(a, x, names, false);
  }
  return detail::finish(a, input, x, weights);
}

}  // namespace

std::shared_ptr<Model> VGG16(const VGGOptions& o) { return vgg(detail::args_of("VGG16", o, "vgg16"), {2, 2, 3, 3, 3}, "vgg16"); }

std::shared_ptr<Model> VGG19(const VGGOptions& o) { return vgg(detail::args_of("VGG19", o, "vgg19"), {2, 2, 4, 4, 4}, "vgg19"); }

}  // namespace keras::applications
