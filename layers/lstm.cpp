#include "layers/lstm.h"

#include "layers/flat_rnn_config.h"
#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {

LSTMImpl::LSTMImpl(LSTMOptions o)
    : RNNImpl(config::base_options(o), std::make_shared<LSTMCellImpl>(flat_cell_options<LSTMCellOptions>(o, "lstm_cell")),
              sequence_args_of(o)),
      options_(std::move(o)) {}

json LSTMImpl::get_config() const { return flat_rnn_config(sequence_config(), options_); }

LSTMOptions lstm_options_from_config(const json& c) { return flat_rnn_options_from_config<LSTMOptions>(c, "LSTM config"); }

KERAS_REGISTER_LAYER(LSTM, [](const json& c) -> LayerPtr { return std::make_shared<LSTMImpl>(lstm_options_from_config(c)); });
KERAS_SIGNATURE(LSTM, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);

}  // namespace keras::layers
