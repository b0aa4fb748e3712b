#include "keras/export/stateful.h"

#include <nlohmann/json.hpp>

#include "backend/errors.h"
#include "layers/stacked_rnn_cells.h"

namespace keras::onnx {
namespace {

std::vector<std::string> cell_state_names(const RNNCell& cell) {
  return cell.state_size().size() == 2 ? std::vector<std::string>{"h", "c"} : std::vector<std::string>{"h"};
}

std::string port(const Layer& layer, const std::string& state, const char* direction) {
  return layer.name() + "_state_" + state + "_" + direction;
}

}  // namespace

std::vector<std::string> state_names(const layers::RNNImpl& rnn) {
  const auto* stack = dynamic_cast<const layers::StackedRNNCellsImpl*>(rnn.cell().get());
  if (!stack) return cell_state_names(*rnn.cell());
  std::vector<std::string> out;
  for (size_t k = 0; k < stack->cells().size(); ++k)
    for (const auto& s : cell_state_names(*stack->cells()[k])) out.push_back("cell" + std::to_string(k) + "_" + s);
  return out;
}

std::vector<Value> stateful_inputs(Graph& g, const layers::RNNImpl& rnn, const std::vector<Shape>& shapes,
                                   const std::string& where) {
  const std::vector<std::string> names = state_names(rnn);
  if (names.size() != shapes.size())
    fail<ValueError>(where, std::to_string(names.size()) + " state shapes", std::to_string(shapes.size()));
  std::vector<Value> out;
  for (size_t k = 0; k < names.size(); ++k) {
    const std::string in = port(rnn, names[k], "in"), done = port(rnn, names[k], "out");
    for (const auto& taken : g.carried_states())
      if (taken.input == in)
        fail<NotImplementedError>(where, "a stateful layer called once", "a second call",
                                  "Each call would need its own state; export a model that calls it once.");
    g.reserve(in);
    g.reserve(done);
    Shape shape = shapes[k];
    shape[0] = -1;
    g.add_input({in, shape, DType::float32,
                 "State '" + names[k] + "' of stateful layer '" + rnn.name() + "' before this run: zeros on the first run, then '" +
                     done + "' of the previous run."});
    g.carry_state({rnn.name(), in, done, shape});
    out.push_back(Value{in, shape, DType::float32, false});
  }
  return out;
}

void stateful_outputs(Graph& g, const layers::RNNImpl& rnn, const std::vector<Value>& finals) {
  const std::vector<std::string> names = state_names(rnn);
  for (size_t k = 0; k < names.size() && k < finals.size(); ++k)
    g.add_named("Identity", {g.as_keras(finals[k])}, {}, port(rnn, names[k], "out"));
}

void finish_carried_states(Graph& g) {
  if (g.carried_states().empty()) return;
  nlohmann::json pairs = nlohmann::json::array();
  std::string list;
  for (const auto& s : g.carried_states()) {
    g.add_output({s.output, s.shape, DType::float32,
                  "State of stateful layer '" + s.layer + "' after this run: feed it as '" + s.input + "' of the next run."});
    pairs.push_back({{"layer", s.layer}, {"input", s.input}, {"output", s.output}});
    list += "\n  " + s.output + " -> " + s.input;
  }
  g.set_doc(
      "Stateful model: each run continues from the states its inputs carry, as consecutive model.predict calls of the "
      "Keras model do. Feed zeros as every state input on the first run (a fresh model, or after reset_states()), then "
      "each state output of a run as the matching state input of the next (output -> input):" +
      list);
  g.set_metadata("keras_carried_states", pairs.dump());
}

}  // namespace keras::onnx
