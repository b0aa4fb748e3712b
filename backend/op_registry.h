// The op registry: every tensor operation is one OpDef with a shape function, a forward kernel per
// device kind and (if differentiable) a gradient built from other ops. `run_op` is the one door
// through which ops execute: it checks devices, infers output specs, allocates outputs, finds the
// kernel (a missing one is a NotImplementedError naming op and device, never a silent fallback)
// and records a tape node when gradients are being taken.
//
// Registering an op (in any .cpp, at static-initialisation time):
//   KERAS_REGISTER_OP(my_relu) {
//     def.shape = same_shape_as_input;
//     def.grad = [](const GradContext& g) { return TensorList{ops::relu_grad(g.grad_outputs[0], g.input(0))}; };
//     def.save = SaveInputs;
//   }
//   KERAS_REGISTER_KERNEL(my_relu, cpu, my_relu_cpu);   // my_relu_cpu: a KernelFn
// Register named functions rather than lambdas with pragmas: a `#pragma omp` inside a macro
// argument does not compile.
#pragma once
#include <array>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "backend/tensor.h"

namespace keras {

using TensorList = std::vector<Tensor>;

// Op attributes: small values that select the computation (axes, rates, flags, names).
using AttrValue = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}
  Attrs& set(const std::string& key, AttrValue value) { values_[key] = std::move(value); return *this; }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  // Typed getters; throw ValueError naming the key when absent or of another type.
  int64_t get_int(const std::string& key) const;
  double get_float(const std::string& key) const;  // accepts an int value too
  bool get_bool(const std::string& key) const;
  const std::string& get_string(const std::string& key) const;
  const std::vector<int64_t>& get_ints(const std::string& key) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  // Stable text form, used in cache keys and error messages.
  std::string str() const;
  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  std::map<std::string, AttrValue> values_;
};

struct TensorSpec {
  Shape shape;
  DType dtype = DType::float32;
};

// What a gradient function sees. input(i)/output(i) are only available for ops that declared
// them saved (OpDef::save); shapes and dtypes always are.
struct GradContext {
  const struct OpDef* op = nullptr;
  const Attrs& attrs;
  const std::vector<TensorSpec>& input_specs;
  const std::vector<TensorSpec>& output_specs;
  const TensorList& saved_inputs;
  const TensorList& saved_outputs;
  const TensorList& grad_outputs;       // one per output, zero-filled where no gradient flowed
                                        // (undefined there for ops with OpDef::grad_takes_missing)
  const std::vector<bool>& needs_grad;  // per input; skip work for false entries
  // Ops with OpDef::grad_sums_two: a second contribution to grad_outputs[0] that the backward pass
  // left for the gradient function to add; null when there is none.
  const Tensor* grad_output_addend = nullptr;
  const Tensor& input(size_t i) const;
  const Tensor& output(size_t i) const;
};

using ShapeFn = std::function<std::vector<TensorSpec>(const std::vector<TensorSpec>&, const Attrs&)>;
using KernelFn = std::function<void(const TensorList& inputs, TensorList& outputs, const Attrs&)>;
// Returns one gradient per input (an undefined Tensor where needs_grad is false or none exists).
using GradFn = std::function<TensorList(const GradContext&)>;

enum SaveFlags : unsigned { SaveNone = 0, SaveInputs = 1, SaveOutputs = 2, SaveBoth = 3 };

