// CUDA kernels of rnn_sequence and rnn_sequence_backward (op contract: backend/ops_rnn.h; input
// and output order: backend/cpu/rnn_kernels.h), reproducing the CPU plain loops
// (backend/cpu/rnn_reference.cpp) for every kind, mask, go_backwards, zero_output_for_mask and
// elementwise activation pair, float32 (TF32 where cuda::allow_tf32()) and float64.
//
// Forward: one cuBLAS GEMM projects the input of every step (x (B*T, I) @ kernel); each step then
// runs one GEMM h_{t-1} @ recurrent_kernel and one fused elementwise kernel (GRU with
// reset_after=False: gates kernel, GEMM (r * h) @ R_h, candidate kernel). Backward mirrors it per
// step (gate-gradient kernel, GEMM for dh_{t-1}, state kernel) and keeps every step's gate
// gradients, so that dx, dkernel, drecurrent_kernel and dbias are each one GEMM or one column sum
// over all steps at the end: no atomics, deterministic.
//
// There is one implementation here: the "implementation" attr that ops::rnn_sequence resolves is
// always "reference" off the CPU (oneDNN is CPU-only); "onednn" reaching this kernel directly is
// the NotImplementedError the CPU raises where oneDNN cannot run the call. The "training" attr is
// ignored: the workspace is always written (it is what the step kernels work in anyway).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/rnn_kernels.h"
#include "backend/cuda.h"
#include "backend/cuda/rnn_kernels.h"
#include "backend/cuda/runtime.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

namespace k = cuda::kernels;
using k::RnnAct;
using k::RnnCell;

const char* const kFwd = "rnn_sequence (cuda)";
const char* const kBwd = "rnn_sequence_backward (cuda)";

