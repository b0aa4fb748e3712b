// Stateful recurrent layers (stateful=True) in an exported graph. A stateful Keras layer starts
// each call from the states its previous call ended with; an ONNX graph keeps nothing between
// runs, so what a streaming deployment needs is the states in the caller's hands: each state is a
// graph input "<layer>_state_<s>_in" and a graph output "<layer>_state_<s>_out" (s: h, c; for a
// stack of cells cell<k>_h, cell<k>_c, ...), in the Keras layout of the state, batch dynamic.
//
//   first run:  feed zeros as every *_in (Keras's fresh or reset_states() layer)
//   next runs:  feed the *_out of the previous run as the matching *_in
//
// so that consecutive runs give what consecutive model.predict calls give. The state outputs
// follow the model's own outputs; the model's doc_string says all this, each input's and output's
// doc_string names its partner, and metadata_props "keras_carried_states" lists the pairs as JSON
// ([{"layer", "input", "output"}]) for code that wires them up.
#pragma once
#include <string>
#include <vector>

#include "keras/export/onnx_graph.h"
#include "layers/rnn.h"

namespace keras::onnx {

// The states' short names: "h", "c" (LSTM, ConvLSTM) or "h"; "cell<k>_..." per cell of a stack.
std::vector<std::string> state_names(const layers::RNNImpl& rnn);

// Graph inputs for the initial states of the stateful `rnn` (Keras shapes `shapes`, batch -1),
// as Values in Keras layout. ValueError naming `where` when the names are taken (a stateful layer
// called twice: the calls would share one state).
std::vector<Value> stateful_inputs(Graph& g, const layers::RNNImpl& rnn, const std::vector<Shape>& shapes,
                                   const std::string& where);

// Graph outputs (recorded as carried states) for the final states `finals` of `rnn`, whose inputs
// stateful_inputs made.
void stateful_outputs(Graph& g, const layers::RNNImpl& rnn, const std::vector<Value>& finals);

// Adds the carried states' outputs after the model's, and the doc_string and metadata_props that
// describe them; nothing when there are none.
void finish_carried_states(Graph& g);

}  // namespace keras::onnx
