#include "layers/permute.h"

#include <algorithm>

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

PermuteImpl::PermuteImpl(PermuteOptions options) : Layer(config::base_options(options)), options_(std::move(options)) {
  std::vector<int64_t> sorted = options_.dims;
  std::sort(sorted.begin(), sorted.end());
  bool ok = !sorted.empty();
  for (size_t i = 0; i < sorted.size(); ++i) ok = ok && sorted[i] == static_cast<int64_t>(i) + 1;
  if (!ok)
    fail<ValueError>(where(), "dims, a permutation of 1..n (the batch axis 0 stays)", json(options_.dims).dump());
}

void PermuteImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  if (shapes[0].size() != options_.dims.size() + 1)
    fail<ShapeError>(where(), "an input of rank " + std::to_string(options_.dims.size() + 1) + " (for dims " + json(options_.dims).dump() + ")",
                     "shape " + shape_str(shapes[0]));
}

std::vector<Shape> PermuteImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  Shape out{shapes[0][0]};
  for (int64_t d : options_.dims) out.push_back(shapes[0][static_cast<size_t>(d)]);
  return {out};
}

TensorList PermuteImpl::call(const TensorList& inputs, const CallContext&) {
  std::vector<int> perm{0};
  for (int64_t d : options_.dims) perm.push_back(static_cast<int>(d));
  return {ops::transpose(inputs[0], perm)};
}

json PermuteImpl::get_config() const {
  json c = base_config();
  c["dims"] = options_.dims;
  return c;
}

PermuteOptions permute_options_from_config(const json& c) {
  PermuteOptions o;
  config::read_base_keys(c, o);
  if (!c.contains("dims") || !c["dims"].is_array())
    fail<ValueError>("Permute config", "a list 'dims'", c.contains("dims") ? c["dims"].dump() : "none");
  for (const auto& d : c["dims"]) {
    if (!d.is_number_integer()) fail<ValueError>("Permute config 'dims'", "integers", c["dims"].dump());
    o.dims.push_back(d.get<int64_t>());
  }
  return o;
}

KERAS_REGISTER_LAYER(Permute, [](const json& c) -> LayerPtr { return std::make_shared<PermuteImpl>(permute_options_from_config(c)); });
KERAS_SIGNATURE(Permute);

}  // namespace keras::layers