// Row-major C (m x n, leading dimension ldc) = op(A) op(B) + beta * C, alpha 1, on the device's
// stream. cuBLAS is column-major, so it computes C^T = op(B)^T op(A)^T (B first). K = 0 with
// beta = 0 zeroes C, as an empty sum.
void gemm(DType dtype, int device, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, const void* a, int64_t lda,
          const void* b, int64_t ldb, double beta, void* c, int64_t ldc, const char* where) {
  if (m == 0 || n == 0) return;
  const int64_t es = static_cast<int64_t>(dtype_size(dtype));
  if (kk == 0) {
    if (beta == 0)
      cuda::check(cudaMemset2DAsync(c, ldc * es, 0, n * es, m, cuda::stream(device)), where);
    return;
  }
  for (int64_t v : {m, n, kk, lda, ldb, ldc})
    if (v > INT32_MAX)
      fail<NotImplementedError>(where, "GEMM extents below 2^31",
                                std::to_string(m) + " x " + std::to_string(kk) + " x " + std::to_string(n));
  cublasHandle_t h = cuda::cublas_handle(device);
  const cublasOperation_t op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int mi = static_cast<int>(m), ni = static_cast<int>(n), ki = static_cast<int>(kk);
  const int la = static_cast<int>(lda), lb = static_cast<int>(ldb), lc = static_cast<int>(ldc);
  if (dtype == DType::float32) {
    const float alpha = 1.f, bf = static_cast<float>(beta);
    cublasComputeType_t compute = cuda::allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    cuda::check_cublas(cuda::cublas().gemm_strided_batched_ex(h, op_b, op_a, ni, mi, ki, &alpha, b, CUDA_R_32F, lb, 0, a,
                                                              CUDA_R_32F, la, 0, &bf, c, CUDA_R_32F, lc, 0, 1, compute,
                                                              CUBLAS_GEMM_DEFAULT),
                       where);
  } else if (dtype == DType::float64) {
    const double alpha = 1.0;
    cuda::check_cublas(cuda::cublas().gemm_strided_batched_ex(h, op_b, op_a, ni, mi, ki, &alpha, b, CUDA_R_64F, lb, 0, a,
                                                              CUDA_R_64F, la, 0, &beta, c, CUDA_R_64F, lc, 0, 1,
                                                              CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
                       where);
  } else {
    fail<TypeError>(where, "float32 or float64", dtype_name(dtype));
  }
}

// The activation names of the CPU plain loops (backend/cpu/rnn_reference.cpp), same error.
RnnAct act_of(const std::string& name) {
  static const std::vector<std::pair<std::string, RnnAct>> table = {
      {"linear", RnnAct::linear}, {"relu", RnnAct::relu}, {"leaky_relu", RnnAct::leaky_relu},
      {"relu6", RnnAct::relu6}, {"elu", RnnAct::elu}, {"selu", RnnAct::selu}, {"gelu", RnnAct::gelu_erf},
      {"silu", RnnAct::silu}, {"swish", RnnAct::silu}, {"sigmoid", RnnAct::sigmoid},
      {"hard_sigmoid", RnnAct::hard_sigmoid}, {"hard_silu", RnnAct::hard_silu}, {"hard_swish", RnnAct::hard_silu},
      {"tanh", RnnAct::tanh}, {"softplus", RnnAct::softplus}, {"softsign", RnnAct::softsign},
      {"exponential", RnnAct::exponential}};
  for (const auto& [n, act] : table)
    if (n == name) return act;
  fail<ValueError>("rnn_sequence", "an elementwise Keras activation", "'" + name + "'");
}

// Everything that shapes one problem, from the forward's inputs and the attrs.
struct Problem {
  k::RnnLayout L;
  int64_t I = 0;
  RnnAct act = RnnAct::tanh, rec_act = RnnAct::sigmoid;
  bool go_backwards = false, zero_output_for_mask = false, masked = false;
  DType dtype = DType::float32;
  int device = 0;

  bool lstm() const { return L.cell == RnnCell::lstm; }
  int64_t gu() const { return L.G * L.U; }
  int64_t time_of(int64_t s) const { return go_backwards ? L.T - 1 - s : s; }
  // Columns of recurrent_kernel that multiply h_{t-1} directly (GRU reset_before: z and r only).
  int64_t rec_cols() const { return L.cell == RnnCell::gru_before ? 2 * L.U : gu(); }
  size_t forward_inputs() const { return 5 + (lstm() ? 1 : 0) + (masked ? 1 : 0); }
  size_t mask_index() const { return 5 + (lstm() ? 1 : 0); }

  static Problem from(const TensorList& in, const Attrs& a, const char* where) {
    if (a.get_string("implementation") == "onednn")
      fail<NotImplementedError>(std::string("rnn_sequence (oneDNN)"), "float32 on the CPU",
                                "a tensor on " + in[0].device().str(), "Use implementation 'auto' or 'reference'.");
    Problem p;
    const std::string& kind = a.get_string("kind");
    p.L.cell = kind == "lstm" ? RnnCell::lstm
               : kind == "simple_rnn" ? RnnCell::simple
               : a.get_bool("reset_after") ? RnnCell::gru_after
                                           : RnnCell::gru_before;
    p.L.G = kind == "lstm" ? 4 : kind == "gru" ? 3 : 1;
    p.L.B = in[0].dim(0), p.L.T = in[0].dim(1), p.I = in[0].dim(2), p.L.U = in[2].dim(0);
    p.act = act_of(a.get_string("activation"));
    p.rec_act = act_of(a.get_string("recurrent_activation"));
    p.go_backwards = a.get_bool("go_backwards");
    p.zero_output_for_mask = a.get_bool("zero_output_for_mask");
    p.masked = a.get_bool("masked");
    p.dtype = in[0].dtype();
    if (p.dtype != DType::float32 && p.dtype != DType::float64)
      fail<TypeError>(where, "float32 or float64", dtype_name(p.dtype));
    p.device = in[0].device().index;
    return p;
  }
};

char* at(void* base, int64_t elements, DType t) {
  return static_cast<char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}
const char* at(const void* base, int64_t elements, DType t) {
  return static_cast<const char*>(base) + elements * static_cast<int64_t>(dtype_size(t));
}

void copy(void* dst, const void* src, int64_t elements, DType t, cudaStream_t s, const char* where) {
  if (elements == 0) return;
  cuda::check(cudaMemcpyAsync(dst, src, elements * dtype_size(t), cudaMemcpyDeviceToDevice, s), where);
}

void forward_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Problem p = Problem::from(in, attrs, kFwd);
  const k::RnnLayout& L = p.L;
  const Device dev = in[0].device();
  cuda::DeviceGuard guard(p.device);
  cudaStream_t stream = cuda::stream(p.device);
  const DType dt = p.dtype;
  const int64_t B = L.B, T = L.T, U = L.U, GU = p.gu(), BU = B * U;

  out = {Tensor::empty({B, T, U}, dt, dev), Tensor::empty({B, U}, dt, dev)};
  if (p.lstm()) out.push_back(Tensor::empty({B, U}, dt, dev));
  // The op's output is a one-element handle on the whole workspace (backend/cpu/rnn_kernels.h).
  Tensor ws = Tensor::empty({std::max<int64_t>(L.workspace_numel(), 1)}, dt, dev);
  void* w = ws.raw_data();

  Tensor xw = Tensor::empty({B * T, GU}, dt, dev), rh = Tensor::empty({B, GU}, dt, dev);
  gemm(dt, p.device, false, false, B * T, GU, p.I, in[0].raw_data(), p.I, in[1].raw_data(), GU, 0, xw.raw_data(), GU,
       kFwd);
  // The states enter step 0's slots; with no step they are the final states.
  copy(T > 0 ? at(w, L.at(L.h_prev(), 0), dt) : out[1].raw_data(), in[4].raw_data(), BU, dt, stream, kFwd);
  if (p.lstm()) copy(T > 0 ? at(w, L.at(L.extra(), 0), dt) : out[2].raw_data(), in[5].raw_data(), BU, dt, stream, kFwd);

  const void* R = in[2].raw_data();
  k::RnnForwardStep st;
  st.L = L, st.act = p.act, st.rec_act = p.rec_act, st.zero_output_for_mask = p.zero_output_for_mask;
  st.xw = xw.raw_data(), st.bias = in[3].raw_data(), st.rh = rh.raw_data(), st.ws = w, st.y = out[0].raw_data();
  st.rbias = L.cell == RnnCell::gru_after ? at(in[3].raw_data(), GU, dt) : nullptr;
  st.mask = p.masked ? static_cast<const bool*>(in[p.mask_index()].raw_data()) : nullptr;
  for (int64_t s = 0; s < T; ++s) {
    st.s = s, st.t = p.time_of(s);
    const bool last = s + 1 == T;
    st.h_next = last ? out[1].raw_data() : at(w, L.at(L.h_prev(), s + 1), dt);
    st.c_next = !p.lstm() ? nullptr : last ? out[2].raw_data() : at(w, L.at(L.extra(), s + 1), dt);
    gemm(dt, p.device, false, false, B, p.rec_cols(), U, at(w, L.at(L.h_prev(), s), dt), U, R, GU, 0, rh.raw_data(),
         GU, kFwd);
    if (L.cell == RnnCell::gru_before) {
      k::rnn_forward_gru_gates(dt, st, stream);
      cuda::check_launch(kFwd);
      // (r * h_{t-1}) @ recurrent_kernel[:, 2U:] into the candidate's pre slot.
      gemm(dt, p.device, false, false, B, U, U, at(w, L.at(L.extra(), s), dt), U, at(R, 2 * U, dt), GU, 0,
           at(w, L.at(L.pre(2), s), dt), U, kFwd);
    }
    k::rnn_forward_step(dt, st, stream);
    cuda::check_launch(kFwd);
  }
  out.push_back(ws.slice_batch(0, 1));
}

