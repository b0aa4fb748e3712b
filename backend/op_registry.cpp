#include "backend/op_registry.h"

#include <time.h>

#include <chrono>
#include <sstream>

#include "backend/autodiff.h"
#include "backend/bf16_compute.h"
#include "backend/instrumentation.h"
#include "backend/op_profile.h"

namespace keras {

namespace {
template <class T>
const T& get_typed(const std::map<std::string, AttrValue>& values, const std::string& key, const char* type) {
  auto it = values.find(key);
  if (it == values.end()) fail<ValueError>("op attribute '" + key + "'", "a value", "none");
  if (auto* v = std::get_if<T>(&it->second)) return *v;
  fail<TypeError>("op attribute '" + key + "'", std::string("a ") + type, "another type");
}
}  // namespace

int64_t Attrs::get_int(const std::string& key) const { return get_typed<int64_t>(values_, key, "int"); }
double Attrs::get_float(const std::string& key) const {
  auto it = values_.find(key);
  if (it != values_.end())
    if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  return get_typed<double>(values_, key, "float");
}
bool Attrs::get_bool(const std::string& key) const { return get_typed<bool>(values_, key, "bool"); }
const std::string& Attrs::get_string(const std::string& key) const {
  return get_typed<std::string>(values_, key, "string");
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& key) const {
  return get_typed<std::vector<int64_t>>(values_, key, "int list");
}
int64_t Attrs::get_int(const std::string& key, int64_t fallback) const { return has(key) ? get_int(key) : fallback; }
double Attrs::get_float(const std::string& key, double fallback) const { return has(key) ? get_float(key) : fallback; }
bool Attrs::get_bool(const std::string& key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }

std::string Attrs::str() const {
  std::ostringstream os;
  for (const auto& [k, v] : values_) {
    os << k << '=';
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            os << '[';
            for (auto e : x) os << e << ',';
            os << ']';
          } else {
            os << x;
          }
        },
        v);
    os << ';';
  }
  return os.str();
}

const Tensor& GradContext::input(size_t i) const {
  if (i >= saved_inputs.size() || !saved_inputs[i].defined())
    fail<StateError>("gradient of " + op->name, "saved input " + std::to_string(i), "none",
                     "The op must declare SaveInputs.");
  return saved_inputs[i];
}

const Tensor& GradContext::output(size_t i) const {
  if (i >= saved_outputs.size() || !saved_outputs[i].defined())
    fail<StateError>("gradient of " + op->name, "saved output " + std::to_string(i), "none",
                     "The op must declare SaveOutputs.");
  return saved_outputs[i];
}

OpRegistry& OpRegistry::instance() {
  static OpRegistry registry;
  return registry;
}

OpDef& OpRegistry::define(const std::string& name) {
  OpDef& def = ops_[name];
  def.name = name;
  return def;
}

const OpDef& OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  if (it == ops_.end())
    fail<NotImplementedError>("op registry", "a registered op", "'" + name + "'", "No such op is defined.");
  return it->second;
}

bool OpRegistry::contains(const std::string& name) const { return ops_.count(name) != 0; }

void OpRegistry::register_kernel(const std::string& name, DeviceKind kind, KernelFn kernel) {
  OpDef& def = ops_[name];
  if (def.name.empty()) def.name = name;
  def.kernels[static_cast<int>(kind)] = std::move(kernel);
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, def] : ops_) out.push_back(name);
  return out;
}

std::vector<TensorSpec> same_as_first_input(const std::vector<TensorSpec>& in, const Attrs&) { return {in.at(0)}; }

std::vector<TensorSpec> infer_op(const std::string& name, const std::vector<TensorSpec>& inputs, const Attrs& attrs) {
  const OpDef& op = OpRegistry::instance().find(name);
  if (!op.shape) fail<NotImplementedError>("op '" + name + "'", "a shape function", "none");
  return op.shape(inputs, attrs);
}

TensorList run_op(const std::string& name, const TensorList& inputs, const Attrs& attrs) {
  return run_op(OpRegistry::instance().find(name), inputs, attrs);
}

Tensor run_op1(const OpDef& op, const TensorList& inputs, const Attrs& attrs) { return run_op(op, inputs, attrs)[0]; }

namespace {

// Whether any input or output is a two-byte float; TypeError for an in-place op (its float32 copy would be
// written instead of the input).
bool has_half(const TensorList& inputs, const std::vector<TensorSpec>& outputs, const OpDef& op) {
  bool any = false;
  for (const auto& t : inputs) any = any || is_half(t.dtype());
  for (const auto& s : outputs) any = any || is_half(s.dtype);
  if (any && op.mutates_inputs)
    fail<TypeError>("op '" + op.name + "'", "float32 or float64 tensors for an in-place op", "a two-byte float",
                    "Keep variables and optimizer state in float32 (mixed precision does).");
  return any;
}

// No input or output is float16: the two-byte ones are bfloat16 (the case a bf16 kernel takes).
bool no_float16(const TensorList& inputs, const std::vector<TensorSpec>& outputs) {
  for (const auto& t : inputs)
    if (t.dtype() == DType::float16) return false;
  for (const auto& s : outputs)
    if (s.dtype == DType::float16) return false;
  return true;
}

}  // namespace

