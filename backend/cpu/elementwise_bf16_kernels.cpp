// The bfloat16 CPU kernels (backend/bf16_compute.h) of the elementwise ops between the
// convolutions of a mixed_bfloat16 convnet: add, subtract and multiply of two tensors of one
// shape, relu, relu_grad and the fused relu's gradient (dense_activation_grad). Each reads
// bfloat16, computes in float32 and rounds once, which is what run_op's float32 path gives
// (convert the inputs, run, round the output) in one pass over memory instead of four; where the
// CPU has AVX512-BF16 the binary ones run bf16_spans_avx512.h's loops. Other shapes
// (broadcasting) take that path.
#include "backend/bf16_compute.h"
#include "backend/cpu/bf16_bits.h"
#include "backend/cpu/bf16_spans_avx512.h"
#include "backend/cpu/cpu_loops.h"
#include "backend/half.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using Binary = cpu::avx512::Bf16Op;  // add, subtract, multiply

KERAS_ISA_CLONES void binary_span(Binary op, const uint16_t* __restrict a, const uint16_t* __restrict b,
                                  uint16_t* __restrict out, int64_t n) {
  switch (op) {
    case Binary::add:
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(bfloat16_to_float(a[i]) + bfloat16_to_float(b[i]));
      return;
    case Binary::subtract:
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(bfloat16_to_float(a[i]) - bfloat16_to_float(b[i]));
      return;
    case Binary::multiply:
      for (int64_t i = 0; i < n; ++i) out[i] = float_to_bfloat16(bfloat16_to_float(a[i]) * bfloat16_to_float(b[i]));
      return;
  }
}

// relu keeps x where x > 0 or x is NaN (as the float32 kernel): the same bits, no rounding.
KERAS_ISA_CLONES void relu_span(const uint16_t* __restrict x, uint16_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x[i] & cpu::bf16_mask(cpu::bf16_positive(x[i]) | cpu::bf16_is_nan(x[i]));
  }
}

// relu_grad(grad, y): grad where y > 0, else 0 (relu'(0) = 0, as the float32 kernel).
KERAS_ISA_CLONES void relu_grad_span(const uint16_t* __restrict g, const uint16_t* __restrict y,
                                     uint16_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = g[i] & cpu::bf16_mask(cpu::bf16_positive(y[i]));
}

const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); }
uint16_t* bits(Tensor& t) { return static_cast<uint16_t*>(t.raw_data()); }

KernelFn binary(const char* op_name, Binary op) {
  return [op_name, op](const TensorList& in, TensorList& out, const Attrs& attrs) {
    if (in[0].shape() != in[1].shape()) {  // the shape rules give both operands one dtype
      const KernelFn& f32 = OpRegistry::instance().find(op_name).kernels[static_cast<int>(DeviceKind::cpu)];
      return run_bf16_in_float32(f32, in, out, attrs);
    }
    const bool fast = cpu::avx512::bf16_spans_available();
    cpu::parallel_spans(out[0].numel(), 1 << 15, [&](int64_t b, int64_t e) {
      if (fast)
        cpu::avx512::bf16_binary_span(op, cpu::avx512::Bf16Keep::all, bits(in[0]) + b, bits(in[1]) + b,
                                      nullptr, bits(out[0]) + b, e - b);
      else
        binary_span(op, bits(in[0]) + b, bits(in[1]) + b, bits(out[0]) + b, e - b);
    });
  };
}

void relu_bf16(const TensorList& in, TensorList& out, const Attrs&) {
  cpu::parallel_spans(out[0].numel(), 1 << 15,
                      [&](int64_t b, int64_t e) { relu_span(bits(in[0]) + b, bits(out[0]) + b, e - b); });
}

void relu_grad_bf16(const TensorList& in, TensorList& out, const Attrs&) {
  cpu::parallel_spans(out[0].numel(), 1 << 15, [&](int64_t b, int64_t e) {
    relu_grad_span(bits(in[0]) + b, bits(in[1]) + b, bits(out[0]) + b, e - b);
  });
}

// The gradient of a convolution's or dense layer's fused activation (grad, y): relu's is
// relu_grad; the others convert.
void activation_grad_bf16(const TensorList& in, TensorList& out, const Attrs& attrs) {
  if (attrs.get_string("activation") == "relu") return relu_grad_bf16(in, out, attrs);
  const auto& f32 = OpRegistry::instance().find("dense_activation_grad").kernels[static_cast<int>(DeviceKind::cpu)];
  run_bf16_in_float32(f32, in, out, attrs);
}

}  // namespace

KERAS_REGISTER_BF16_KERNEL(add, cpu, binary("add", Binary::add));
KERAS_REGISTER_BF16_KERNEL(subtract, cpu, binary("subtract", Binary::subtract));
KERAS_REGISTER_BF16_KERNEL(multiply, cpu, binary("multiply", Binary::multiply));
KERAS_REGISTER_BF16_KERNEL(relu, cpu, relu_bf16);
KERAS_REGISTER_BF16_KERNEL(relu_grad, cpu, relu_grad_bf16);
KERAS_REGISTER_BF16_KERNEL(dense_activation_grad, cpu, activation_grad_bf16);

}  // namespace keras
