// CUDA kernels of the fused in-place optimizer updates sgd_update, adam_update, rmsprop_update
// and adagrad_update (op definitions, attributes and CPU kernels: optimizers/update_ops.cpp).
// Inputs are (var, grad, slots...) of one shape and floating dtype, contiguous, on one device
// (run_op checks); var and the slots are written in place on the device's stream. Which slots
// are present follows the same attributes as on the CPU (momentum, amsgrad, centered).
#include <cmath>
#include <string>

#include "backend/cuda/runtime.h"
#include "backend/cuda/train_kernels.h"
#include "backend/cuda/op_checks.h"
#include "backend/op_registry.h"

namespace keras {
namespace {

using cuda::require_float;
using cuda::require_numeric;
using cuda::stream_of;

namespace k = cuda::kernels;

k::GradPrep grad_prep(const Attrs& a) {
  return {a.get_float("grad_scale", 1.0), a.get_float("clip_value", 0.0), a.get_float("decay", 0.0)};
}

void* data(const Tensor& t) { return const_cast<Tensor&>(t).raw_data(); }


void sgd_update_cuda(const TensorList& in, TensorList&, const Attrs& a) {
  require_float(in[0], "sgd_update");
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::sgd_update(in[0].dtype(), data(in[0]), data(in[1]), in.size() == 3 ? data(in[2]) : nullptr, in[0].numel(),
                grad_prep(a), a.get_float("learning_rate"), a.get_float("momentum", 0.0), a.get_bool("nesterov", false),
                cuda::stream(dev));
  cuda::check_launch("sgd_update (cuda)");
}

void adam_update_cuda(const TensorList& in, TensorList&, const Attrs& a) {
  require_float(in[0], "adam_update");
  const double lr = a.get_float("learning_rate");
  const double b1 = a.get_float("beta_1"), b2 = a.get_float("beta_2");
  const double t = static_cast<double>(a.get_int("step"));
  // Bias correction folded into the step size in double, exactly as the CPU kernel.
  const double alpha = lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::adam_update(in[0].dtype(), data(in[0]), data(in[1]), data(in[2]), data(in[3]),
                 in.size() == 5 ? data(in[4]) : nullptr, in[0].numel(), grad_prep(a), alpha, b1, b2,
                 a.get_float("epsilon"), cuda::stream(dev));
  cuda::check_launch("adam_update (cuda)");
}

void rmsprop_update_cuda(const TensorList& in, TensorList&, const Attrs& a) {
  require_float(in[0], "rmsprop_update");
  const bool use_momentum = a.get_float("momentum", 0.0) > 0;
  const bool centered = a.get_bool("centered", false);
  void* mom = use_momentum ? data(in[3]) : nullptr;
  void* avg = centered ? data(in[use_momentum ? 4 : 3]) : nullptr;
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::rmsprop_update(in[0].dtype(), data(in[0]), data(in[1]), data(in[2]), mom, avg, in[0].numel(), grad_prep(a),
                    a.get_float("learning_rate"), a.get_float("rho"), a.get_float("momentum", 0.0),
                    a.get_float("epsilon"), cuda::stream(dev));
  cuda::check_launch("rmsprop_update (cuda)");
}

void adagrad_update_cuda(const TensorList& in, TensorList&, const Attrs& a) {
  require_float(in[0], "adagrad_update");
  const int dev = in[0].device().index;
  cuda::DeviceGuard guard(dev);
  k::adagrad_update(in[0].dtype(), data(in[0]), data(in[1]), data(in[2]), in[0].numel(), grad_prep(a),
                    a.get_float("learning_rate"), a.get_float("epsilon"), cuda::stream(dev));
  cuda::check_launch("adagrad_update (cuda)");
}

}  // namespace

KERAS_REGISTER_KERNEL(sgd_update, cuda, sgd_update_cuda);
KERAS_REGISTER_KERNEL(adam_update, cuda, adam_update_cuda);
KERAS_REGISTER_KERNEL(rmsprop_update, cuda, rmsprop_update_cuda);
KERAS_REGISTER_KERNEL(adagrad_update, cuda, adagrad_update_cuda);

}  // namespace keras
