// Inverted dropout: the op definitions, keras::ops::dropout and the CPU kernels.
//
// The keep mask is a pure function of (seed, first counter, element index): element i keeps
// when word i % 4 of the Philox block (seed, counter + i / 4) is >= rate * 2^32. Any device and
// any thread count therefore draw the same mask. The forward returns (y, mask) and the tape
// saves its outputs, so the backward needs the boolean mask (1 byte per element), never x.
#include <cmath>

#include "backend/ops.h"

namespace keras {
namespace {

void check_rate(const std::string& where, double rate) {
  if (!(rate >= 0.0 && rate < 1.0))
    fail<ValueError>(where, "a rate in [0, 1)", std::to_string(rate),
                     "rate is the fraction of inputs dropped; 1 would drop everything.");
}

// Smallest 32-bit word that keeps an element: P(word >= threshold) = 1 - rate.
uint64_t keep_threshold(double rate) { return static_cast<uint64_t>(std::ceil(rate * 4294967296.0)); }

}  // namespace

// dropout(x) -> (y, mask): attrs rate (double), seed, counter (int64, the Philox stream).
KERAS_REGISTER_OP(dropout) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    if (in.size() != 1) fail<ValueError>("op 'dropout'", "1 input", std::to_string(in.size()) + " inputs");
    if (!is_floating(in[0].dtype))
      fail<TypeError>("op 'dropout'", "a floating-point input", dtype_name(in[0].dtype), "Cast the tensor first.");
    check_rate("op 'dropout'", a.get_float("rate"));
    return std::vector<TensorSpec>{in[0], {in[0].shape, DType::boolean}};
  };
  def.save = SaveOutputs;
  def.grad = [](const GradContext& g) {
    static const OpDef& grad_op = OpRegistry::instance().find("dropout_grad");
    return TensorList{run_op1(grad_op, {g.grad_outputs[0], g.output(1)}, {{"rate", g.attrs.get_float("rate")}})};
  };
}

// dropout_grad(grad, mask) -> grad * mask / (1 - rate); attr rate. Linear in grad, so it is its
// own gradient.
KERAS_REGISTER_OP(dropout_grad) {
  def.shape = [](const std::vector<TensorSpec>& in, const Attrs& a) {
    if (in.size() != 2) fail<ValueError>("op 'dropout_grad'", "2 inputs (grad, mask)", std::to_string(in.size()) + " inputs");
    if (!is_floating(in[0].dtype))
      fail<TypeError>("op 'dropout_grad'", "a floating-point gradient", dtype_name(in[0].dtype));
    if (in[1].dtype != DType::boolean)
      fail<TypeError>("op 'dropout_grad'", "a bool mask", dtype_name(in[1].dtype));
    if (in[0].shape != in[1].shape)
      fail<ShapeError>("op 'dropout_grad'", "gradient of the mask's shape " + shape_str(in[1].shape),
                       shape_str(in[0].shape));
    check_rate("op 'dropout_grad'", a.get_float("rate"));
    return std::vector<TensorSpec>{in[0]};
  };
  def.save = SaveInputs;
  def.grad = [](const GradContext& g) {
    static const OpDef& self = OpRegistry::instance().find("dropout_grad");
    return TensorList{run_op1(self, {g.grad_outputs[0], g.input(1)}, g.attrs), Tensor()};
  };
}

namespace {
constexpr int64_t kParallelMin = 1 << 15;

template <class F>
void dispatch_floating(DType t, F&& f) {
  if (t == DType::float64) f(double{});
  else f(float{});
}


// Kept as functions: a #pragma cannot sit inside the registration macro's argument.
void dropout_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  const double rate = a.get_float("rate");
  const uint64_t seed = static_cast<uint64_t>(a.get_int("seed"));
  const uint64_t counter = static_cast<uint64_t>(a.get_int("counter"));
  const uint64_t threshold = keep_threshold(rate);
  const int64_t n = in[0].numel();
  const int64_t blocks = (n + 3) / 4;
  bool* mask = out[1].data<bool>();
  dispatch_floating(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - rate));
    const T* x = static_cast<const T*>(in[0].raw_data());
    T* y = static_cast<T*>(out[0].raw_data());
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      uint32_t w[4];
      philox4x32(seed, counter + static_cast<uint64_t>(b), w);
      for (int64_t j = 0, i = 4 * b; j < 4 && i < n; ++j, ++i) {
        bool keep = w[j] >= threshold;
        mask[i] = keep;
        y[i] = keep ? x[i] * scale : T(0);
      }
    }
  });
}

void dropout_grad_cpu(const TensorList& in, TensorList& out, const Attrs& a) {
  const double rate = a.get_float("rate");
  const int64_t n = in[0].numel();
  const bool* mask = in[1].data<bool>();
  dispatch_floating(in[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T scale = static_cast<T>(1.0 / (1.0 - rate));
    const T* g = static_cast<const T*>(in[0].raw_data());
    T* d = static_cast<T*>(out[0].raw_data());
#pragma omp parallel for if (n > kParallelMin) schedule(static)
    for (int64_t i = 0; i < n; ++i) d[i] = mask[i] ? g[i] * scale : T(0);
  });
}
}  // namespace

KERAS_REGISTER_KERNEL(dropout, cpu, dropout_cpu);
KERAS_REGISTER_KERNEL(dropout_grad, cpu, dropout_grad_cpu);

namespace ops {
// x float32/float64; rate in [0, 1) (ValueError otherwise). Reserves ceil(numel / 4) Philox
// blocks of `gen`, so consecutive calls draw independent masks. rate 0 returns x itself.
Tensor dropout(const Tensor& x, double rate, Generator& gen) {
  static const OpDef& def = OpRegistry::instance().find("dropout");
  check_rate("keras::ops::dropout", rate);
  if (rate == 0.0) return x;
  uint64_t counter = gen.advance(static_cast<uint64_t>((x.numel() + 3) / 4));
  Attrs attrs{{"rate", rate},
              {"seed", static_cast<int64_t>(gen.seed())},
              {"counter", static_cast<int64_t>(counter)}};
  return run_op(def, {x}, attrs)[0];
}
}  // namespace ops

}  // namespace keras
