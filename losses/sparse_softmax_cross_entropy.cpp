#include "losses/sparse_softmax_cross_entropy.h"

#include <cmath>

namespace keras {
namespace {

constexpr const char* kOp = "sparse_softmax_cross_entropy";
constexpr const char* kGradOp = "sparse_softmax_cross_entropy_grad";

void check_labels_spec(const std::string& where, const TensorSpec& labels, int64_t n) {
  if (!is_integral(labels.dtype))
    fail<TypeError>(where, "int32 or int64 labels", dtype_name(labels.dtype) + " labels");
  if (labels.shape != Shape{n})
    fail<ShapeError>(where, "labels of shape (" + std::to_string(n) + ",)", "labels of shape " + shape_str(labels.shape));
}

std::vector<TensorSpec> forward_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  const std::string where = std::string("op '") + kOp + "'";
  if (in.size() != 2) fail<ValueError>(where, "2 inputs (logits, labels)", std::to_string(in.size()) + " inputs");
  const TensorSpec& logits = in[0];
  if (!is_floating(logits.dtype)) fail<TypeError>(where, "float32 or float64 logits", dtype_name(logits.dtype) + " logits");
  if (logits.shape.size() != 2 || logits.shape[1] < 1)
    fail<ShapeError>(where, "logits of shape (batch, classes) with classes >= 1", "logits of shape " + shape_str(logits.shape));
  check_labels_spec(where, in[1], logits.shape[0]);
  return {{{logits.shape[0]}, logits.dtype}, {logits.shape, logits.dtype}};
}

std::vector<TensorSpec> grad_shape(const std::vector<TensorSpec>& in, const Attrs&) {
  const std::string where = std::string("op '") + kGradOp + "'";
  if (in.size() != 3) fail<ValueError>(where, "3 inputs (softmax, labels, g)", std::to_string(in.size()) + " inputs");
  const TensorSpec& probs = in[0];
  if (!is_floating(probs.dtype) || probs.shape.size() != 2)
    fail<ShapeError>(where, "a floating softmax of shape (batch, classes)", dtype_name(probs.dtype) + " " + shape_str(probs.shape));
  check_labels_spec(where, in[1], probs.shape[0]);
  if (in[2].shape != Shape{probs.shape[0]} || in[2].dtype != probs.dtype)
    fail<ShapeError>(where, "g of shape (" + std::to_string(probs.shape[0]) + ",) and dtype " + dtype_name(probs.dtype),
                     dtype_name(in[2].dtype) + " " + shape_str(in[2].shape));
  return {probs};
}

// Labels are checked serially before the parallel loops, which must not throw.
template <class L>
void check_label_range(const char* op, const L* labels, int64_t n, int64_t classes) {
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= classes)
      fail<IndexError>(std::string("op '") + op + "'", "labels in [0, " + std::to_string(classes) + ")",
                       "label " + std::to_string(static_cast<int64_t>(labels[i])) + " at position " + std::to_string(i));
  }
}

template <class T, class L>
void forward_kernel(const T* x, const L* labels, T* loss, T* probs, int64_t n, int64_t c) {
#pragma omp parallel for if (n * c > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const T* row = x + i * c;
    T* p = probs + i * c;
    T m = row[0];
    for (int64_t j = 1; j < c; ++j) m = row[j] > m ? row[j] : m;
    // Accumulate in double so float32 rows with many classes keep their precision.
    double s = 0;
    for (int64_t j = 0; j < c; ++j) {
      T e = std::exp(row[j] - m);
      p[j] = e;
      s += static_cast<double>(e);
    }
    const T inv = static_cast<T>(1.0 / s);
    for (int64_t j = 0; j < c; ++j) p[j] *= inv;
    loss[i] = static_cast<T>(static_cast<double>(m) + std::log(s) - static_cast<double>(row[labels[i]]));
  }
}

template <class T, class L>
void grad_kernel(const T* probs, const L* labels, const T* g, T* dx, int64_t n, int64_t c) {
#pragma omp parallel for if (n * c > 32768)
  for (int64_t i = 0; i < n; ++i) {
    const T gi = g[i];
    const T* p = probs + i * c;
    T* d = dx + i * c;
    for (int64_t j = 0; j < c; ++j) d[j] = p[j] * gi;
    d[labels[i]] -= gi;
  }
}

// Calls f(T{}, L{}) for the floating dtype `t` and the label dtype `l`.
template <class F>
void dispatch_float_label(DType t, DType l, F&& f) {
  auto with_label = [&](auto tag) {
    if (l == DType::int32) f(tag, int32_t{});
    else f(tag, int64_t{});
  };
  if (t == DType::float64) with_label(double{});
  else with_label(float{});
}

}  // namespace

KERAS_REGISTER_OP(sparse_softmax_cross_entropy) {
  def.shape = forward_shape;
  def.save = SaveBoth;  // labels (input 1) and the softmax (output 1)
  def.grad = [](const GradContext& g) {
    TensorList grads(2);
    if (g.needs_grad[0]) grads[0] = ops::sparse_softmax_cross_entropy_grad(g.output(1), g.input(1), g.grad_outputs[0]);
    return grads;
  };
}

KERAS_REGISTER_KERNEL(sparse_softmax_cross_entropy, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  const int64_t n = in[0].dim(0), c = in[0].dim(1);
  dispatch_float_label(in[0].dtype(), in[1].dtype(), [&](auto t, auto l) {
    using T = decltype(t);
    using L = decltype(l);
    const L* labels = static_cast<const L*>(in[1].raw_data());
    check_label_range(kOp, labels, n, c);
    forward_kernel(static_cast<const T*>(in[0].raw_data()), labels, static_cast<T*>(out[0].raw_data()),
                   static_cast<T*>(out[1].raw_data()), n, c);
  });
});

KERAS_REGISTER_OP(sparse_softmax_cross_entropy_grad) { def.shape = grad_shape; }

KERAS_REGISTER_KERNEL(sparse_softmax_cross_entropy_grad, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  const int64_t n = in[0].dim(0), c = in[0].dim(1);
  dispatch_float_label(in[0].dtype(), in[1].dtype(), [&](auto t, auto l) {
    using T = decltype(t);
    using L = decltype(l);
    const L* labels = static_cast<const L*>(in[1].raw_data());
    check_label_range(kGradOp, labels, n, c);
    grad_kernel(static_cast<const T*>(in[0].raw_data()), labels, static_cast<const T*>(in[2].raw_data()),
                static_cast<T*>(out[0].raw_data()), n, c);
  });
});

namespace ops {

Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
  static const OpDef& def = OpRegistry::instance().find(kOp);
  return run_op(def, {logits, labels})[0];
}

Tensor sparse_softmax_cross_entropy_grad(const Tensor& softmax, const Tensor& labels, const Tensor& g) {
  static const OpDef& def = OpRegistry::instance().find(kGradOp);
  return run_op1(def, {softmax, labels, g});
}

}  // namespace ops
}  // namespace keras
