#include "layers/gru_cell.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

namespace {

// Columns [g*units, (g+1)*units) of a (rows, 3*units) matrix, g in {z, r, h}.
Tensor block(const Tensor& m, int64_t g, int64_t units) { return ops::slice(m, {0, g * units}, {m.shape()[0], units}); }
Tensor block1(const Tensor& v, int64_t g, int64_t units) { return ops::slice(v, {g * units}, {units}); }

}  // namespace

GRUCellImpl::GRUCellImpl(GRUCellOptions options) : RNNCell(config::base_options(options)), options_(std::move(options)) {
  config::check_cell_args(where(), options_);
}

void GRUCellImpl::build(const std::vector<Shape>& shapes) {
  const int64_t in = shapes[0].back(), units = options_.units;
  kernel_ = add_weight("kernel", {in, 3 * units}, options_.kernel_initializer.ptr(), true,
                       options_.kernel_regularizer.ptr(), options_.kernel_constraint.ptr());
  recurrent_kernel_ = add_weight("recurrent_kernel", {units, 3 * units}, options_.recurrent_initializer.ptr(), true,
                                 options_.recurrent_regularizer.ptr(), options_.recurrent_constraint.ptr());
  if (options_.use_bias) {
    Shape shape = options_.reset_after ? Shape{2, 3 * units} : Shape{3 * units};
    bias_ = add_weight("bias", shape, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
  }
}

std::pair<Tensor, TensorList> GRUCellImpl::step(const Tensor& x, const TensorList& states, bool training) {
  const Tensor& h = states[0];
  const int64_t units = options_.units;
  const bool after = options_.reset_after;
  const int count = options_.recurrent_dropout != 0.0 ? 3 : 1;  // Keras's implementation 1 / 2
  TensorList dp, rdp;
  if (training) {
    dp = dropout_masks(input_masks_, x, options_.dropout, count, options_.seed);
    rdp = dropout_masks(recurrent_masks_, h, options_.recurrent_dropout, count, options_.seed);
  }
  Tensor input_bias, recurrent_bias;
  if (options_.use_bias) {
    if (after) {
      input_bias = ops::reshape(ops::slice(bias_.value(), {0, 0}, {1, 3 * units}), {3 * units});
      recurrent_bias = ops::reshape(ops::slice(bias_.value(), {1, 0}, {1, 3 * units}), {3 * units});
    } else {
      input_bias = bias_.value();
    }
  }
  const Tensor& K = kernel_.value();
  const Tensor& R = recurrent_kernel_.value();
  std::array<Tensor, 3> xg, rg;  // input and recurrent parts of z, r (and h when reset_after)
  for (int64_t g = 0; g < 3; ++g) {
    xg[g] = ops::matmul(apply_dropout_mask(x, dp, g), block(K, g, units));
    if (input_bias.defined()) xg[g] = ops::add(xg[g], block1(input_bias, g, units));
    if (g == 2 && !after) break;
    rg[g] = ops::matmul(apply_dropout_mask(h, rdp, g), block(R, g, units));
    if (recurrent_bias.defined()) rg[g] = ops::add(rg[g], block1(recurrent_bias, g, units));
  }
  const std::string& ra = options_.recurrent_activation;
  Tensor z = ops::activation(ra, ops::add(xg[0], rg[0]));
  Tensor r = ops::activation(ra, ops::add(xg[1], rg[1]));
  Tensor rh = after ? ops::multiply(r, rg[2])
                    : ops::matmul(ops::multiply(r, apply_dropout_mask(h, rdp, 2)), block(R, 2, units));
  Tensor hh = ops::activation(options_.activation, ops::add(xg[2], rh));
  Tensor h_new = ops::add(ops::multiply(z, h), ops::multiply(1.0 - z, hh));
  return {h_new, {h_new}};
}

std::optional<ops::RnnSequenceArgs> GRUCellImpl::fused_sequence(bool training) const {
  if (training && (options_.dropout > 0 || options_.recurrent_dropout > 0)) return std::nullopt;
  ops::RnnSequenceArgs a;
  a.kind = ops::RnnKind::gru;
  a.kernel = kernel_.value();
  a.recurrent_kernel = recurrent_kernel_.value();
  if (options_.use_bias) a.bias = bias_.value();
  a.activation = options_.activation;
  a.recurrent_activation = options_.recurrent_activation;
  a.reset_after = options_.reset_after;
  return a;
}

json GRUCellImpl::get_config() const {
  json c = base_config();
  config::write_cell_args(options_, c);
  return c;
}

GRUCellOptions gru_cell_options_from_config(const json& c) {
  GRUCellOptions o;
  config::read_base_keys(c, o);
  config::read_cell_args(c, o, "GRUCell config");
  return o;
}

KERAS_REGISTER_LAYER(GRUCell, [](const json& c) -> LayerPtr {
  return std::make_shared<GRUCellImpl>(gru_cell_options_from_config(c));
});
KERAS_SIGNATURE(GRUCell, .training_default = false);

}  // namespace keras::layers
