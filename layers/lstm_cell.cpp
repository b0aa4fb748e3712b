#include "layers/lstm_cell.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

namespace {

// Keras's unit_forget_bias: the bias initializer on i, c and o, ones on f.
class UnitForgetBias : public Initializer {
 public:
  UnitForgetBias(InitializerPtr base, int64_t units) : base_(std::move(base)), units_(units) {}
  Tensor operator()(const Shape&, DType dtype) const override {
    return ops::concatenate({(*base_)({units_}, dtype), Tensor::ones({units_}, dtype), (*base_)({2 * units_}, dtype)}, 0);
  }
  std::string class_name() const override { return "UnitForgetBias"; }

 private:
  InitializerPtr base_;
  int64_t units_;
};

// The four gate blocks of a (batch, 4*units) pre-activation.
std::array<Tensor, 4> gates(const Tensor& z, int64_t units) {
  const int64_t b = z.shape()[0];
  std::array<Tensor, 4> out;
  for (int64_t g = 0; g < 4; ++g) out[g] = ops::slice(z, {0, g * units}, {b, units});
  return out;
}

}  // namespace

InitializerPtr unit_forget_bias_initializer(InitializerPtr base, int64_t units) {
  return std::make_shared<UnitForgetBias>(std::move(base), units);
}

LSTMCellImpl::LSTMCellImpl(LSTMCellOptions options)
    : RNNCell(config::base_options(options)), options_(std::move(options)) {
  config::check_cell_args(where(), options_);
}

void LSTMCellImpl::build(const std::vector<Shape>& shapes) {
  const int64_t in = shapes[0].back(), units = options_.units;
  kernel_ = add_weight("kernel", {in, 4 * units}, options_.kernel_initializer.ptr(), true,
                       options_.kernel_regularizer.ptr(), options_.kernel_constraint.ptr());
  recurrent_kernel_ = add_weight("recurrent_kernel", {units, 4 * units}, options_.recurrent_initializer.ptr(), true,
                                 options_.recurrent_regularizer.ptr(), options_.recurrent_constraint.ptr());
  if (options_.use_bias) {
    InitializerPtr init = options_.bias_initializer.ptr();
    if (options_.unit_forget_bias) init = unit_forget_bias_initializer(init, units);
    bias_ = add_weight("bias", {4 * units}, init, true, options_.bias_regularizer.ptr(), options_.bias_constraint.ptr());
  }
}

std::pair<Tensor, TensorList> LSTMCellImpl::step(const Tensor& x, const TensorList& states, bool training) {
  const Tensor& h = states[0];
  const Tensor& c = states[1];
  const int64_t units = options_.units;
  // Keras's implementation 1 (per-gate masks) whenever recurrent_dropout is set, else one mask.
  const int count = options_.recurrent_dropout != 0.0 ? 4 : 1;
  TensorList dp, rdp;
  if (training) {
    dp = dropout_masks(input_masks_, x, options_.dropout, count, options_.seed);
    rdp = dropout_masks(recurrent_masks_, h, options_.recurrent_dropout, count, options_.seed);
  }
  std::array<Tensor, 4> z;
  if (dp.size() <= 1 && rdp.size() <= 1) {
    Tensor pre = ops::add(ops::matmul(apply_dropout_mask(x, dp), kernel_.value()),
                          ops::matmul(apply_dropout_mask(h, rdp), recurrent_kernel_.value()));
    if (options_.use_bias) pre = ops::add(pre, bias_.value());
    z = gates(pre, units);
  } else {
    const auto k = gates(kernel_.value(), units), r = gates(recurrent_kernel_.value(), units);
    for (size_t g = 0; g < 4; ++g) {
      z[g] = ops::add(ops::matmul(apply_dropout_mask(x, dp, g), k[g]), ops::matmul(apply_dropout_mask(h, rdp, g), r[g]));
      if (options_.use_bias) z[g] = ops::add(z[g], ops::slice(bias_.value(), {static_cast<int64_t>(g) * units}, {units}));
    }
  }
  const std::string& ra = options_.recurrent_activation;
  Tensor i = ops::activation(ra, z[0]), f = ops::activation(ra, z[1]), o = ops::activation(ra, z[3]);
  Tensor c_new = ops::add(ops::multiply(f, c), ops::multiply(i, ops::activation(options_.activation, z[2])));
  Tensor h_new = ops::multiply(o, ops::activation(options_.activation, c_new));
  return {h_new, {h_new, c_new}};
}

std::optional<ops::RnnSequenceArgs> LSTMCellImpl::fused_sequence(bool training) const {
  if (training && (options_.dropout > 0 || options_.recurrent_dropout > 0)) return std::nullopt;
  ops::RnnSequenceArgs a;
  a.kind = ops::RnnKind::lstm;
  a.kernel = kernel_.value();
  a.recurrent_kernel = recurrent_kernel_.value();
  if (options_.use_bias) a.bias = bias_.value();
  a.activation = options_.activation;
  a.recurrent_activation = options_.recurrent_activation;
  return a;
}

json LSTMCellImpl::get_config() const {
  json c = base_config();
  config::write_cell_args(options_, c);
  return c;
}

LSTMCellOptions lstm_cell_options_from_config(const json& c) {
  LSTMCellOptions o;
  config::read_base_keys(c, o);
  config::read_cell_args(c, o, "LSTMCell config");
  return o;
}

KERAS_REGISTER_LAYER(LSTMCell, [](const json& c) -> LayerPtr {
  return std::make_shared<LSTMCellImpl>(lstm_cell_options_from_config(c));
});
KERAS_SIGNATURE(LSTMCell, .training_default = false);

}  // namespace keras::layers
