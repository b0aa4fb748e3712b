// ONNX emitters of the recurrent layers SimpleRNN, LSTM and GRU as ONNX's RNN, LSTM and GRU ops.
// Keras keeps gates as column blocks of (in, k * units) kernels, ONNX as row blocks of
// (k * units, in): the kernels are transposed, and LSTM's blocks reordered from Keras's
// i, f, c, o to ONNX's i, o, f, c (GRU's z, r, h is the same in both; reset_after is ONNX's
// linear_before_reset). Sequences go time-major through the op and back.
#include <limits>

#include "backend/errors.h"
#include "keras/export/emitter.h"

namespace keras::onnx {
namespace {

std::string where_of(const EmitCall& c) { return c.layer.where() + " ONNX export"; }

std::string onnx_activation(const EmitCall& c, const std::string& name) {
  if (name == "tanh") return "Tanh";
  if (name == "sigmoid") return "Sigmoid";
  if (name == "relu") return "Relu";
  fail<NotImplementedError>(where_of(c), "a recurrent activation tanh, sigmoid or relu", "'" + name + "'");
}

// (rows, cols) -> (cols, rows) with the column blocks of width `block` taken in `order`, as a
// (1, cols, rows) ONNX weight (one direction).
HostTensor gate_rows(const HostTensor& kernel, int64_t block, const std::vector<int>& order) {
  const HostTensor t = permute(kernel, {1, 0});  // (k * units, rows)
  const int64_t rows = t.shape[1];
  HostTensor out{{1, t.shape[0], rows}, {}};
  out.data.reserve(t.data.size());
  for (int g : order)
    out.data.insert(out.data.end(), t.data.begin() + static_cast<std::ptrdiff_t>(g * block * rows),
                    t.data.begin() + static_cast<std::ptrdiff_t>((g + 1) * block * rows));
  return out;
}

// ONNX's B (1, 2 * k * units): the input biases in `order`, then the recurrent ones (zeros when
// Keras has a single bias).
HostTensor gate_bias(const std::vector<float>& input, const std::vector<float>& recurrent, int64_t block,
                     const std::vector<int>& order) {
  HostTensor out{{1, static_cast<int64_t>(2 * order.size()) * block}, {}};
  for (const auto* src : {&input, &recurrent})
    for (int g : order)
      for (int64_t j = 0; j < block; ++j)
        out.data.push_back(src->empty() ? 0.f : (*src)[static_cast<size_t>(g * block + j)]);
  return out;
}

// `time_order`: a go_backwards sequence comes back in time order (Bidirectional's backward half)
// instead of Keras's processing order.
std::vector<Value> emit_recurrent(Graph& g, const EmitCall& c, const std::string& op_type, int gates,
                                  const std::vector<int>& order, bool time_order = false) {
  const json& cfg = c.config;
  if (cfg.value("stateful", false)) fail<NotImplementedError>(where_of(c), "stateful false", "stateful true");
  const int64_t units = cfg.at("units").get<int64_t>();
  // initial_state (by keyword): h, and c for an LSTM, each (N, units) -> ONNX's (1, N, units).
  std::vector<std::string> states;
  for (size_t k = 0; k < c.keywords.size(); ++k) {
    const Value& s = c.inputs[c.inputs.size() - c.keywords.size() + k];
    if (c.keywords[k] != "initial_state")
      fail<NotImplementedError>(where_of(c), "keyword tensors initial_state only", "'" + c.keywords[k] + "'");
    states.push_back(g.add("Unsqueeze", {g.as_keras(s), g.constant_ints(c.hint("state_axis0"), {0})}, {}, c.hint("initial_state")));
  }
  const std::string x = g.add("Transpose", {g.as_keras(c.inputs[0])}, {attr("perm", std::vector<int64_t>{1, 0, 2})},
                              c.hint("time_major"));
  const std::string w = c.weight(g, "W", [&] { return gate_rows(host_weight(c.layer, "kernel"), units, order); });
  const std::string r = c.weight(g, "R", [&] { return gate_rows(host_weight(c.layer, "recurrent_kernel"), units, order); });
  std::vector<std::string> args{x, w, r};
  if (cfg.value("use_bias", true)) {
    args.push_back(c.weight(g, "B", [&] {
      const HostTensor b = host_weight(c.layer, "bias");
      const size_t n = static_cast<size_t>(gates * units);
      if (b.data.size() == 2 * n)  // GRU reset_after: (2, 3 units), input then recurrent
        return gate_bias({b.data.begin(), b.data.begin() + static_cast<std::ptrdiff_t>(n)},
                         {b.data.begin() + static_cast<std::ptrdiff_t>(n), b.data.end()}, units, order);
      return gate_bias(b.data, {}, units, order);
    }));
  }
  if (!states.empty()) {
    args.resize(4);  // B ("" without a bias), then sequence_lens: none
    args.push_back("");
    args.insert(args.end(), states.begin(), states.end());
  }
  const std::string act = onnx_activation(c, cfg.value("activation", "tanh"));
  std::vector<std::string> activations;
  if (op_type == "RNN") activations = {act};
  else {
    const std::string rec = onnx_activation(c, cfg.value("recurrent_activation", "sigmoid"));
    activations = op_type == "LSTM" ? std::vector<std::string>{rec, act, act} : std::vector<std::string>{rec, act};
  }
  std::vector<Attr> attrs{attr("hidden_size", units), attr("direction", cfg.value("go_backwards", false) ? "reverse" : "forward")};
  Attr acts;
  acts.name = "activations";
  acts.kind = Attr::Kind::Strings;
  acts.strings = activations;
  attrs.push_back(acts);
  if (op_type == "GRU") attrs.push_back(attr("linear_before_reset", int64_t{cfg.value("reset_after", true) ? 1 : 0}));
  const int n_out = op_type == "LSTM" ? 3 : 2;
  const std::vector<std::string> outs = g.add_multi(op_type, args, std::move(attrs), c.hint(op_type), n_out);

  std::vector<Value> result;
  if (cfg.value("return_sequences", false)) {
    // Y (T, 1, N, U) -> (N, T, U); go_backwards returns the steps in processing order (reversed).
    std::string y = g.add("Squeeze", {outs[0], g.constant_ints(c.hint("axis1"), {1})}, {}, c.hint("Y"));
    if (cfg.value("go_backwards", false) && !time_order)
      y = g.add("Slice", {y, g.constant_ints(c.hint("rev_start"), {-1}),
                          g.constant_ints(c.hint("rev_end"), {std::numeric_limits<int64_t>::min()}),
                          g.constant_ints(c.hint("rev_axis"), {0}), g.constant_ints(c.hint("rev_step"), {-1})},
                {}, c.hint("reversed"));
    result.push_back(c.output(g.add("Transpose", {y}, {attr("perm", std::vector<int64_t>{1, 0, 2})}, c.hint("batch_major"))));
  } else {
    result.push_back(c.output(g.add("Squeeze", {outs[1], g.constant_ints(c.hint("axis0"), {0})}, {}, c.hint("last"))));
  }
  if (cfg.value("return_state", false))
    for (int k = 1; k < n_out; ++k)
      result.push_back(c.output(g.add("Squeeze", {outs[static_cast<size_t>(k)], g.constant_ints(c.hint("state_axis"), {0})}, {},
                                      c.hint("state")),
                                false, static_cast<size_t>(k)));
  return result;
}

std::vector<Value> emit_by_class(Graph& g, const EmitCall& c, bool time_order) {
  const std::string cls = c.layer.class_name();
  if (cls == "LSTM") return emit_recurrent(g, c, "LSTM", 4, {0, 3, 1, 2}, time_order);
  if (cls == "GRU") return emit_recurrent(g, c, "GRU", 3, {0, 1, 2}, time_order);
  if (cls == "SimpleRNN") return emit_recurrent(g, c, "RNN", 1, {0}, time_order);
  fail<NotImplementedError>(where_of(c), "a Bidirectional LSTM, GRU or SimpleRNN", cls);
}

// Bidirectional: both halves as their own ops (the backward one's sequence in time order), then
// merged as merge_mode says; states: the forward ones, then the backward ones.
std::vector<Value> emit_bidirectional(Graph& g, const EmitCall& c) {
  std::vector<LayerPtr> halves = c.layer.sublayers();
  const std::string merge = c.config.value("merge_mode", std::string("concat"));
  std::vector<std::vector<Value>> outs;
  for (const LayerPtr& half : halves) {
    const json cfg = half->get_config();
    const int64_t units = cfg.at("units").get<int64_t>();
    const Shape& in = c.inputs[0].shape;
    std::vector<TensorSpec> specs{{cfg.value("return_sequences", false) ? Shape{-1, in[1], units} : Shape{-1, units}}};
    for (int k = 0; k < (half->class_name() == "LSTM" ? 2 : 1); ++k) specs.push_back({Shape{-1, units}});
    EmitCall sub{*half, cfg, c.inputs, specs};
    outs.push_back(emit_by_class(g, sub, true));
  }
  std::vector<Value> result;
  if (merge.empty()) {
    result = {outs[0][0], outs[1][0]};
  } else {
    const std::string a = outs[0][0].name, b = outs[1][0].name;
    std::string y;
    if (merge == "concat") y = g.add("Concat", {a, b}, {attr("axis", int64_t{-1})}, c.hint("concat"));
    else if (merge == "sum") y = g.add("Add", {a, b}, {}, c.hint("sum"));
    else if (merge == "mul") y = g.add("Mul", {a, b}, {}, c.hint("mul"));
    else if (merge == "ave")
      y = g.add("Mul", {g.add("Add", {a, b}, {}, c.hint("sum")), g.constant_scalar(c.hint("half"), 0.5f)}, {}, c.hint("ave"));
    else fail<NotImplementedError>(where_of(c), "merge_mode concat, sum, mul, ave or None", "'" + merge + "'");
    result.push_back(c.output(y));
  }
  for (const auto& half : outs)
    for (size_t k = 1; k < half.size(); ++k) result.push_back(half[k]);
  for (size_t i = 0; i < result.size(); ++i) result[i].shape = c.outputs.at(i).shape;
  return result;
}

KERAS_REGISTER_ONNX_EMITTER("Bidirectional", emit_bidirectional);
KERAS_REGISTER_ONNX_EMITTER("SimpleRNN", [](Graph& g, const EmitCall& c) { return emit_recurrent(g, c, "RNN", 1, {0}); });
// Keras i, f, c, o -> ONNX i, o, f, c.
KERAS_REGISTER_ONNX_EMITTER("LSTM", [](Graph& g, const EmitCall& c) { return emit_recurrent(g, c, "LSTM", 4, {0, 3, 1, 2}); });
KERAS_REGISTER_ONNX_EMITTER("GRU", [](Graph& g, const EmitCall& c) { return emit_recurrent(g, c, "GRU", 3, {0, 1, 2}); });

}  // namespace
}  // namespace keras::onnx
