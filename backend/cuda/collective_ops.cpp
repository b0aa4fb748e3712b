// The CUDA kernel of all_sum (backend/collectives/collective_ops.h): the sum over the processes
// of the training group of a tensor on a GPU. An NCCL group on the tensor's device reduces in
// place in device memory; a host group (MPI, local) reduces a host copy, which is copied back.
#include "backend/collectives/communicator.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

void all_sum_cuda(const TensorList& in, TensorList& out, const Attrs&) {
  out[0].copy_from(in[0]);
  collectives::Communicator* group = collectives::training_group();
  if (!group) return;
  const Device where = group->device();
  if (where == out[0].device()) {
    group->allreduce(out[0], collectives::ReduceOp::sum);
    return;
  }
  if (where.kind != DeviceKind::cpu)
    fail<DeviceError>("all_sum (cuda)", "the training group on " + out[0].device().str() + " or on the host",
                      "a group on " + where.str(), "Give each process the NCCL group of the GPU its model is on.");
  Tensor host = out[0].to(Device::cpu());
  group->allreduce(host, collectives::ReduceOp::sum);
  out[0].copy_from(host);
}

}  // namespace

KERAS_REGISTER_KERNEL(all_sum, cuda, all_sum_cuda);

}  // namespace keras
