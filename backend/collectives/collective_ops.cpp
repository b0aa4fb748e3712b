#include "backend/collectives/collective_ops.h"

#include "backend/op_registry.h"

namespace keras {
namespace {

void all_sum_cpu(const TensorList& in, TensorList& out, const Attrs&) {
  out[0].copy_from(in[0]);
  if (collectives::Communicator* group = collectives::training_group())
    group->allreduce(out[0], collectives::ReduceOp::sum);
}

}  // namespace

KERAS_REGISTER_OP(all_sum) {
  def.shape = same_as_first_input;
  def.grad = [](const GradContext& g) { return TensorList{ops::all_sum(g.grad_outputs[0])}; };
}
KERAS_REGISTER_KERNEL(all_sum, cpu, all_sum_cpu);

namespace ops {
Tensor all_sum(const Tensor& x) {
  static const OpDef& op = OpRegistry::instance().find("all_sum");
  return run_op1(op, {x});
}
}  // namespace ops

}  // namespace keras
