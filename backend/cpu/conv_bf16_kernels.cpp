// The bfloat16 CPU kernels of conv2d, conv2d_add, conv2d_backward_data and conv2d_backward_weights
// (see backend/bf16_compute.h): oneDNN's direct algorithm on bfloat16 NHWC tensors, accumulating in
// float32, bias, residual and activation fused as in float32. The weight gradient of 3-wide kernels
// at strides 1 and 2 has a second candidate, the project's (conv_backward_weights_bf16.h), and the
// chooser (conv_choice.h) times the two; elsewhere oneDNN's is the only bfloat16 candidate. A
// problem that no candidate takes runs the float32 kernel on converted inputs.
#include "backend/bf16_compute.h"

#include <vector>

#include "backend/cpu/conv_backward_weights_bf16.h"
#include "backend/cpu/conv_choice.h"
#include "backend/cpu/conv_onednn.h"
#include "backend/half.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using Problem = cpu::ConvProblem;
constexpr auto kDirect = dnnl::algorithm::convolution_direct;

Problem bf16_problem(const Shape& x, const Shape& k, const Shape& y, const Attrs& attrs) {
  Problem pr{x, k, y, ConvParams::from_attrs(attrs)};
  pr.dtype = dnnl::memory::data_type::bf16;
  return pr;
}

const KernelFn& float32_kernel(const char* op) {
  return OpRegistry::instance().find(op).kernels[static_cast<int>(DeviceKind::cpu)];
}

// conv2d, and conv2d_add (backend/ops_conv_add.h) whose last input, the residual, is oneDNN's
// binary post-op before the activation: the conv, the sum and the activation rounded to bfloat16
// once. `op` names the float32 kernel that runs where oneDNN has no bfloat16 primitive.
void forward_bf16(const char* op, bool with_residual, const TensorList& in, TensorList& out, const Attrs& attrs) {
  Tensor& y = out[0];
  if (y.numel() == 0) return;
  const Problem pr = bf16_problem(in[0].shape(), in[1].shape(), y.shape(), attrs);
  const Tensor* residual = with_residual ? &in.back() : nullptr;
  const Tensor* bias = in.size() - (with_residual ? 1 : 0) > 2 ? &in[2] : nullptr;
  const std::string& act = attrs.get_string("activation");
  const bool training = !with_residual && attrs.get_string("prop") == "training";
  if (!cpu::onednn_conv_forward_offered(pr, bias != nullptr, act, training, kDirect, with_residual))
    return run_bf16_in_float32(float32_kernel(op), in, out, attrs);
  cpu::onednn_conv_forward(in[0], in[1], bias, y, pr, act, training, kDirect, residual);
}

void conv2d_bf16(const TensorList& in, TensorList& out, const Attrs& attrs) {
  forward_bf16("conv2d", false, in, out, attrs);
}

void conv2d_add_bf16(const TensorList& in, TensorList& out, const Attrs& attrs) {
  forward_bf16("conv2d_add", true, in, out, attrs);
}

// conv2d_transpose's bias, added in float32 and rounded once.
void add_bias_bf16(Tensor& dx, const Tensor& bias) {
  const int64_t C = bias.numel(), rows = C ? dx.numel() / C : 0;
  auto* d = static_cast<uint16_t*>(dx.raw_data());
  const auto* b = static_cast<const uint16_t*>(bias.raw_data());
#pragma omp parallel for if (dx.numel() > (1 << 15)) schedule(static)
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c)
      d[r * C + c] = float_to_bfloat16(bfloat16_to_float(d[r * C + c]) + bfloat16_to_float(b[c]));
}

void backward_data_bf16(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& dy = in[0];
  Tensor& dx = out[0];
  if (dx.numel() == 0) return;
  const Problem pr = bf16_problem(dx.shape(), in[1].shape(), dy.shape(), attrs);
  if (dy.numel() != 0 && !cpu::onednn_conv_backward_data_offered(pr, kDirect))
    return run_bf16_in_float32(float32_kernel("conv2d_backward_data"), in, out, attrs);
  if (dy.numel() == 0) dx.fill_(0);
  else cpu::onednn_conv_backward_data(dy, in[1], dx, pr, kDirect);
  if (in.size() > 2) add_bias_bf16(dx, in[2]);
}

void backward_weights_bf16(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Tensor& dy = in[1];
  Tensor& dk = out[0];
  const bool with_bias = out.size() > 1;
  if (dk.numel() == 0 && !with_bias) return;
  if (dy.numel() == 0 || dk.numel() == 0) {
    for (auto& o : out) o.fill_(0);
    return;
  }
  const Problem pr = bf16_problem(in[0].shape(), dk.shape(), dy.shape(), attrs);
  std::vector<cpu::ConvCandidate> candidates;
  if (cpu::conv2d_backward_weights_bf16_supported(pr.x, pr.k, pr.y, pr.p))
    candidates.push_back(cpu::ConvCandidate::direct);
  if (cpu::onednn_conv_backward_weights_offered(pr, with_bias, kDirect))
    candidates.push_back(cpu::ConvCandidate::onednn_direct);
  if (candidates.empty()) return run_bf16_in_float32(float32_kernel("conv2d_backward_weights"), in, out, attrs);
  cpu::ConvTrial trial;
  trial.run = [&](cpu::ConvCandidate c) {
    if (c == cpu::ConvCandidate::direct)
      cpu::conv2d_backward_weights_bf16(static_cast<const uint16_t*>(in[0].raw_data()), pr.x,
                                        static_cast<const uint16_t*>(dy.raw_data()), pr.y,
                                        static_cast<uint16_t*>(dk.raw_data()), pr.k,
                                        with_bias ? static_cast<uint16_t*>(out[1].raw_data()) : nullptr, pr.p);
    else
      cpu::onednn_conv_backward_weights(in[0], dy, out, pr, kDirect);
  };
  cpu::run_conv(cpu::conv_choice_key("backward_weights", pr, "linear", with_bias, "backward"), candidates, trial);
}

}  // namespace

KERAS_REGISTER_BF16_KERNEL(conv2d, cpu, conv2d_bf16);
KERAS_REGISTER_BF16_KERNEL(conv2d_add, cpu, conv2d_add_bf16);
KERAS_REGISTER_BF16_KERNEL(conv2d_backward_data, cpu, backward_data_bf16);
KERAS_REGISTER_BF16_KERNEL(conv2d_backward_weights, cpu, backward_weights_bf16);

}  // namespace keras
