#include "keras/export/scan_recurrence.h"

#include "backend/errors.h"

namespace keras::onnx {

std::string batch_zeros(Graph& g, const std::string& like, int64_t batch_axis, const Shape& step, const std::string& hint) {
  const std::string batch = g.add("Gather", {g.add("Shape", {like}, {}, hint + "_like_shape"), g.constant_ints(hint + "_batch_axis", {batch_axis})},
                                  {attr("axis", int64_t{0})}, hint + "_batch");
  const std::string dims = g.add("Concat", {batch, g.constant_ints(hint + "_step", step)}, {attr("axis", int64_t{0})}, hint + "_dims");
  Shape one{1};
  one.insert(one.end(), step.begin(), step.end());
  HostTensor zero{one, std::vector<float>(static_cast<size_t>(shape_numel(one)), 0.f)};
  return g.add("Expand", {g.constant(hint + "_zero", zero), dims}, {}, hint);
}

SequenceResult emit_scan_recurrence(Graph& g, const ScanRecurrence& run, const StepBody& step, const std::string& hint) {
  const size_t n_states = run.initial.size();
  const bool masked = !run.mask.empty();
  auto state_shape = [&](size_t k) { return run.state_steps.empty() ? run.output_step : run.state_steps.at(k); };
  std::vector<std::string> scan_in = run.initial;
  scan_in.push_back(run.zero_output);  // the previous output
  scan_in.push_back(run.x);
  if (masked) scan_in.push_back(run.mask);

  // Body inputs: the states, the previous output, then the step's slices (input[, mask]).
  std::shared_ptr<Graph> body = g.subgraph();
  std::vector<std::string> h;
  for (size_t k = 0; k < n_states; ++k) {
    h.push_back(body->unique(hint + "/step_state"));
    body->add_input({h.back(), state_shape(k)});
  }
  const std::string prev = body->unique(hint + "/step_previous"), x_t = body->unique(hint + "/step_x");
  body->add_input({prev, run.output_step});
  body->add_input({x_t, run.x_step});
  std::string m_t;
  if (masked) {
    m_t = body->unique(hint + "/step_mask");
    Shape mask_step(run.output_step.size(), 1);
    mask_step[0] = -1;
    body->add_input({m_t, mask_step, DType::boolean});
  }
  const StepOutputs fresh = step(*body, x_t, h);
  if (fresh.states.size() != n_states)
    fail<ValueError>(hint + " ONNX export", std::to_string(n_states) + " states from a step", std::to_string(fresh.states.size()));
  std::vector<std::string> body_outputs;
  for (size_t k = 0; k < n_states; ++k)
    body_outputs.push_back(masked ? body->add("Where", {m_t, fresh.states[k], h[k]}, {}, hint + "/step_kept_state")
                                  : body->add("Identity", {fresh.states[k]}, {}, hint + "/step_new_state"));
  std::string out = fresh.output;
  if (masked) {
    const std::string held = run.zero_output_for_mask ? body->constant_scalar(hint + "/step_zero", 0.f) : prev;
    out = body->add("Where", {m_t, fresh.output, held}, {}, hint + "/step_output");
  } else {
    out = body->add("Identity", {out}, {}, hint + "/step_output");
  }
  body_outputs.push_back(out);
  body_outputs.push_back(body->add("Identity", {out}, {}, hint + "/step_sequence"));
  for (size_t k = 0; k < body_outputs.size(); ++k)
    body->add_output({body_outputs[k], k < n_states ? state_shape(k) : run.output_step});

  // go_backwards: the steps are read last first and the outputs prepended, so that the sequence
  // comes out in time order as ONNX's recurrent operators' Y does.
  const int64_t dir = run.backwards ? 1 : 0;
  const std::vector<int64_t> in_dirs(masked ? 2 : 1, dir);
  const auto outs = g.add_multi("Scan", scan_in,
                                {attr_graph("body", body), attr("num_scan_inputs", static_cast<int64_t>(in_dirs.size())),
                                 attr("scan_input_directions", in_dirs), attr("scan_output_directions", std::vector<int64_t>{dir})},
                                hint + "/Scan", static_cast<int>(n_states) + 2);
  SequenceResult r;
  r.states.assign(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(n_states));
  r.last = outs[n_states];
  r.sequence = outs[n_states + 1];
  return r;
}

}  // namespace keras::onnx
