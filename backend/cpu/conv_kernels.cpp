// The registered CPU kernels of conv2d, conv2d_backward_data and conv2d_backward_weights.
//
// float32: each problem runs the candidate conv_choice.h picked for it by measurement: the
// project's direct AVX2 kernels (conv_direct.h, conv_backward_weights_direct.h) and its AVX2
// Winograd (conv_winograd.h) where they apply, oneDNN's direct
// algorithm, and oneDNN's Winograd where it offers it (conv_onednn.h).
// float64: the plain loops of reference_conv.cpp (oneDNN has no f64).
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/conv_backward_weights_direct.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_direct.h"
#include "backend/cpu/conv_onednn.h"
#include "backend/cpu/conv_winograd.h"
#include "backend/cpu/reference_conv.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using Problem = cpu::ConvProblem;
constexpr auto kWinograd = dnnl::algorithm::convolution_winograd;

// oneDNN offers Winograd for float32 3x3 stride-1 undilated ungrouped problems only (and only
// with AVX-512): elsewhere it is not even tried.
bool winograd_shape(const Problem& pr) {
  const ConvParams& p = pr.p;
  return pr.k[0] == 3 && pr.k[1] == 3 && p.stride_h == 1 && p.stride_w == 1 && p.dilation_h == 1 &&
         p.dilation_w == 1 && p.groups == 1;
}

dnnl::algorithm alg_of(cpu::ConvCandidate c) {
  return c == cpu::ConvCandidate::onednn_winograd ? dnnl::algorithm::convolution_winograd
                                                  : dnnl::algorithm::convolution_direct;
}

// The candidates of a problem, exact ones first: `direct` and the project's `winograd` where
// their predicates hold, oneDNN's direct algorithm always, its Winograd where oneDNN creates it
// (`offers_winograd`, only tried on Winograd's shapes).
std::vector<cpu::ConvCandidate> candidates(bool direct, bool winograd, const Problem& pr,
                                           const std::function<bool()>& offers_winograd) {
  std::vector<cpu::ConvCandidate> c;
  if (direct) c.push_back(cpu::ConvCandidate::direct);
  c.push_back(cpu::ConvCandidate::onednn_direct);
  if (winograd_shape(pr) && offers_winograd()) c.push_back(cpu::ConvCandidate::onednn_winograd);
  if (winograd) c.push_back(cpu::ConvCandidate::winograd);
  return c;
}

// ---------------- forward ----------------

void check_dtype(const std::string& op, const Tensor& t) {
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64)
    fail<TypeError>(op + " (cpu)", "float32 or float64", dtype_name(t.dtype()));
}

void conv2d_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& k = in[1];
  Tensor& y = out[0];
  Problem pr{x.shape(), k.shape(), y.shape(), ConvParams::from_attrs(attrs)};
  const std::string& act = attrs.get_string("activation");
  check_dtype("conv2d", x);
  if (y.numel() == 0) return;
  if (x.dtype() != DType::float32) return cpu::conv2d_loop(x, k, in.size() > 2 ? in[2] : Tensor(), pr.p, act, y);
  const Tensor* bias = in.size() > 2 ? &in[2] : nullptr;
  bool training = attrs.get_string("prop") == "training";
  auto cands = candidates(cpu::conv2d_direct_supported(pr.k, pr.p, act), cpu::conv2d_winograd_supported(pr.k, pr.p, act),
                          pr, [&] { return cpu::onednn_conv_forward_offered(pr, bias != nullptr, act, training, kWinograd); });
  cpu::ConvTrial trial;
  trial.run = [&](cpu::ConvCandidate c) {
    if (c == cpu::ConvCandidate::direct)
      cpu::conv2d_direct(x.data<float>(), pr.x, k.data<float>(), pr.k, bias ? bias->data<float>() : nullptr,
                         y.data<float>(), pr.y, pr.p, act);
    else if (c == cpu::ConvCandidate::winograd)
      cpu::conv2d_winograd(x.data<float>(), pr.x, k.data<float>(), pr.k, bias ? bias->data<float>() : nullptr,
                           y.data<float>(), pr.y, pr.p, act);
    else
      cpu::onednn_conv_forward(x, k, bias, y, pr, act, training, alg_of(c));
  };
  trial.outputs = {{y.data<float>(), static_cast<size_t>(y.numel())}};
  auto key = cpu::conv_choice_key("forward", pr, act, bias != nullptr, training ? "training" : "inference");
  cpu::run_conv(key, cands, trial);
}

