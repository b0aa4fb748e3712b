#include "layers/conv_lstm.h"

#include <algorithm>

#include "layers/conv_options.h"
#include "layers/keras_signature.h"
#include "layers/layer_config.h"
#include "layers/layer_registry.h"
#include "layers/rnn_cell_args.h"

namespace keras::layers {

namespace {

std::string class_of(int rank) { return "ConvLSTM" + std::to_string(rank) + "D"; }

// `rank` values: one value repeated, or exactly `rank` (ValueError naming `where` otherwise).
std::vector<int64_t> expand(const ConvLSTMSize& size, int rank, const std::string& where, const char* what) {
  if (size.values.size() == 1) return std::vector<int64_t>(static_cast<size_t>(rank), size.values[0]);
  if (static_cast<int>(size.values.size()) != rank)
    fail<ValueError>(where, std::string(what) + " as one value or " + std::to_string(rank), json(size.values).dump());
  return size.values;
}

ConvLSTMCellOptions cell_options(int rank, const ConvLSTMOptions& o) {
  const std::string where = o.name.empty() ? class_of(rank) : "Layer '" + o.name + "' (" + class_of(rank) + ")";
  ConvLSTMCellOptions c;
  c.rank = rank;
  c.filters = o.filters;
  c.kernel_size = expand(o.kernel_size, rank, where, "kernel_size");
  c.strides = expand(o.strides, rank, where, "strides");
  c.padding = o.padding;
  c.data_format = o.data_format;
  c.dilation_rate = expand(o.dilation_rate, rank, where, "dilation_rate");
  c.activation = o.activation;
  c.recurrent_activation = o.recurrent_activation;
  c.use_bias = o.use_bias;
  c.kernel_initializer = o.kernel_initializer;
  c.recurrent_initializer = o.recurrent_initializer;
  c.bias_initializer = o.bias_initializer;
  c.unit_forget_bias = o.unit_forget_bias;
  c.kernel_regularizer = o.kernel_regularizer;
  c.recurrent_regularizer = o.recurrent_regularizer;
  c.bias_regularizer = o.bias_regularizer;
  c.kernel_constraint = o.kernel_constraint;
  c.recurrent_constraint = o.recurrent_constraint;
  c.bias_constraint = o.bias_constraint;
  c.dropout = o.dropout;
  c.recurrent_dropout = o.recurrent_dropout;
  c.seed = o.seed;
  c.trainable = o.trainable;
  c.dtype = o.dtype;
  check_conv_lstm_cell_options(where, c);  // errors name the layer, not its cell
  return c;
}

// An int or a list of `rank` ints (Keras writes lists); absent or null keeps `size`.
void read_size(const json& c, const char* key, int rank, ConvLSTMSize& size, const std::string& where) {
  if (!c.contains(key) || c[key].is_null()) return;
  const json& v = c[key];
  if (v.is_number_integer()) {
    size = ConvLSTMSize(v.get<int64_t>());
    return;
  }
  if (v.is_array() && static_cast<int>(v.size()) == rank &&
      std::all_of(v.begin(), v.end(), [](const json& n) { return n.is_number_integer(); })) {
    size.values = v.get<std::vector<int64_t>>();
    return;
  }
  fail<ValueError>(where, "'" + std::string(key) + "' as an integer or a list of " + std::to_string(rank) + " integers",
                   v.dump());
}

}  // namespace

ConvLSTMImpl::ConvLSTMImpl(int rank, ConvLSTMOptions o)
    : RNNImpl(config::base_options(o), std::make_shared<ConvLSTMCellImpl>(cell_options(rank, o)), sequence_args_of(o)),
      rank_(rank),
      options_(std::move(o)) {}

void ConvLSTMImpl::validate_input(const std::vector<Shape>& shapes) const {
  RNNImpl::validate_input(shapes);
  const auto& cell = static_cast<const ConvLSTMCellImpl&>(*this->cell()).options();
  Shape step = shapes[0];
  step.erase(step.begin() + 1);
  const Shape cl = conv::channels_last_input(where(), {step}, rank_, cell.data_format);
  conv::output_extents(where(), cl, cell.kernel_size, cell.strides, cell.dilation_rate, cell.padding);
}

json ConvLSTMImpl::get_config() const {
  const auto& cell = static_cast<const ConvLSTMCellImpl&>(*this->cell()).options();
  json c = sequence_config();
  c["filters"] = cell.filters;
  c["kernel_size"] = cell.kernel_size;
  c["strides"] = cell.strides;
  c["padding"] = cell.padding;
  c["data_format"] = cell.data_format;
  c["dilation_rate"] = cell.dilation_rate;
  c["recurrent_activation"] = cell.recurrent_activation;
  config::write_weight_args(options_, config::recurrent_weights<ConvLSTMOptions>(), c);
  c["unit_forget_bias"] = cell.unit_forget_bias;
  c["dropout"] = cell.dropout;
  c["recurrent_dropout"] = cell.recurrent_dropout;
  c["seed"] = cell.seed ? json(*cell.seed) : json(nullptr);
  return c;
}

ConvLSTMOptions conv_lstm_options_from_config(const json& c, int rank) {
  const std::string where = class_of(rank) + " config";
  ConvLSTMOptions o;
  config::read_base_keys(c, o);
  o.filters = conv::filters_from_config(c, where);
  if (!c.contains("kernel_size")) fail<ValueError>(where, "a 'kernel_size'", "none");
  read_size(c, "kernel_size", rank, o.kernel_size, where);
  read_size(c, "strides", rank, o.strides, where);
  read_size(c, "dilation_rate", rank, o.dilation_rate, where);
  if (c.contains("padding") && c["padding"].is_string()) o.padding = c["padding"];
  if (c.contains("data_format") && c["data_format"].is_string()) o.data_format = c["data_format"];
  if (c.contains("recurrent_activation")) o.recurrent_activation = config::activation_from_config(c["recurrent_activation"]);
  config::read_weight_args(c, config::recurrent_weights<ConvLSTMOptions>(), o);
  o.unit_forget_bias = c.value("unit_forget_bias", true);
  if (c.contains("dropout") && c["dropout"].is_number()) o.dropout = c["dropout"].get<double>();
  if (c.contains("recurrent_dropout") && c["recurrent_dropout"].is_number())
    o.recurrent_dropout = c["recurrent_dropout"].get<double>();
  if (c.contains("seed") && c["seed"].is_number_integer()) o.seed = c["seed"].get<int64_t>();
  set_sequence_args(sequence_args_from_config(c), o);
  return o;
}

KERAS_REGISTER_LAYER(ConvLSTM1D, [](const json& c) -> LayerPtr {
  return std::make_shared<ConvLSTM1DImpl>(conv_lstm_options_from_config(c, 1));
});
KERAS_REGISTER_LAYER(ConvLSTM2D, [](const json& c) -> LayerPtr {
  return std::make_shared<ConvLSTM2DImpl>(conv_lstm_options_from_config(c, 2));
});
KERAS_REGISTER_LAYER(ConvLSTM3D, [](const json& c) -> LayerPtr {
  return std::make_shared<ConvLSTM3DImpl>(conv_lstm_options_from_config(c, 3));
});
// Keras's ConvLSTM.call(sequences, initial_state=None, mask=None, training=False).
KERAS_SIGNATURE(ConvLSTM1D, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);
KERAS_SIGNATURE(ConvLSTM2D, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);
KERAS_SIGNATURE(ConvLSTM3D, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);

}  // namespace keras::layers
