#include "keras/export/conv_lstm_op.h"

#include <cstdio>

#include "backend/errors.h"
#include "backend/ops_conv.h"
#include "keras/export/emitter.h"

namespace keras::onnx {
namespace {

// (k..., in, out) -> (out, in, k...).
HostTensor oihw(const HostTensor& kernel) {
  const int rank = static_cast<int>(kernel.shape.size()) - 2;
  std::vector<int> perm{rank + 1, rank};
  for (int a = 0; a < rank; ++a) perm.push_back(a);
  return permute(kernel, perm);
}

struct ConvLstmWeights {
  std::string w, r, b;  // b "" without a bias
};

// The cell's weights, made once per cell (a shared layer reuses them).
ConvLstmWeights weights_of(Graph& g, const Layer& cell, bool use_bias, const std::string& hint) {
  char key[48];
  std::snprintf(key, sizeof key, "%p/conv_lstm/", static_cast<const void*>(&cell));
  ConvLstmWeights w;
  w.w = g.weight(std::string(key) + "W", hint + "/W", [&] { return oihw(host_weight(cell, "kernel")); });
  w.r = g.weight(std::string(key) + "R", hint + "/R", [&] { return oihw(host_weight(cell, "recurrent_kernel")); });
  if (use_bias) w.b = g.weight(std::string(key) + "B", hint + "/B", [&] { return host_weight(cell, "bias"); });
  return w;
}

}  // namespace

SequenceResult emit_conv_lstm_sequence(Graph& g, const Layer& cell, const SequenceRun& run, const Shape& step,
                                       const std::string& hint, const std::string& where) {
  const json cfg = cell.get_config();
  const int64_t filters = cfg.at("filters").get<int64_t>();
  const size_t rank = step.size() - 2;
  const std::vector<int64_t> kernel = config_ints(cfg, "kernel_size", rank), strides = config_ints(cfg, "strides", rank),
                             dilations = config_ints(cfg, "dilation_rate", rank), ones(rank, 1);
  const std::string padding = cfg.value("padding", "valid");
  const std::vector<int64_t> in_spatial(step.begin() + 2, step.end());
  std::vector<int64_t> out_spatial;
  bool known = true;
  for (size_t a = 0; a < rank; ++a) {
    known = known && in_spatial[a] >= 0;
    out_spatial.push_back(in_spatial[a] < 0 ? -1 : ops::conv_output_length(in_spatial[a], kernel[a], padding, strides[a], dilations[a]));
  }
  Shape out_step{-1, filters};  // one step's output and states, channels-first
  out_step.insert(out_step.end(), out_spatial.begin(), out_spatial.end());
  const std::vector<Attr> input_conv = conv_attrs(in_spatial, kernel, strides, dilations, padding);
  // The recurrent convolution keeps h's extents: stride 1, "same", no dilation (Keras's).
  const std::vector<Attr> recurrent_conv = conv_attrs(out_spatial, kernel, ones, ones, "same");
  const ConvLstmWeights w = weights_of(g, cell, cfg.value("use_bias", true), hint);
  const std::string act = cfg.value("activation", "tanh"), rec = cfg.value("recurrent_activation", "sigmoid");

  ScanRecurrence scan;
  scan.x = run.x;
  scan.x_step = step;
  scan.output_step = out_step;
  scan.backwards = run.backwards;
  scan.zero_output_for_mask = run.zero_output_for_mask;
  if (!run.mask.empty()) {  // (T, N, 1) -> (T, N, 1, 1...): broadcasts over (N, F, spatial...)
    std::vector<int64_t> axes;
    for (size_t a = 0; a < rank; ++a) axes.push_back(static_cast<int64_t>(3 + a));
    scan.mask = g.add("Unsqueeze", {run.mask, g.constant_ints(hint + "/mask_axes", axes)}, {}, hint + "/mask_images");
  }
  if (known) {
    scan.zero_output = batch_zeros(g, run.x, 1, Shape(out_step.begin() + 1, out_step.end()), hint + "/zeros");
  } else {
    // Extents known only at run time: the zeros take the shape of the first step's input
    // convolution (one convolution more per run), its first `filters` channels.
    const std::string x0 = g.add("Gather", {run.x, g.constant_ints(hint + "/first_step", {0})}, {attr("axis", int64_t{0})},
                                 hint + "/x0");
    std::vector<std::string> args{g.add("Squeeze", {x0, g.constant_ints(hint + "/x0_axis", {0})}, {}, hint + "/x0_step"), w.w};
    const std::string z0 = g.add("Conv", args, input_conv, hint + "/z0");
    const std::string all = g.add("ConstantOfShape", {g.add("Shape", {z0}, {}, hint + "/z0_shape")}, {}, hint + "/zeros_4f");
    scan.zero_output = g.add("Slice", {all, g.constant_ints(hint + "/zeros_start", {0}), g.constant_ints(hint + "/zeros_end", {filters}),
                                       g.constant_ints(hint + "/zeros_axis", {1})},
                             {}, hint + "/zeros");
  }
  scan.initial = run.initial.empty() ? std::vector<std::string>(2, scan.zero_output) : run.initial;

  auto body_step = [&](Graph& body, const std::string& x_t, const std::vector<std::string>& states) {
    std::vector<std::string> x_args{x_t, w.w};
    if (!w.b.empty()) x_args.push_back(w.b);
    const std::string zx = body.add("Conv", x_args, input_conv, hint + "/step_input_conv");
    const std::string zh = body.add("Conv", {states[0], w.r}, recurrent_conv, hint + "/step_recurrent_conv");
    const std::string z = body.add("Add", {zx, zh}, {}, hint + "/step_z");
    const auto gates = body.add_multi("Split", {z, body.constant_ints(hint + "/step_split", {filters, filters, filters, filters})},
                                      {attr("axis", int64_t{1})}, hint + "/step_gate", 4);
    auto activate = [&](const std::string& name, const std::string& x, const std::string& tag) {
      return emit_activation(body, name, x, 1, hint + "/step_" + tag, where);
    };
    const std::string i = activate(rec, gates[0], "i"), f = activate(rec, gates[1], "f"), o = activate(rec, gates[3], "o");
    const std::string candidate = activate(act, gates[2], "candidate");
    const std::string c_new = body.add("Add", {body.add("Mul", {f, states[1]}, {}, hint + "/step_forget"),
                                               body.add("Mul", {i, candidate}, {}, hint + "/step_write")},
                                       {}, hint + "/step_c");
    const std::string h_new = body.add("Mul", {o, activate(act, c_new, "c_act")}, {}, hint + "/step_h");
    return StepOutputs{h_new, {h_new, c_new}};
  };
  return emit_scan_recurrence(g, scan, body_step, hint);
}

}  // namespace keras::onnx