// ---------------- forward with a residual (conv2d_add, backend/ops_conv_add.h) ----------------

// y = act(y + residual), act linear, relu or relu6: the direct candidate's pass after its
// convolution, and the float64 path's. NaN stays NaN, as the project's ReLU keeps it.
template <class T>
void add_residual(Tensor& y, const Tensor& residual, const std::string& act) {
  T* __restrict py = y.data<T>();
  const T* __restrict pr = residual.data<T>();
  const int64_t n = y.numel();
  if (act == "linear") {
#pragma omp parallel for if (n > (1 << 15)) schedule(static)
    for (int64_t i = 0; i < n; ++i) py[i] += pr[i];
    return;
  }
  const T hi = act == "relu6" ? T(6) : std::numeric_limits<T>::infinity();
#pragma omp parallel for if (n > (1 << 15)) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const T v = py[i] + pr[i];
    py[i] = v > T(0) ? (v < hi ? v : hi) : (v != v ? v : T(0));
  }
}

// Inputs x, kernel[, bias], residual. Candidates: oneDNN with the residual as a post-op (its
// direct algorithm, and Winograd where oneDNN takes the post-op there), and the direct kernel
// followed by one add_residual pass (as oneDNN's direct algorithm is where it declines the post-op).
void conv2d_add_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& k = in[1];
  const Tensor& residual = in.back();
  const Tensor* bias = in.size() > 3 ? &in[2] : nullptr;
  Tensor& y = out[0];
  Problem pr{x.shape(), k.shape(), y.shape(), ConvParams::from_attrs(attrs)};
  const std::string& act = attrs.get_string("activation");
  check_dtype("conv2d_add", x);
  if (y.numel() == 0) return;
  if (x.dtype() != DType::float32) {
    cpu::conv2d_loop(x, k, bias ? *bias : Tensor(), pr.p, "linear", y);
    return add_residual<double>(y, residual, act);
  }
  auto offered = [&](dnnl::algorithm alg) { return cpu::onednn_conv_forward_offered(pr, bias != nullptr, act, false, alg, true); };
  auto cands = candidates(cpu::conv2d_direct_supported(pr.k, pr.p, "linear"),
                          cpu::conv2d_winograd_supported(pr.k, pr.p, "linear"), pr, [&] { return offered(kWinograd); });
  cpu::ConvTrial trial;
  trial.run = [&](cpu::ConvCandidate c) {
    const bool ours = c == cpu::ConvCandidate::direct || c == cpu::ConvCandidate::winograd;
    // oneDNN's Winograd is a candidate only with the post-op; its direct algorithm nearly always takes it.
    if (!ours && (c == cpu::ConvCandidate::onednn_winograd || offered(alg_of(c))))
      return cpu::onednn_conv_forward(x, k, bias, y, pr, act, false, alg_of(c), &residual);
    if (c == cpu::ConvCandidate::direct)
      cpu::conv2d_direct(x.data<float>(), pr.x, k.data<float>(), pr.k, bias ? bias->data<float>() : nullptr, y.data<float>(),
                         pr.y, pr.p, "linear");
    else if (c == cpu::ConvCandidate::winograd)
      cpu::conv2d_winograd(x.data<float>(), pr.x, k.data<float>(), pr.k, bias ? bias->data<float>() : nullptr,
                           y.data<float>(), pr.y, pr.p, "linear");
    else
      cpu::onednn_conv_forward(x, k, bias, y, pr, "linear", false, alg_of(c));
    add_residual<float>(y, residual, act);
  };
  trial.outputs = {{y.data<float>(), static_cast<size_t>(y.numel())}};
  cpu::run_conv(cpu::conv_choice_key("forward_add", pr, act, bias != nullptr, "inference"), cands, trial);
}

// ---------------- backward data ----------------

// dx (rows, C) += bias (C): conv2d_transpose's bias, one in-place pass inside the op (no separate
// add op, output buffer or tape node).
template <class T>
void add_bias(Tensor& dx, const Tensor& bias) {
  const int64_t C = bias.numel(), rows = C ? dx.numel() / C : 0;
  T* d = dx.data<T>();
  const T* b = bias.data<T>();
#pragma omp parallel for if (dx.numel() > (1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) d[r * C + c] += b[c];
}