struct OpDef {
  std::string name;
  ShapeFn shape;          // required: validates inputs and gives output specs
  GradFn grad;            // empty = not differentiable (outputs never require grad)
  unsigned save = SaveNone;
  // Kernels that return views set this: the kernel fills `outputs` itself, nothing is allocated.
  bool kernel_allocates = false;
  // The kernel handles strided inputs itself (the strided copy that makes tensors contiguous).
  bool strided_inputs = false;
  // In-place ops (optimizer updates): inputs are passed as given (must be contiguous) and may
  // be written; their storage version is bumped. Never recorded.
  bool mutates_inputs = false;
  // The kernels take bfloat16/float16 inputs themselves (copies, casts, views). Other ops get
  // them as float32: run_op converts the two-byte inputs, runs the float32 kernel and rounds the
  // outputs back, which is what a two-byte op computing in float32 gives (TensorFlow's CPU ops).
  bool half_native = false;
  // A single-output op whose gradient function adds two contributions to its output's gradient
  // itself (GradContext::grad_output_addend), in the pass it makes anyway: add_relu's, where a
  // residual block's input gradient is the sum of the shortcut's and the convolution's.
  bool grad_sums_two = false;
  // The gradient function takes the gradient of an output that no gradient reached as an undefined
  // tensor (it is zero) instead of a zero-filled one: attention_heads', whose probabilities few
  // models use, skips a fill and a pass over them.
  bool grad_takes_missing = false;
  std::array<KernelFn, kNumDeviceKinds> kernels{};
};

class OpRegistry {
 public:
  static OpRegistry& instance();
  // Creates (or returns) the definition; used by KERAS_REGISTER_OP.
  OpDef& define(const std::string& name);
  // Throws NotImplementedError naming the op when unknown.
  const OpDef& find(const std::string& name) const;
  bool contains(const std::string& name) const;
  void register_kernel(const std::string& name, DeviceKind kind, KernelFn kernel);
  std::vector<std::string> names() const;

 private:
  std::map<std::string, OpDef> ops_;
};

// Runs an op: see the file comment. Inputs must share one device (DeviceError otherwise).
// Two-byte float inputs of an op that is not half_native run in float32 (see OpDef); an in-place
// op given one is a TypeError.
TensorList run_op(const OpDef& op, const TensorList& inputs, const Attrs& attrs = {});
TensorList run_op(const std::string& name, const TensorList& inputs, const Attrs& attrs = {});
// Single-output convenience.
Tensor run_op1(const OpDef& op, const TensorList& inputs, const Attrs& attrs = {});

// Shape-only evaluation (symbolic tensors, functional API): validates and returns output specs.
std::vector<TensorSpec> infer_op(const std::string& name, const std::vector<TensorSpec>& inputs,
                                 const Attrs& attrs = {});

// Common shape functions.
std::vector<TensorSpec> same_as_first_input(const std::vector<TensorSpec>& in, const Attrs&);

namespace detail {
struct OpRegistrar {
  OpRegistrar(const char* name, void (*init)(OpDef&)) { init(OpRegistry::instance().define(name)); }
};
struct KernelRegistrar {
  KernelRegistrar(const char* name, DeviceKind kind, KernelFn fn) {
    OpRegistry::instance().register_kernel(name, kind, std::move(fn));
  }
};
}  // namespace detail

#define KERAS_CONCAT_INNER(a, b) a##b
#define KERAS_CONCAT(a, b) KERAS_CONCAT_INNER(a, b)

// Defines op `name`; the body fills `OpDef& def` (name is set already).
#define KERAS_REGISTER_OP(name)                                                              \
  static void KERAS_CONCAT(keras_op_init_, name)(::keras::OpDef & def);                      \
  static ::keras::detail::OpRegistrar KERAS_CONCAT(keras_op_registrar_, name)(#name,         \
      &KERAS_CONCAT(keras_op_init_, name));                                                  \
  static void KERAS_CONCAT(keras_op_init_, name)([[maybe_unused]] ::keras::OpDef & def)

// Registers a kernel for op `name` on device kind `kind` (cpu, cuda); followed by a lambda body:
//   KERAS_REGISTER_KERNEL(add, cpu, [](const TensorList& in, TensorList& out, const Attrs& a) {...});
#define KERAS_REGISTER_KERNEL(name, kind, ...)                                               \
  static ::keras::detail::KernelRegistrar KERAS_CONCAT(keras_kernel_##name##_, kind)(        \
      #name, ::keras::DeviceKind::kind, __VA_ARGS__)

}  // namespace keras
