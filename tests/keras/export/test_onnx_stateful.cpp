// ONNX export of stateful recurrent layers (keras/export/stateful.h): the states become graph
// inputs "<layer>_state_<s>_in" and outputs "<layer>_state_<s>_out", so that a runtime streams
// a sequence in chunks. Two consecutive ONNX Runtime runs, the second fed the first's state
// outputs, must give what two consecutive model.predict calls of the stateful model give after
// reset_states() (outputs and carried states), at batch 1 and 7 from one dynamic-batch file, for
// LSTM, GRU, stacked cells, Bidirectional, ConvLSTM2D and masked sequences; the file documents the
// pairs in its doc_string and metadata_props.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "keras/keras.h"
#include "layers/bidirectional.h"
#include "support/expect_error.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace L = keras::layers;
using keras::KerasTensor;

namespace {

// The stateful recurrent layers of `model`, Bidirectional's halves included.
std::vector<std::shared_ptr<L::RNNImpl>> stateful_layers(const k::Model& model) {
  std::vector<std::shared_ptr<L::RNNImpl>> out;
  for (const auto& l : model.layers()) {
    if (auto r = std::dynamic_pointer_cast<L::RNNImpl>(l); r && r->sequence_args().stateful) out.push_back(r);
    if (auto b = std::dynamic_pointer_cast<L::BidirectionalImpl>(l); b && b->forward_layer()->sequence_args().stateful)
      out.insert(out.end(), {b->forward_layer(), b->backward_layer()});
  }
  return out;
}

struct StreamCase {
  std::string name;
  std::function<std::shared_ptr<k::Model>()> make;  // a fresh model: a stateful layer's first call fixes its batch
  std::vector<std::pair<std::string, std::vector<std::string>>> states;  // layer -> its states' short names
  std::vector<std::string> inputs, outputs;  // the model's own
};

std::string port(const std::string& layer, const std::string& state, const char* direction) {
  return layer + "_state_" + state + "_" + direction;
}

// Exports the case's batch-1 model and records, per batch size, two consecutive predict calls
// after a warm-up call and reset_states(); the first run feeds the reset (zero) states, the
// second carries the first run's state outputs.
void add_stream(test_support::OnnxCases& checks, const StreamCase& c) {
  SCOPED_TRACE(c.name);
  const std::string path = (checks.dir() / (c.name + ".onnx")).string();
  nlohmann::json runs = nlohmann::json::array();
  for (int64_t batch : {1, 7}) {
    std::shared_ptr<k::Model> model = c.make();
    test_support::random_weights(*model, 31, 0.4);
    model->predict(test_support::model_inputs(*model, batch, 90), {.batch_size = 64});
    const auto layers = stateful_layers(*model);
    auto find = [&](const std::string& name) {
      for (const auto& l : layers)
        if (l->name() == name) return l;
      ADD_FAILURE() << "no stateful layer '" << name << "'";
      return layers.at(0);
    };
    ASSERT_EQ(layers.size(), c.states.size());
    for (const auto& l : layers) l->reset_states();
    if (batch == 1) k::export_model(*model, path);
    for (int call = 0; call < 2; ++call) {
      const std::string tag = c.name + ".b" + std::to_string(batch) + ".call" + std::to_string(call);
      nlohmann::json run{{"inputs", nlohmann::json::object()}, {"outputs", nlohmann::json::object()},
                         {"carry", nlohmann::json::object()}};
      for (const auto& [layer, names] : c.states)
        for (size_t s = 0; s < names.size(); ++s) {
          if (call == 0) run["inputs"][port(layer, names[s], "in")] = checks.save(tag + "." + layer + names[s], find(layer)->states().at(s));
          else run["carry"][port(layer, names[s], "in")] = port(layer, names[s], "out");
        }
      const k::TensorList xs = test_support::model_inputs(*model, batch, 100 + 10 * static_cast<uint64_t>(batch + call));
      const k::TensorList ys = model->predict(xs, {.batch_size = 64});
      for (size_t i = 0; i < xs.size(); ++i)
        run["inputs"][model->inputs()[i].layer->name()] = checks.save(tag + ".in" + std::to_string(i), xs[i]);
      for (size_t o = 0; o < ys.size(); ++o)
        run["outputs"][model->outputs()[o].layer->name()] = checks.save(tag + ".out" + std::to_string(o), ys[o]);
      for (const auto& [layer, names] : c.states)
        for (size_t s = 0; s < names.size(); ++s)
          run["outputs"][port(layer, names[s], "out")] = checks.save(tag + "." + layer + names[s] + "_out", find(layer)->states().at(s));
      runs.push_back(run);
    }
  }
  checks.add_runs(c.name, path, runs);
}

std::vector<StreamCase> cases() {
  auto recurrent = [] {
    auto x = L::Input({5, 3}, {.name = "steps"});
    auto y = L::LSTM({.units = 4, .return_sequences = true, .stateful = true, .name = "lstm"})(x);
    y = L::GRU({.units = 3, .return_sequences = true, .stateful = true, .name = "gru"})(y);
    y = L::RNN({.cells = {L::LSTMCell({.units = 3}).ptr(), L::SimpleRNNCell({.units = 2}).ptr()}, .stateful = true, .name = "stack"})(y);
    auto both = L::Bidirectional({.layer = L::SimpleRNN({.units = 2, .stateful = true, .name = "bi_rnn"}), .name = "bi"})(x);
    return std::make_shared<k::Model>(std::vector<KerasTensor>{x},
                                      std::vector<KerasTensor>{L::Dense({.units = 2, .name = "head"})(y), both}, "stateful_recurrent");
  };
  auto conv = [] {
    auto x = L::Input({3, 5, 5, 2}, {.name = "frames"});
    auto y = L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .padding = "same", .return_sequences = true, .stateful = true,
                            .name = "conv_lstm"})(x);
    y = L::ConvLSTM2D({.filters = 3, .kernel_size = 2, .strides = 2, .stateful = true, .name = "conv_lstm_last"})(y);
    return std::make_shared<k::Model>(std::vector<KerasTensor>{x},
                                      std::vector<KerasTensor>{L::Dense({.units = 2, .name = "head"})(L::Flatten()(y))}, "stateful_conv");
  };
  // Ids in [0, 5): about one step in five is padding (id 0), holes anywhere, where the states
  // carried in from the previous run must be kept.
  auto masked = [] {
    auto ids = L::Input({6}, {.dtype = "int32", .name = "ids"});
    auto e = L::Embedding({.input_dim = 5, .output_dim = 3, .mask_zero = true})(ids);
    auto y = L::LSTM({.units = 3, .return_sequences = true, .stateful = true, .name = "masked_lstm"})(e);
    y = L::GRU({.units = 2, .go_backwards = true, .stateful = true, .name = "masked_gru"})(y);
    return std::make_shared<k::Model>(std::vector<KerasTensor>{ids}, std::vector<KerasTensor>{L::Dense({.units = 2, .name = "head"})(y)},
                                      "stateful_masked");
  };
  return {{"stateful_recurrent", recurrent,
           {{"lstm", {"h", "c"}}, {"gru", {"h"}}, {"stack", {"cell0_h", "cell0_c", "cell1_h"}}, {"forward_bi_rnn", {"h"}},
            {"backward_bi_rnn", {"h"}}},
           {"steps"},
           {"head", "bi"}},
          {"stateful_conv", conv, {{"conv_lstm", {"h", "c"}}, {"conv_lstm_last", {"h", "c"}}}, {"frames"}, {"head"}},
          {"stateful_masked", masked, {{"masked_lstm", {"h", "c"}}, {"masked_gru", {"h"}}}, {"ids"}, {"head"}}};
}

}  // namespace