TensorList run_op(const OpDef& op, const TensorList& inputs_in, const Attrs& attrs) {
  // 1. One device for all inputs.
  Device device = inputs_in.empty() ? default_device() : inputs_in[0].device();
  for (size_t i = 0; i < inputs_in.size(); ++i) {
    if (!inputs_in[i].defined())
      fail<ValueError>("op '" + op.name + "'", "a defined tensor as input " + std::to_string(i), "an undefined tensor");
    if (!(inputs_in[i].device() == device))
      fail<DeviceError>("op '" + op.name + "'", "all inputs on " + device.str(),
                        "input " + std::to_string(i) + " on " + inputs_in[i].device().str(),
                        "Move tensors with .to(device) first.");
  }
  // 2. The kernel for this device kind.
  const KernelFn& kernel = op.kernels[static_cast<int>(device.kind)];
  if (!kernel)
    fail<NotImplementedError>("op '" + op.name + "'", "a kernel for " + device_kind_name(device.kind), "none",
                              "This op is not implemented on that device.");
  // 3. Output specs (validates shapes and dtypes).
  std::vector<TensorSpec> in_specs;
  in_specs.reserve(inputs_in.size());
  for (const auto& t : inputs_in) in_specs.push_back({t.shape(), t.dtype()});
  std::vector<TensorSpec> out_specs = op.shape ? op.shape(in_specs, attrs) : std::vector<TensorSpec>{};
  // 4. Contiguous inputs, allocated outputs, run.
  TensorList inputs;
  inputs.reserve(inputs_in.size());
  for (const auto& t : inputs_in) {
    if (op.mutates_inputs && !t.is_contiguous())
      fail<ValueError>("op '" + op.name + "'", "contiguous inputs for an in-place op", "a strided view");
    inputs.push_back(op.mutates_inputs || op.strided_inputs ? t : t.contiguous());
  }
  bool in_float32 = !op.half_native && has_half(inputs, out_specs, op);
  const KernelFn* run = &kernel;
  const KernelFn* bf16_kernel = in_float32 ? find_bf16_kernel(op, device.kind) : nullptr;
  if (bf16_kernel && no_float16(inputs, out_specs)) {
    if (bf16_kernels_enabled(device.kind)) {
      run = bf16_kernel;
      in_float32 = false;
      detail::count_bf16_kernel_run();
    } else {
      detail::warn_bf16_in_float32(op.name);
    }
  }
  if (in_float32)
    for (auto& t : inputs)
      if (is_half(t.dtype())) t = t.astype(DType::float32);
  TensorList outputs;
  if (!op.kernel_allocates) {
    outputs.reserve(out_specs.size());
    for (const auto& s : out_specs)
      outputs.push_back(Tensor::empty(s.shape, in_float32 && is_half(s.dtype) ? DType::float32 : s.dtype, device));
  }
  const bool watched = instrumentation::active();
  if (watched && !op_profiling()) {
    const int64_t start = instrumentation::detail::now_ns();
    (*run)(inputs, outputs, attrs);
    instrumentation::detail::notify_op(op, attrs, inputs, outputs, start, instrumentation::detail::now_ns());
  } else if (op_profiling()) {
    auto cpu_now = [] {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
    };
    const int64_t start = instrumentation::detail::now_ns();
    double c0 = cpu_now();
    (*run)(inputs, outputs, attrs);
    const int64_t end = instrumentation::detail::now_ns();
    detail::record_op_time(op.name, inputs.empty() ? "()" : shape_str(inputs[0].shape()), 1e-9 * double(end - start),
                           cpu_now() - c0);
    if (watched) instrumentation::detail::notify_op(op, attrs, inputs, outputs, start, end);
  } else {
    (*run)(inputs, outputs, attrs);
  }
  if (op.mutates_inputs)
    for (auto& t : inputs) t.bump_version();
  if (in_float32) {
    for (size_t k = 0; k < outputs.size() && k < out_specs.size(); ++k)
      if (is_half(out_specs[k].dtype) && outputs[k].dtype() == DType::float32)
        outputs[k] = outputs[k].astype(out_specs[k].dtype);
    inputs.clear();  // the tape saves the caller's inputs below, not the float32 copies
    for (const auto& t : inputs_in) inputs.push_back(t.is_contiguous() ? t : t.contiguous());
  }
  // 5. Record on the tape.
  if (op.grad && !op.mutates_inputs && grad_recording()) {
    bool any = false;
    for (const auto& t : inputs_in) any = any || t.requires_grad();
    if (any) {
      auto node = std::make_shared<Node>();
      node->op = &op;
      node->attrs = attrs;
      node->layer_path = instrumentation::layer_path_handle();
      node->input_specs = std::move(in_specs);
      node->output_specs.reserve(outputs.size());
      for (const auto& t : outputs) node->output_specs.push_back({t.shape(), t.dtype()});
      if (op.save & SaveInputs)
        for (const auto& t : inputs) node->saved_inputs.push_back(t.detach());
      if (op.save & SaveOutputs)
        for (const auto& t : outputs) node->saved_outputs.push_back(t.detach());
      node->edges.resize(inputs_in.size());
      for (size_t i = 0; i < inputs_in.size(); ++i) {
        const TensorImpl& im = inputs_in[i].impl();
        if (im.grad_fn) node->edges[i] = {im.grad_fn, im.output_index, nullptr};
        else if (im.requires_grad) node->edges[i] = {nullptr, 0, inputs_in[i].impl_shared()};
      }
      for (size_t k = 0; k < outputs.size(); ++k) {
        // Outputs may be views of inputs (kernel_allocates); give each its own impl.
        auto im = std::make_shared<TensorImpl>(outputs[k].impl());
        im->grad_fn = node;
        im->output_index = static_cast<int>(k);
        im->requires_grad = false;
        outputs[k] = Tensor(im);
      }
    }
  }
  return outputs;
}

}  // namespace keras
