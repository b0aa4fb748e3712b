#include "layers/simple_rnn.h"

#include "layers/flat_rnn_config.h"
#include "layers/keras_signature.h"
#include "layers/layer_registry.h"

namespace keras::layers {

SimpleRNNImpl::SimpleRNNImpl(SimpleRNNOptions o)
    : RNNImpl(config::base_options(o), std::make_shared<SimpleRNNCellImpl>(flat_cell_options<SimpleRNNCellOptions>(o, "simple_rnn_cell")),
              sequence_args_of(o)),
      options_(std::move(o)) {}

json SimpleRNNImpl::get_config() const {
  json c = flat_rnn_config(sequence_config(), options_);
  c.erase("seed");  // Keras 3's SimpleRNN.get_config leaves out its cell's seed
  return c;
}

SimpleRNNOptions simple_rnn_options_from_config(const json& c) { return flat_rnn_options_from_config<SimpleRNNOptions>(c, "SimpleRNN config"); }

KERAS_REGISTER_LAYER(SimpleRNN, [](const json& c) -> LayerPtr { return std::make_shared<SimpleRNNImpl>(simple_rnn_options_from_config(c)); });
KERAS_SIGNATURE(SimpleRNN, .training_default = false, .takes_mask = true, .call_keywords = {"initial_state"},
                .legacy_list_keyword = "initial_state", .build_config = &rnn_build_config);

}  // namespace keras::layers