TEST(OnnxStateful, ConsecutiveRunsCarryTheStatesAsConsecutivePredictCalls) {
  SKIP_WITHOUT_ONNX_WRITER();
  test_support::OnnxCases checks("stateful");
  const std::vector<StreamCase> all = cases();
  for (const auto& c : all) add_stream(checks, c);
  std::string skip;
  const auto results = checks.expect_all_match(1e-5, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  for (const auto& c : all) {
    SCOPED_TRACE(c.name);
    const nlohmann::json& r = results.at(c.name);
    ASSERT_FALSE(r.contains("error"));
    // The model's own inputs and outputs first, in their places; then the states, in layer order.
    std::vector<std::string> inputs = c.inputs, outputs = c.outputs;
    nlohmann::json pairs = nlohmann::json::array();
    for (const auto& [layer, names] : c.states)
      for (const auto& s : names) {
        inputs.push_back(port(layer, s, "in"));
        outputs.push_back(port(layer, s, "out"));
        pairs.push_back({{"layer", layer}, {"input", port(layer, s, "in")}, {"output", port(layer, s, "out")}});
        EXPECT_NE(r["doc"].get<std::string>().find(port(layer, s, "out") + " -> " + port(layer, s, "in")), std::string::npos)
            << r["doc"];
      }
    EXPECT_EQ(r["inputs"], nlohmann::json(inputs));
    EXPECT_EQ(r["outputs"], nlohmann::json(outputs));
    EXPECT_EQ(nlohmann::json::parse(r["metadata"]["keras_carried_states"].get<std::string>()), pairs);
    EXPECT_NE(r["doc"].get<std::string>().find("Feed zeros"), std::string::npos) << r["doc"];
  }
}

// Keyword initial states win over the carried ones, as in Keras: such a call has no state ports.
TEST(OnnxStateful, GivenInitialStatesNeedNoStatePorts) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({4, 3}, {.name = "steps"});
  auto h = L::Input({2}, {.name = "h"});
  k::CallArgs args;
  args.keywords = {"initial_state"};
  auto y = (*L::GRU({.units = 2, .stateful = true, .name = "gru"}).ptr())(std::vector<KerasTensor>{x, h}, args);
  k::Model model(std::vector<KerasTensor>{x, h}, y, "stateful_given_state");
  test_support::random_weights(model, 31, 0.4);
  test_support::OnnxCases checks("stateful_given");
  checks.add("stateful_given_state", model);
  std::string skip;
  const auto results = checks.expect_all_match(1e-5, skip);
  if (!skip.empty()) GTEST_SKIP() << skip;
  EXPECT_EQ(results.at("stateful_given_state")["inputs"], nlohmann::json({"steps", "h"}));
}

// A stateful layer called twice would need two states under one name: refused before writing.
TEST(OnnxStateful, AStatefulLayerCalledTwiceIsRefused) {
  const auto path = std::filesystem::temp_directory_path() / ("keras_onnx_stateful_twice_" + std::to_string(getpid()) + ".onnx");
  auto a = L::Input({4, 3}, {.name = "a"}), b = L::Input({4, 3}, {.name = "b"});
  auto shared = L::LSTM({.units = 2, .stateful = true, .name = "carry"});
  k::Model model(std::vector<KerasTensor>{a, b}, std::vector<KerasTensor>{shared(a), shared(b)}, "twice");
  k::testing::expect_error<k::NotImplementedError>([&] { k::export_model(model, path.string()); },
                                                   {"Layer 'carry' (LSTM)", "a stateful layer called once", "a second call"});
  EXPECT_FALSE(std::filesystem::exists(path));
}
