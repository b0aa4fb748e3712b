// Every op with a CPU kernel has a CUDA kernel in a CUDA build: a model that trains on the CPU
// must not stop on the GPU with "no kernel for cuda". Runs on every machine with a CUDA build
// (no GPU needed: it reads the op registry). kStillMissing names the ops without one yet, each
// for a stated reason; the test also fails when a listed op gains a kernel, so the list only
// shrinks.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "backend/cuda.h"
#include "backend/op_registry.h"

using namespace keras;

namespace {

// op -> why it has no CUDA kernel yet.
const std::map<std::string, std::string> kStillMissing = {
    // CPU-only fusions: ops::layer_norm and the attention layers take them only for tensors on the
    // CPU (backend/ops_layer_norm.cpp, layers/attention_common.cpp); on a GPU the same functions
    // run the compositions of ops the fusions replace, which have CUDA kernels.
    {"conv2d_add", "CPU-only inference fold; on a GPU conv2d, add and relu run as layers (keras/models/functional.cpp)"},
    {"add_relu", "CPU-only fusion; on a GPU the Add layer runs add and relu"},
    {"add_relu_grad", "CPU-only fusion, the gradient of add_relu"},
    {"batch_norm_relu_train", "CPU-only fusion; GPU runs batch_norm_train and the activation"},
    {"moving_average_update", "CPU-only; on a GPU BatchNormalization updates its statistics with multiply, add, assign"},
    {"batch_norm_add_relu_train", "CPU-only fusion; GPU runs the BatchNormalization, Add and ReLU layers"},
    {"batch_norm_relu_train_grad", "CPU-only fusion; GPU runs batch_norm_train and the activation"},
    {"attention_heads", "CPU-only fusion; GPU runs the composed attention"},
    {"attention_heads_grad", "CPU-only fusion; GPU runs the composed attention"},
    {"attention_heads_packed", "CPU-only fusion; GPU runs the composed attention"},
    {"attention_heads_packed_grad", "CPU-only fusion; GPU runs the composed attention"},
    {"layer_norm", "CPU-only fusion; GPU runs the composed layer normalization"},
    {"layer_norm_grad", "CPU-only fusion; GPU runs the composed layer normalization"},
};

}  // namespace

TEST(CudaCoverage, EveryCpuOpHasACudaKernel) {
  if (!cuda::built()) GTEST_SKIP() << "built without the CUDA backend";
  const auto& registry = OpRegistry::instance();
  std::string missing, stale;
  for (const std::string& name : registry.names()) {
    const OpDef& def = registry.find(name);
    const bool cpu = static_cast<bool>(def.kernels[static_cast<int>(DeviceKind::cpu)]);
    const bool gpu = static_cast<bool>(def.kernels[static_cast<int>(DeviceKind::cuda)]);
    const bool listed = kStillMissing.count(name) != 0;
    if (cpu && !gpu && !listed) missing += " " + name;
    if (listed && gpu) stale += " " + name;
  }
  EXPECT_EQ(missing, "") << "ops with a CPU kernel and no CUDA kernel:" << missing;
  EXPECT_EQ(stale, "") << "listed as missing but now have a CUDA kernel (remove them from kStillMissing):" << stale;
}