// Inputs: the forward's inputs, its outputs (y, h_T [, c_T], workspace), then dy, dh_T [, dc_T].
// Outputs (allocated by run_op): dx, dkernel, drecurrent_kernel, dbias, dh0 [, dc0].
void backward_kernel(const TensorList& in, TensorList& out, const Attrs& attrs) {
  const Problem p = Problem::from(in, attrs, kBwd);
  const k::RnnLayout& L = p.L;
  const Device dev = in[0].device();
  cuda::DeviceGuard guard(p.device);
  cudaStream_t stream = cuda::stream(p.device);
  const DType dt = p.dtype;
  const int64_t B = L.B, T = L.T, U = L.U, GU = p.gu(), BU = B * U, I = p.I;
  const size_t n_in = p.forward_inputs(), n_state = p.lstm() ? 2 : 1;
  Tensor ws = cpu::RnnWorkspace::of(in[n_in + 1 + n_state], L.workspace_numel());
  const void* w = ws.raw_data();
  const void* R = in[2].raw_data();

  // dh0 / dc0 are the running state gradients, starting from dh_T / dc_T.
  copy(out[4].raw_data(), in[n_in + 3 + n_state].raw_data(), BU, dt, stream, kBwd);
  if (p.lstm()) copy(out[5].raw_data(), in[n_in + 4 + n_state].raw_data(), BU, dt, stream, kBwd);
  Tensor dprev = Tensor::empty({B, U}, dt, dev), dhp = Tensor::empty({B, U}, dt, dev);
  Tensor dcp = Tensor::empty({B, U}, dt, dev), tmp = Tensor::empty({B, U}, dt, dev);
  Tensor dg = Tensor::empty({B * T, GU}, dt, dev), drh = Tensor::empty({T * B, GU}, dt, dev);
  if (BU > 0) cuda::check(cudaMemsetAsync(dprev.raw_data(), 0, BU * dtype_size(dt), stream), kBwd);

  k::RnnBackwardStep st;
  st.L = L, st.act = p.act, st.rec_act = p.rec_act, st.zero_output_for_mask = p.zero_output_for_mask;
  st.mask = p.masked ? static_cast<const bool*>(in[p.mask_index()].raw_data()) : nullptr;
  st.ws = w, st.dy = in[n_in + 2 + n_state].raw_data();
  st.dh = out[4].raw_data(), st.dc = p.lstm() ? out[5].raw_data() : nullptr;
  st.dprev = dprev.raw_data(), st.dhp = dhp.raw_data(), st.dcp = dcp.raw_data();
  st.dg = dg.raw_data(), st.drh = drh.raw_data(), st.tmp = tmp.raw_data();
  for (int64_t s = T - 1; s >= 0; --s) {
    st.s = s, st.t = p.time_of(s);
    const char* drh_s = at(drh.raw_data(), s * B * GU, dt);
    k::rnn_backward_step(dt, st, stream);
    cuda::check_launch(kBwd);
    if (L.cell == RnnCell::gru_before) {
      // d(r * h_{t-1}) = d candidate @ recurrent_kernel[:, 2U:]^T
      gemm(dt, p.device, false, true, B, U, U, at(drh_s, 2 * U, dt), GU, at(R, 2 * U, dt), GU, 0, tmp.raw_data(), U,
           kBwd);
      k::rnn_backward_gru_gates(dt, st, stream);
      cuda::check_launch(kBwd);
    }
    gemm(dt, p.device, false, true, B, U, p.rec_cols(), drh_s, GU, R, GU, 1, dhp.raw_data(), U, kBwd);
    k::rnn_backward_state(dt, st, stream);
    cuda::check_launch(kBwd);
  }
  // Over all steps at once: dx = dg @ kernel^T, dkernel = x^T @ dg, drecurrent_kernel =
  // h_prev^T @ drh (h_prev of every step is one (T*B, U) workspace slot), dbias = column sums.
  gemm(dt, p.device, false, true, B * T, I, GU, dg.raw_data(), GU, in[1].raw_data(), GU, 0, out[0].raw_data(), I, kBwd);
  gemm(dt, p.device, true, false, I, GU, B * T, in[0].raw_data(), I, dg.raw_data(), GU, 0, out[1].raw_data(), GU, kBwd);
  gemm(dt, p.device, true, false, U, p.rec_cols(), T * B, at(w, L.at(L.h_prev(), 0), dt), U, drh.raw_data(), GU, 0,
       out[2].raw_data(), GU, kBwd);
  if (L.cell == RnnCell::gru_before)
    gemm(dt, p.device, true, false, U, U, T * B, at(w, L.at(L.extra(), 0), dt), U, at(drh.raw_data(), 2 * U, dt), GU,
         0, at(out[2].raw_data(), 2 * U, dt), GU, kBwd);
  k::rnn_column_sum(dt, dg.raw_data(), B * T, GU, GU, out[3].raw_data(), stream);
  if (L.cell == RnnCell::gru_after)
    k::rnn_column_sum(dt, drh.raw_data(), T * B, GU, GU, at(out[3].raw_data(), GU, dt), stream);
  cuda::check_launch(kBwd);
}

}  // namespace

KERAS_REGISTER_KERNEL(rnn_sequence, cuda, forward_kernel);
KERAS_REGISTER_KERNEL(rnn_sequence_backward, cuda, backward_kernel);

}  // namespace keras