void backward_data_f32(const Tensor& dy, const Tensor& k, Tensor& dx, const Problem& pr) {
  auto cands = candidates(cpu::conv2d_backward_data_direct_supported(pr.k, pr.p),
                          cpu::conv2d_backward_data_winograd_supported(pr.k, pr.p), pr,
                          [&] { return cpu::onednn_conv_backward_data_offered(pr, kWinograd); });
  cpu::ConvTrial trial;
  trial.run = [&](cpu::ConvCandidate c) {
    if (c == cpu::ConvCandidate::direct)
      cpu::conv2d_backward_data_direct(dy.data<float>(), pr.y, k.data<float>(), pr.k, dx.data<float>(), pr.x, pr.p);
    else if (c == cpu::ConvCandidate::winograd)
      cpu::conv2d_backward_data_winograd(dy.data<float>(), pr.y, k.data<float>(), pr.k, dx.data<float>(), pr.x, pr.p);
    else
      cpu::onednn_conv_backward_data(dy, k, dx, pr, alg_of(c));
  };
  trial.outputs = {{dx.data<float>(), static_cast<size_t>(dx.numel())}};
  cpu::run_conv(cpu::conv_choice_key("backward_data", pr, "linear", false, "backward"), cands, trial);
}

void backward_data_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& dy = in[0];
  const Tensor& k = in[1];
  Tensor& dx = out[0];
  Problem pr{dx.shape(), k.shape(), dy.shape(), ConvParams::from_attrs(attrs)};
  check_dtype("conv2d_backward_data", dy);
  if (dx.numel() == 0) return;
  if (dy.numel() == 0) dx.fill_(0);
  else if (dy.dtype() != DType::float32) cpu::conv2d_backward_data_loop(dy, k, pr.p, dx);
  else backward_data_f32(dy, k, dx, pr);
  if (in.size() > 2) {
    if (dx.dtype() == DType::float32) add_bias<float>(dx, in[2]);
    else add_bias<double>(dx, in[2]);
  }
}

// ---------------- backward weights ----------------

void backward_weights_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& x = in[0];
  const Tensor& dy = in[1];
  Tensor& dk = out[0];
  bool with_bias = out.size() > 1;
  Problem pr{x.shape(), dk.shape(), dy.shape(), ConvParams::from_attrs(attrs)};
  check_dtype("conv2d_backward_weights", x);
  if (dk.numel() == 0 && !with_bias) return;
  if (dy.numel() == 0 || dk.numel() == 0) {
    for (auto& o : out) o.fill_(0);
    return;
  }
  if (x.dtype() != DType::float32) {
    cpu::conv2d_backward_weights_loop(x, dy, pr.p, dk);
    if (with_bias) {
      int64_t o = dk.shape()[3], rows = dy.numel() / o;
      const double* g = dy.data<double>();
      double* b = out[1].data<double>();
      for (int64_t j = 0; j < o; ++j) b[j] = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < o; ++j) b[j] += g[r * o + j];
    }
    return;
  }
  auto cands = candidates(cpu::conv2d_backward_weights_direct_supported(pr.k, pr.p),
                          cpu::conv2d_backward_weights_winograd_supported(pr.k, pr.p), pr,
                          [&] { return cpu::onednn_conv_backward_weights_offered(pr, with_bias, kWinograd); });
  cpu::ConvTrial trial;
  trial.run = [&](cpu::ConvCandidate c) {
    float* db = with_bias ? out[1].data<float>() : nullptr;
    if (c == cpu::ConvCandidate::direct)
      cpu::conv2d_backward_weights_direct(x.data<float>(), pr.x, dy.data<float>(), pr.y, dk.data<float>(), pr.k, db, pr.p);
    else if (c == cpu::ConvCandidate::winograd)
      cpu::conv2d_backward_weights_winograd(x.data<float>(), pr.x, dy.data<float>(), pr.y, dk.data<float>(), pr.k, db,
                                            pr.p);
    else
      cpu::onednn_conv_backward_weights(x, dy, out, pr, alg_of(c));
  };
  for (auto& o : out) trial.outputs.emplace_back(o.data<float>(), static_cast<size_t>(o.numel()));
  cpu::run_conv(cpu::conv_choice_key("backward_weights", pr, "linear", with_bias, "backward"), cands, trial);
}

}  // namespace

KERAS_REGISTER_KERNEL(conv2d, cpu, conv2d_kernel);
KERAS_REGISTER_KERNEL(conv2d_add, cpu, conv2d_add_kernel);
KERAS_REGISTER_KERNEL(conv2d_backward_data, cpu, backward_data_kernel);
KERAS_REGISTER_KERNEL(conv2d_backward_weights, cpu, backward_weights_kernel);

}  // namespace keras
