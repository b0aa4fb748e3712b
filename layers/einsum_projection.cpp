#include "layers/einsum_projection.h"

#include "backend/ops.h"
#include "layers/layer_config.h"

namespace keras::layers {

EinsumProjectionImpl::EinsumProjectionImpl(EinsumProjectionOptions options)
    : Layer(config::base_options(options)), options_(std::move(options)) {
  if (options_.contracted < 1) fail<ValueError>(where(), "contracted >= 1", std::to_string(options_.contracted));
  for (int64_t d : options_.output_dims)
    if (d < 1) fail<ValueError>(where(), "output extents >= 1", shape_str(options_.output_dims));
  if (!options_.kernel_initializer || (options_.use_bias && !options_.bias_initializer))
    fail<ValueError>(where(), "kernel and bias initializers", "none");
}

void EinsumProjectionImpl::validate_input(const std::vector<Shape>& shapes) const {
  if (shapes.size() != 1) fail<ShapeError>(where(), "one input", std::to_string(shapes.size()) + " inputs");
  const Shape& s = shapes[0];
  const auto m = static_cast<size_t>(options_.contracted);
  if (s.size() <= m)
    fail<ShapeError>(where(), "an input of rank > " + std::to_string(m), "shape " + shape_str(s));
  Shape tail(s.end() - static_cast<std::ptrdiff_t>(m), s.end());
  if (built()) {
    const Shape& b = build_input_shapes()[0];
    Shape built_tail(b.end() - static_cast<std::ptrdiff_t>(m), b.end());
    if (tail != built_tail)
      fail<ShapeError>(where(), "trailing extents " + shape_str(built_tail), "shape " + shape_str(s),
                       "The layer was built for inputs of shape " + shape_str(b) + ".");
  }
  for (int64_t d : tail)
    if (d < 1) fail<ShapeError>(where(), "known trailing extents", "shape " + shape_str(s));
}

void EinsumProjectionImpl::build(const std::vector<Shape>& shapes) {
  const Shape& s = shapes[0];
  Shape kernel_shape(s.end() - options_.contracted, s.end());
  kernel_shape.insert(kernel_shape.end(), options_.output_dims.begin(), options_.output_dims.end());
  kernel_ = add_weight("kernel", kernel_shape, options_.kernel_initializer, true, options_.kernel_regularizer,
                       options_.kernel_constraint);
  if (options_.use_bias)
    bias_ = add_weight("bias", options_.output_dims, options_.bias_initializer, true, options_.bias_regularizer,
                       options_.bias_constraint);
}

TensorList EinsumProjectionImpl::call(const TensorList& inputs, const CallContext&) {
  const Tensor& x = inputs[0];
  const Shape& s = x.shape();
  const auto lead = static_cast<std::ptrdiff_t>(s.size()) - options_.contracted;
  const int64_t in = shape_numel(Shape(s.begin() + lead, s.end()));
  const int64_t out = shape_numel(options_.output_dims);
  Tensor kernel = ops::reshape(kernel_.value(), {in, out});
  Tensor bias = options_.use_bias ? ops::reshape(bias_.value(), {out}) : Tensor();
  Tensor y = ops::dense(ops::reshape(x, {-1, in}), kernel, bias, options_.activation);
  Shape y_shape(s.begin(), s.begin() + lead);
  y_shape.insert(y_shape.end(), options_.output_dims.begin(), options_.output_dims.end());
  return {ops::reshape(y, y_shape)};
}

std::vector<Shape> EinsumProjectionImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  validate_input(shapes);
  const Shape& s = shapes[0];
  Shape out(s.begin(), s.end() - options_.contracted);
  out.insert(out.end(), options_.output_dims.begin(), options_.output_dims.end());
  return {out};
}

json EinsumProjectionImpl::get_config() const {
  json c = base_config();
  c["equation"] = options_.equation;
  c["output_shape"] = config::shape_to_json(options_.output_dims);
  c["activation"] = options_.activation;
  c["bias_axes"] = nullptr;
  if (options_.use_bias) {
    // Keras names the bias axes by the output letters of the equation.
    const std::string out = options_.equation.substr(options_.equation.find("->") + 2);
    c["bias_axes"] = out.substr(out.size() - options_.output_dims.size());
  }
  c["kernel_initializer"] = initializers::serialize(options_.kernel_initializer);
  c["bias_initializer"] = initializers::serialize(options_.bias_initializer);
  c["kernel_regularizer"] = regularizers::serialize(options_.kernel_regularizer);
  c["bias_regularizer"] = regularizers::serialize(options_.bias_regularizer);
  c["kernel_constraint"] = constraints::serialize(options_.kernel_constraint);
  c["bias_constraint"] = constraints::serialize(options_.bias_constraint);
  return c;
}

}  // namespace keras::layers
