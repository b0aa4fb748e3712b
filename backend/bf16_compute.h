// Where bfloat16 computes natively, and the float32 path everywhere else.
//
// Under mixed_bfloat16 the convolutions and matmuls (with their fused bias and activation) take
// bfloat16 tensors. On a CPU with bfloat16 instructions (AVX512-BF16 or AMX) oneDNN's bf16
// kernels run them (registered below, beside the op's float32 kernel), accumulating in float32: half the memory traffic and
// up to twice the arithmetic rate of float32. Elsewhere run_op converts the inputs to float32,
// runs the float32 kernel and rounds the outputs (the same values up to accumulation order), and
// says so once per process on stderr: there mixed precision is slower than float32 alone.
#pragma once
#include <cstdint>
#include <string>

#include "backend/device.h"
#include "backend/op_registry.h"

namespace keras {

// This CPU has bfloat16 dot-product instructions (AVX512-BF16 or AMX-BF16) as oneDNN sees them
// (DNNL_MAX_CPU_ISA can lower it).
bool cpu_has_bf16_instructions();

// Whether run_op hands bfloat16 inputs to an op's bf16 kernel on devices of `kind`. CPU:
// cpu_has_bf16_instructions(), unless KERAS_BF16_KERNELS is set: "1" turns them on wherever
// oneDNN has bf16 kernels (any AVX-512 CPU, emulating the instructions there: for tests, slower
// than float32), "0" off. CUDA: false (no bf16 kernels yet).
bool bf16_kernels_enabled(DeviceKind kind);

// While alive, turns the CPU's bf16 kernels on or off whatever the CPU and environment (for
// tests). Scopes nest, each restoring the setting before it; open them on one thread.
class ScopedBf16Kernels {
 public:
  explicit ScopedBf16Kernels(bool enabled);
  ~ScopedBf16Kernels();
  ScopedBf16Kernels(const ScopedBf16Kernels&) = delete;
  ScopedBf16Kernels& operator=(const ScopedBf16Kernels&) = delete;

 private:
  int previous_;
};

// Registers op `name`'s bfloat16 kernel for devices of `kind` (KERAS_REGISTER_BF16_KERNEL). run_op
// takes it when the op has bfloat16 inputs or outputs, no float16 ones, and bf16_kernels_enabled.
// The kernel gets whatever mix of bfloat16 and float32 the op's shape function admits (conv2d
// and matmul: one dtype; batch normalization: float32 statistics beside bfloat16 activations).
void register_bf16_kernel(const std::string& name, DeviceKind kind, KernelFn kernel);
// Op `op`'s bfloat16 kernel on `kind`, or null when it has none.
const KernelFn* find_bf16_kernel(const OpDef& op, DeviceKind kind);

// Ops handed to a bf16 kernel in this process so far (tests use it to see which path ran; a
// kernel may still run a problem oneDNN declines in float32, see run_bf16_in_float32).
uint64_t bf16_kernel_runs();

// Runs float32 `kernel` for bfloat16 `in`/`out`: inputs converted to float32, outputs rounded
// back into `out` (allocated by the caller). For a bf16 kernel whose problem oneDNN declines.
void run_bf16_in_float32(const KernelFn& kernel, const TensorList& in, TensorList& out, const Attrs& attrs);

namespace detail {
struct Bf16KernelRegistrar {
  Bf16KernelRegistrar(const char* name, DeviceKind kind, KernelFn fn) { register_bf16_kernel(name, kind, std::move(fn)); }
};
void count_bf16_kernel_run();
// The one-time notice that op `op`'s bfloat16 inputs compute in float32 on this CPU.
void warn_bf16_in_float32(const std::string& op);
}  // namespace detail

// KERAS_REGISTER_BF16_KERNEL(conv2d, cpu, conv2d_bf16): as KERAS_REGISTER_KERNEL, for bfloat16.
#define KERAS_REGISTER_BF16_KERNEL(name, kind, ...)                                            \
  static ::keras::detail::Bf16KernelRegistrar KERAS_CONCAT(keras_bf16_kernel_##name##_, kind)( \
      #name, ::keras::DeviceKind::kind, __VA_ARGS__)

}  // namespace keras
