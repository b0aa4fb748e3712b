// The NCCL communicator on one GPU, as a one-process group (bootstrapped by the local
// communicator). Skips without a CUDA device; in a build without CUDA, the factory must say so.
#include <gtest/gtest.h>

#include "backend/collectives/communicator.h"
#include "backend/cuda.h"

using namespace keras;
using namespace keras::collectives;

namespace {
std::unique_ptr<Communicator> single_gpu_group() {
  auto bootstrap = make_local_communicator();
  return make_nccl_communicator(0, *bootstrap);
}
}  // namespace

#define REQUIRE_GPU() \
  if (cuda::device_count() == 0) GTEST_SKIP() << "no CUDA device: " << cuda::unavailable_reason()

TEST(Nccl, CpuOnlyBuildsSayItIsMissing) {
  if (cuda::built()) GTEST_SKIP() << "this build has CUDA";
  EXPECT_THROW(single_gpu_group(), NotImplementedError);
}

TEST(Nccl, SingleRankCollectivesOnTheDevice) {
  REQUIRE_GPU();
  auto comm = single_gpu_group();
  EXPECT_EQ(comm->backend(), "nccl");
  EXPECT_EQ(comm->size(), 1);
  EXPECT_EQ(comm->device(), Device::cuda(0));
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}).to(Device::cuda(0));
  comm->allreduce(t, ReduceOp::sum);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  comm->allreduce(t, ReduceOp::mean);
  EXPECT_EQ(t.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  auto request = comm->allreduce_async(t.raw_data(), 4, ElementType::float32, ReduceOp::sum);
  request->wait();
  EXPECT_TRUE(request->test());
  comm->broadcast(t, 0);
  Tensor all = comm->allgather(t.view({1, 4}));
  EXPECT_EQ(all.to(Device::cpu()).to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  comm->barrier();
  // Host tensors are refused, naming both devices.
  Tensor host = Tensor::ones({2});
  EXPECT_THROW(comm->allreduce(host, ReduceOp::sum), DeviceError);
}
