#include "layers/simple_rnn_cell.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

SimpleRNNCellImpl::SimpleRNNCellImpl(SimpleRNNCellOptions options)
    : RNNCell(config::base_options(options)), options_(std::move(options)) {
  config::check_cell_args(where(), options_);
}

void SimpleRNNCellImpl::build(const std::vector<Shape>& shapes) {
  const int64_t in = shapes[0].back(), units = options_.units;
  kernel_ = add_weight("kernel", {in, units}, options_.kernel_initializer.ptr(), true,
                       options_.kernel_regularizer.ptr(), options_.kernel_constraint.ptr());
  recurrent_kernel_ = add_weight("recurrent_kernel", {units, units}, options_.recurrent_initializer.ptr(), true,
                                 options_.recurrent_regularizer.ptr(), options_.recurrent_constraint.ptr());
  if (options_.use_bias)
    bias_ = add_weight("bias", {units}, options_.bias_initializer.ptr(), true, options_.bias_regularizer.ptr(),
                       options_.bias_constraint.ptr());
}

std::pair<Tensor, TensorList> SimpleRNNCellImpl::step(const Tensor& x, const TensorList& states, bool training) {
  TensorList dp, rdp;
  if (training) {
    dp = dropout_masks(input_masks_, x, options_.dropout, 1, options_.seed);
    rdp = dropout_masks(recurrent_masks_, states[0], options_.recurrent_dropout, 1, options_.seed);
  }
  Tensor pre = ops::matmul(apply_dropout_mask(x, dp), kernel_.value());
  if (options_.use_bias) pre = ops::add(pre, bias_.value());
  pre = ops::add(pre, ops::matmul(apply_dropout_mask(states[0], rdp), recurrent_kernel_.value()));
  Tensor h = ops::activation(options_.activation, pre);
  return {h, {h}};
}

std::optional<ops::RnnSequenceArgs> SimpleRNNCellImpl::fused_sequence(bool training) const {
  if (training && (options_.dropout > 0 || options_.recurrent_dropout > 0)) return std::nullopt;
  ops::RnnSequenceArgs a;
  a.kind = ops::RnnKind::simple_rnn;
  a.kernel = kernel_.value();
  a.recurrent_kernel = recurrent_kernel_.value();
  if (options_.use_bias) a.bias = bias_.value();
  a.activation = options_.activation;
  return a;
}

json SimpleRNNCellImpl::get_config() const {
  json c = base_config();
  config::write_cell_args(options_, c);
  return c;
}

SimpleRNNCellOptions simple_rnn_cell_options_from_config(const json& c) {
  SimpleRNNCellOptions o;
  config::read_base_keys(c, o);
  config::read_cell_args(c, o, "SimpleRNNCell config");
  return o;
}

KERAS_REGISTER_LAYER(SimpleRNNCell, [](const json& c) -> LayerPtr {
  return std::make_shared<SimpleRNNCellImpl>(simple_rnn_cell_options_from_config(c));
});
KERAS_SIGNATURE(SimpleRNNCell, .training_default = false);

}  // namespace keras::layers
