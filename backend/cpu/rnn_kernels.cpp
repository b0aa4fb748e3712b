// CPU kernel registrations of rnn_sequence and rnn_sequence_backward: each follows the op's
// "implementation" attr, which ops::rnn_sequence resolves, so that forward and backward (and the
// workspace between them) always come from the same path.
#include "backend/cpu/rnn_kernels.h"

#include <algorithm>

namespace keras::cpu {

RnnProblem RnnProblem::from(const TensorList& in, const Attrs& a) {
  RnnProblem p;
  p.kind = a.get_string("kind");
  p.batch = in[0].dim(0), p.time = in[0].dim(1), p.input = in[0].dim(2);
  p.units = in[2].dim(0);
  p.gates = in[2].dim(1) / p.units;
  p.activation = a.get_string("activation");
  p.recurrent_activation = a.get_string("recurrent_activation");
  p.reset_after = a.get_bool("reset_after");
  p.go_backwards = a.get_bool("go_backwards");
  p.zero_output_for_mask = a.get_bool("zero_output_for_mask");
  p.masked = a.get_bool("masked");
  p.training = a.get_bool("training", true);
  p.dtype = in[0].dtype();
  return p;
}

RnnWorkspace RnnWorkspace::allocate(int64_t numel, DType dtype) {
  Tensor whole = Tensor::empty({std::max<int64_t>(numel, 1)}, dtype);
  return {whole.slice_batch(0, numel), whole.slice_batch(0, 1)};
}

Tensor RnnWorkspace::of(const Tensor& handle, int64_t numel) {
  auto whole = std::make_shared<TensorImpl>();
  whole->storage = handle.impl().storage;
  whole->offset = handle.impl().offset;
  whole->dtype = handle.dtype();
  whole->shape = {numel};
  whole->strides = {1};
  if ((whole->offset + numel) * static_cast<int64_t>(dtype_size(whole->dtype)) >
      static_cast<int64_t>(whole->storage->bytes))
    fail<ValueError>("rnn_sequence_backward", "a workspace of " + std::to_string(numel) + " elements",
                     std::to_string(whole->storage->bytes) + " bytes",
                     "The workspace must come from the forward of the same problem and implementation.");
  return Tensor(whole);
}

namespace {

bool use_onednn(const Attrs& a) { return a.get_string("implementation") == "onednn"; }

void forward_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  RnnProblem p = RnnProblem::from(in, a);
  Device dev = in[0].device();
  out = {Tensor::empty({p.batch, p.time, p.units}, p.dtype, dev), Tensor::empty({p.batch, p.units}, p.dtype, dev)};
  if (p.lstm()) out.push_back(Tensor::empty({p.batch, p.units}, p.dtype, dev));
  if (use_onednn(a)) rnn_onednn_forward(p, in, out);
  else rnn_reference_forward(p, in, out);
}

void backward_kernel(const TensorList& in, TensorList& out, const Attrs& a) {
  RnnProblem p = RnnProblem::from(in, a);
  if (use_onednn(a)) rnn_onednn_backward(p, in, out);
  else rnn_reference_backward(p, in, out);
}

}  // namespace

KERAS_REGISTER_KERNEL(rnn_sequence, cpu, forward_kernel);
KERAS_REGISTER_KERNEL(rnn_sequence_backward, cpu, backward_kernel);

}  // namespace keras::cpu
