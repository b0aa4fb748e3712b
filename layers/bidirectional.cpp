#include "layers/bidirectional.h"

#include "backend/ops.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"

namespace keras::layers {

namespace {

std::shared_ptr<RNNImpl> as_rnn(const LayerPtr& layer, const std::string& where) {
  auto rnn = std::dynamic_pointer_cast<RNNImpl>(layer);
  if (!rnn)
    fail<ValueError>(where, "a recurrent layer (RNN, SimpleRNN, LSTM, GRU)", layer ? "a " + layer->class_name() : "none");
  return rnn;
}

std::string without_prefix(const std::string& s, const std::string& prefix) {
  return s.rfind(prefix, 0) == 0 ? s.substr(prefix.size()) : s;
}

// Keras rebuilds the wrapped layer from its serialized form under a new name: fresh weights,
// built when the layer was.
std::shared_ptr<RNNImpl> copy_as(const RNNImpl& layer, const std::string& direction, bool backwards, const std::string& where) {
  json obj = config::serialize_nested_layer(layer);
  obj["config"]["name"] = direction + "_" + without_prefix(layer.name(), direction + "_");
  if (backwards) obj["config"]["go_backwards"] = true;
  return as_rnn(config::nested_layer_from_config(obj, where), where);
}

// x reversed along the time axis (axis 1).
Tensor flip_time(const Tensor& x) {
  const int64_t steps = x.shape()[1];
  std::vector<int64_t> order(static_cast<size_t>(steps));
  for (int64_t t = 0; t < steps; ++t) order[static_cast<size_t>(t)] = steps - 1 - t;
  return ops::take(x, Tensor::from_vector(order, {steps}, x.device()), 1);
}

}  // namespace

BidirectionalImpl::BidirectionalImpl(BidirectionalOptions o) : Layer(config::base_options(o)), merge_mode_(o.merge_mode) {
  if (merge_mode_ != "concat" && merge_mode_ != "sum" && merge_mode_ != "mul" && merge_mode_ != "ave" && !merge_mode_.empty())
    fail<ValueError>(where(), "merge_mode concat, sum, mul, ave or None (\"\")", "'" + merge_mode_ + "'");
  auto layer = as_rnn(o.layer, where() + " layer");
  forward_ = copy_as(*layer, "forward", false, where());
  if (o.backward_layer) {
    backward_ = as_rnn(o.backward_layer, where() + " backward_layer");
  } else {
    backward_ = copy_as(*layer, "backward", true, where());
  }
  const SequenceArgs &f = forward_->sequence_args(), &b = backward_->sequence_args();
  if (f.go_backwards == b.go_backwards)
    fail<ValueError>(where(), "a backward layer going the other way than the forward one",
                     std::string("go_backwards=") + (b.go_backwards ? "true" : "false") + " for both");
  if (f.stateful != b.stateful || f.return_sequences != b.return_sequences || f.return_state != b.return_state)
    fail<ValueError>(where(), "forward and backward layers with the same stateful, return_sequences and return_state",
                     "different values");
  forward_->set_zero_output_for_mask(f.return_sequences);
  backward_->set_zero_output_for_mask(b.return_sequences);
}

void BidirectionalImpl::validate_input(const std::vector<Shape>& shapes) const { forward_->validate_input({shapes.at(0)}); }

void BidirectionalImpl::build(const std::vector<Shape>& shapes) {
  for (const auto& l : {forward_, backward_}) {
    l->update_paths(prefix_ + name() + "/");
    l->ensure_built({shapes[0]});
  }
}

std::vector<Shape> BidirectionalImpl::compute_output_shape(const std::vector<Shape>& shapes) {
  std::vector<Shape> f = forward_->compute_output_shape({shapes.at(0)});
  std::vector<Shape> out;
  Shape y = f[0];
  if (merge_mode_ == "concat") y.back() *= 2;
  out.assign(output_count(), y);
  for (int pass = 0; pass < 2; ++pass) out.insert(out.end(), f.begin() + 1, f.end());
  return out;
}

Tensor BidirectionalImpl::merge(const Tensor& y, const Tensor& y_rev) const {
  if (merge_mode_ == "concat") return ops::concatenate({y, y_rev}, -1);
  if (merge_mode_ == "sum") return ops::add(y, y_rev);
  if (merge_mode_ == "mul") return ops::multiply(y, y_rev);
  return ops::multiply(ops::add(y, y_rev), 0.5);  // ave
}

TensorList BidirectionalImpl::call(const TensorList& inputs, const CallContext& ctx) {
  const size_t positional = ctx.positional_count(inputs.size());
  if (positional != 1) fail<ValueError>(where(), "one positional input (the sequences)", std::to_string(positional));
  const TensorList init = ctx.keyword(inputs, "initial_state");
  if (init.size() % 2 != 0)
    fail<ValueError>(where() + " initial_state", "the forward states then the backward ones (an even count)",
                     std::to_string(init.size()));
  const size_t half = init.size() / 2;
  auto run = [&](RNNImpl& layer, size_t first) {
    TensorList xs{inputs[0]};
    CallArgs args{.training = ctx.training};
    xs.insert(xs.end(), init.begin() + static_cast<std::ptrdiff_t>(first), init.begin() + static_cast<std::ptrdiff_t>(first + half));
    args.keywords.assign(half, "initial_state");
    if (ctx.mask(0).defined()) {
      args.mask.assign(xs.size(), Tensor());
      args.mask[0] = ctx.mask(0);
    }
    return layer(xs, args);
  };
  TensorList fwd = run(*forward_, 0), bwd = run(*backward_, half);
  Tensor y = fwd[0], y_rev = bwd[0];
  if (forward_->sequence_args().return_sequences) y_rev = flip_time(y_rev);
  TensorList out = merge_mode_.empty() ? TensorList{y, y_rev} : TensorList{merge(y, y_rev)};
  out.insert(out.end(), fwd.begin() + 1, fwd.end());
  out.insert(out.end(), bwd.begin() + 1, bwd.end());
  return out;
}

TensorList BidirectionalImpl::compute_mask(const TensorList&, const TensorList& masks) const {
  const bool sequences = forward_->sequence_args().return_sequences;
  TensorList out(output_count(), sequences && !masks.empty() ? masks[0] : Tensor());
  if (forward_->sequence_args().return_state) out.resize(out.size() + 2 * forward_->cell()->state_size().size());
  return out;
}

void BidirectionalImpl::update_paths(const std::string& prefix) {
  Layer::update_paths(prefix);
  prefix_ = prefix;
  forward_->update_paths(prefix + name() + "/");
  backward_->update_paths(prefix + name() + "/");
}

void BidirectionalImpl::reset_states() {
  if (!forward_->sequence_args().stateful) fail<ValueError>(where() + " reset_states", "a stateful layer", "stateful=false");
  forward_->reset_states();
  backward_->reset_states();
}

json BidirectionalImpl::get_config() const {
  json c = base_config();
  c["merge_mode"] = merge_mode_.empty() ? json(nullptr) : json(merge_mode_);
  c["layer"] = config::serialize_nested_layer(*forward_);
  c["backward_layer"] = config::serialize_nested_layer(*backward_);
  return c;
}

KERAS_REGISTER_LAYER(Bidirectional, [](const json& c) -> LayerPtr {
  BidirectionalOptions o;
  config::read_base_keys(c, o);
  if (c.contains("merge_mode")) o.merge_mode = c["merge_mode"].is_null() ? "" : c["merge_mode"].get<std::string>();
  if (!c.contains("layer")) fail<ValueError>("Bidirectional config", "a 'layer'", "none");
  o.layer = config::nested_layer_from_config(c["layer"], "Bidirectional config layer");
  if (c.contains("backward_layer") && !c["backward_layer"].is_null())
    o.backward_layer = config::nested_layer_from_config(c["backward_layer"], "Bidirectional config backward_layer");
  return std::make_shared<BidirectionalImpl>(std::move(o));
});
KERAS_SIGNATURE(Bidirectional, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state");

}  // namespace keras::layers
