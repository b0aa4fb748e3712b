// The CUDA backend. Device-free checks run everywhere (device_count() is 0 without a driver or
// device and never throws; Device parsing; moving to an absent device is a DeviceError). Every
// other test skips with "no CUDA device: <reason>" unless a GPU is present; there, each op with
// a CUDA kernel runs on cuda:0 and must match the CPU result within 1e-5 relative, forward and
// (for the Dense path) backward, and the allocator, copies and error paths are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <string>

#include "backend/autodiff.h"
#include "backend/collectives/collective_ops.h"
#include "backend/cuda.h"
#include "backend/op_registry.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "support/cuda_test.h"

using keras::test_support::rel_err;

using namespace keras;


namespace {

Tensor input(const Shape& shape, DType dtype, uint64_t seed, bool positive) {
  if (dtype == DType::int32 || dtype == DType::int64) {
    std::vector<int64_t> v(static_cast<size_t>(shape_numel(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7 + seed) % 19) - 9;
    return Tensor::from_vector(v, shape, Device::cpu()).astype(dtype);
  }
  Tensor t = random::normal(shape, 0.0, 1.0, seed, dtype);
  return positive ? ops::add(ops::multiply(ops::relu(t), 0.5), 0.5) : t;
}

// ---- device-free checks: these run on every machine ----

TEST(CudaQuery, DeviceCountNeverThrows) {
  int n = -1;
  EXPECT_NO_THROW(n = cuda::device_count());
  EXPECT_GE(n, 0);
  EXPECT_EQ(cuda::is_available(), n > 0);
  if (n == 0) {
    EXPECT_FALSE(cuda::unavailable_reason().empty());
    cuda::AllocatorStats s = cuda::allocator_stats(0);
    EXPECT_EQ(s.device_mallocs, 0u);
    EXPECT_EQ(s.bytes_in_use, 0u);
    EXPECT_NO_THROW(cuda::empty_cache());
    if (cuda::built()) EXPECT_THROW(cuda::synchronize(0), DeviceError);
  } else {
    EXPECT_TRUE(cuda::built());
    EXPECT_EQ(cuda::unavailable_reason(), "");
  }
}

TEST(CudaQuery, DeviceParse) {
  EXPECT_EQ(Device::parse("cuda:0"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:1"), Device::cuda(1));
  EXPECT_EQ(Device::parse("gpu"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:0").str(), "cuda:0");
  EXPECT_THROW(Device::parse("cuda:x"), ValueError);
  EXPECT_THROW(Device::parse("tpu"), ValueError);
}

TEST(CudaQuery, AbsentDeviceIsDeviceError) {
  // Index device_count() is one past the last device, whatever the machine has.
  Device absent = Device::cuda(cuda::device_count());
  EXPECT_THROW(Tensor::ones({2, 3}).to(absent), DeviceError);
  EXPECT_THROW(Tensor::zeros({2}, DType::float32, absent), DeviceError);
  try {
    Tensor::ones({2}).to(absent);
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
  }
}

// data<T>() hands out host pointers: to GPU memory it is a DeviceError, not a pointer whose first
// read crashes the process (apps/benchmark's batch pool did, 2026-11-27); raw_data() stays the
// kernels' address.
TEST(CudaQuery, WhichDevicesHoldHostMemory) {
  EXPECT_TRUE(host_memory(Device::cpu(), 0));
  EXPECT_TRUE(host_memory(Device::cpu(), 2));
  EXPECT_TRUE(host_memory(Device::cuda(0), 0));   // SimulatedCuda's host memory
  EXPECT_FALSE(host_memory(Device::cuda(0), 1));  // a real GPU's
}

TEST(CudaQuery, HostPointerToGpuMemoryIsADeviceError) {
  REQUIRE_CUDA();
  Tensor t = Tensor::zeros({4}, DType::float32, Device::cuda(0));
  try {
    (void)t.data<float>();
    ADD_FAILURE() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("Tensor::data: expected a tensor in host memory, got one in the memory of cuda:0"),
              std::string::npos) << e.what();
  }
  EXPECT_NE(t.raw_data(), nullptr);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(4, 0.f));
}

TEST(CudaQuery, Tf32FollowsTheEnvironmentThenTheSetter) {
  // Test programs set KERAS_ALLOW_TF32=0 unless it is set (tests/support/test_environment.cpp).
  EXPECT_EQ(cuda::allow_tf32(), cuda::tf32_from_environment(std::getenv("KERAS_ALLOW_TF32")));
  EXPECT_TRUE(cuda::tf32_from_environment(nullptr));  // Keras's default
  EXPECT_TRUE(cuda::tf32_from_environment(""));
  EXPECT_TRUE(cuda::tf32_from_environment("1"));
  EXPECT_FALSE(cuda::tf32_from_environment("0"));
  EXPECT_FALSE(cuda::tf32_from_environment("false"));
  try {
    cuda::tf32_from_environment("yes");
    ADD_FAILURE() << "expected a ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("KERAS_ALLOW_TF32: expected 0 or 1, got 'yes'"), std::string::npos) << e.what();
  }
  const bool before = cuda::allow_tf32();
  cuda::set_allow_tf32(true);
  EXPECT_TRUE(cuda::allow_tf32());
  cuda::set_allow_tf32(false);
  EXPECT_FALSE(cuda::allow_tf32());
  cuda::set_allow_tf32(before);
}

// ---- ops on the GPU against the CPU ----

struct OpCase {
  std::string name;
  std::vector<Shape> shapes;
  std::function<Tensor(const TensorList&)> fn;
  DType dtype = DType::float32;
  bool positive = false;  // inputs in [0.5, ...) (divisors)
};

std::vector<OpCase> op_cases() {
  using L = const TensorList&;
  auto mm = [](bool ta, bool tb) { return [=](L t) { return ops::matmul(t[0], t[1], ta, tb); }; };
  auto dense = [](const std::string& act) { return [=](L t) { return ops::dense(t[0], t[1], t[2], act); }; };
  return {
      {"add", {{4, 5}, {4, 5}}, [](L t) { return ops::add(t[0], t[1]); }},
      {"add_broadcast", {{4, 1, 5}, {3, 1}}, [](L t) { return ops::add(t[0], t[1]); }},
      {"add_rank0", {{3, 2}, {}}, [](L t) { return ops::add(t[0], t[1]); }},
      {"add_int32", {{6, 3}, {3}}, [](L t) { return ops::add(t[0], t[1]); }, DType::int32},
      {"add_float64", {{6, 3}, {6, 1}}, [](L t) { return ops::add(t[0], t[1]); }, DType::float64},
      {"subtract_broadcast", {{2, 3, 4}, {3, 1}}, [](L t) { return ops::subtract(t[0], t[1]); }},
      {"multiply_broadcast", {{5, 1}, {1, 7}}, [](L t) { return ops::multiply(t[0], t[1]); }},
      {"multiply_int64", {{9}, {9}}, [](L t) { return ops::multiply(t[0], t[1]); }, DType::int64},
      {"divide_broadcast", {{3, 4}, {4}}, [](L t) { return ops::divide(t[0], t[1]); }, DType::float32, true},
      {"add_scalar", {{10}}, [](L t) { return ops::add(t[0], 2.5); }},
      {"multiply_scalar", {{10}}, [](L t) { return ops::multiply(t[0], -3.0); }},
      {"negative", {{3, 3}}, [](L t) { return ops::negative(t[0]); }},
      {"relu", {{7, 9}}, [](L t) { return ops::relu(t[0]); }},
      {"sum_all", {{3, 4, 5}}, [](L t) { return ops::sum(t[0]); }},
      {"sum_axis0", {{6, 5}}, [](L t) { return ops::sum(t[0], {0}); }},
      {"sum_axis1_keepdims", {{6, 5}}, [](L t) { return ops::sum(t[0], {1}, true); }},
      {"sum_axes_0_2", {{3, 4, 5}}, [](L t) { return ops::sum(t[0], {0, 2}); }},
      {"sum_long_rows", {{3, 5000}}, [](L t) { return ops::sum(t[0], {-1}); }},
      {"sum_many_outputs", {{70000, 3}}, [](L t) { return ops::sum(t[0], {1}); }},
      {"sum_int32", {{4, 6}}, [](L t) { return ops::sum(t[0], {0}); }, DType::int32},
      // Long reductions split over many blocks and combined in a second pass.
      {"sum_all_split", {{3, 1000003}}, [](L t) { return ops::sum(t[0]); }},
      {"sum_columns_split", {{20001, 37}}, [](L t) { return ops::sum(t[0], {0}); }},
      {"sum_rows_split", {{3, 300001}}, [](L t) { return ops::sum(t[0], {1}); }},
      {"sum_middle_axis", {{5, 4099, 3}}, [](L t) { return ops::sum(t[0], {1}); }},
      {"sum_outer_inner", {{64, 7, 513}}, [](L t) { return ops::sum(t[0], {0, 2}); }},
      {"sum_int64_split", {{2000001}}, [](L t) { return ops::sum(t[0]); }, DType::int64},
      {"mean_columns_split", {{70001, 5}}, [](L t) { return ops::mean(t[0], {0}); }, DType::float64},
      {"sum_empty_axis", {{0, 4}}, [](L t) { return ops::sum(t[0], {0}); }},
      {"mean_empty_axis", {{4, 0}}, [](L t) { return ops::mean(t[0], {1}); }},
      {"mean_all", {{8, 9}}, [](L t) { return ops::mean(t[0]); }},
      {"mean_last", {{2, 3, 40}}, [](L t) { return ops::mean(t[0], {-1}); }},
      {"mean_float64", {{5, 6}}, [](L t) { return ops::mean(t[0], {0}); }, DType::float64},
      {"matmul", {{5, 7}, {7, 3}}, mm(false, false)},
      {"matmul_ta", {{7, 5}, {7, 3}}, mm(true, false)},
      {"matmul_tb", {{5, 7}, {3, 7}}, mm(false, true)},
      {"matmul_ta_tb", {{7, 5}, {3, 7}}, mm(true, true)},
      {"matmul_batched", {{2, 3, 4, 5}, {2, 3, 5, 6}}, mm(false, false)},
      {"matmul_shared_b", {{2, 4, 5}, {5, 6}}, mm(false, false)},
      {"matmul_broadcast_a", {{4, 5}, {3, 5, 6}}, mm(false, false)},
      {"matmul_mixed_broadcast", {{2, 1, 4, 5}, {1, 3, 5, 6}}, mm(false, false)},
      {"matmul_batched_ta", {{3, 5, 4}, {3, 5, 6}}, mm(true, false)},
      {"matmul_large", {{64, 300}, {300, 70}}, mm(false, false)},
      {"matmul_float64", {{5, 7}, {7, 3}}, mm(false, false), DType::float64},
      {"dense_linear", {{8, 5}, {5, 3}, {3}}, dense("linear")},
      {"dense_relu", {{2, 4, 5}, {5, 3}, {3}}, dense("relu")},
      {"dense_sigmoid", {{8, 5}, {5, 3}, {3}}, dense("sigmoid")},
      {"dense_tanh", {{8, 5}, {5, 3}, {3}}, dense("tanh")},
      {"dense_elu", {{8, 5}, {5, 3}, {3}}, dense("elu")},
      {"dense_gelu", {{8, 5}, {5, 3}, {3}}, dense("gelu")},
      {"dense_swish", {{8, 5}, {5, 3}, {3}}, dense("swish")},
      {"dense_no_bias", {{8, 5}, {5, 3}}, [](L t) { return ops::dense(t[0], t[1], Tensor(), "relu"); }},
      {"dense_float64", {{8, 5}, {5, 3}, {3}}, dense("tanh"), DType::float64},
      {"strided_copy", {{4, 6}}, [](L t) { return t[0].permuted({1, 0}).contiguous(); }},
      {"strided_copy_3d", {{2, 3, 4}}, [](L t) { return t[0].permuted({2, 0, 1}).contiguous(); }},
      {"astype_int32", {{3, 4}}, [](L t) { return ops::multiply(t[0], 10.0).astype(DType::int32); }},
      {"ones_fill", {{3}}, [](L t) { return Tensor::ones({2, 5}, DType::float32, t[0].device()); }},
      {"empty_add", {{0, 3}, {3}}, [](L t) { return ops::add(t[0], t[1]); }},
      {"all_sum_one_process", {{3, 4}}, [](L t) { return ops::all_sum(t[0]); }},
  };
}

// Test names and failure messages show the case name, not the struct's bytes.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

class CudaOp : public ::testing::TestWithParam<OpCase> {};

TEST_P(CudaOp, MatchesCpu) {
  REQUIRE_CUDA();
  const OpCase& c = GetParam();
  TensorList cpu_in, gpu_in;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    cpu_in.push_back(input(c.shapes[i], c.dtype, 100 + i, c.positive));
    gpu_in.push_back(cpu_in.back().to(Device::cuda(0)));
  }
  Tensor want = c.fn(cpu_in);
  Tensor got = c.fn(gpu_in);
  EXPECT_EQ(got.device(), Device::cuda(0));
  EXPECT_LE(rel_err(got, want), 1e-5) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Ops, CudaOp, ::testing::ValuesIn(op_cases()),
                         [](const ::testing::TestParamInfo<OpCase>& info) { return info.param.name; });

// ---- gradients: the Dense path (dense, its fused activation grad, matmuls with transpose
// flags, the bias column sum) and a broadcast add + relu (sum_to_shape, relu_grad) ----

struct GradCase {
  std::string name;
  std::function<Tensor(const TensorList&)> loss;
  std::vector<Shape> shapes;
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

class CudaGrad : public ::testing::TestWithParam<GradCase> {};

TEST_P(CudaGrad, MatchesCpu) {
  REQUIRE_CUDA();
  const GradCase& c = GetParam();
  auto grads = [&](Device d) {
    GradientTape tape;  // ops record only under a tape
    TensorList in;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      Tensor t = input(c.shapes[i], DType::float32, 7 + i, false).to(d);
      t.set_requires_grad(true);
      in.push_back(t);
    }
    Tensor loss = c.loss(in);
    TensorList g = tape.gradient(loss, in);
    g.push_back(loss);
    return g;
  };
  TensorList want = grads(Device::cpu()), got = grads(Device::cuda(0));
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(want[i].defined() && got[i].defined()) << c.name << " gradient " << i;
    EXPECT_EQ(got[i].device(), Device::cuda(0));
    EXPECT_LE(rel_err(got[i], want[i]), 1e-5) << c.name << " gradient " << i;
  }
}

std::vector<GradCase> grad_cases() {
  using L = const TensorList&;
  auto dense_loss = [](const std::string& act) {
    return [=](L t) {
      Tensor y = ops::dense(t[0], t[1], t[2], act);
      return ops::mean(ops::multiply(y, y));
    };
  };
  return {
      {"dense_linear", dense_loss("linear"), {{16, 5}, {5, 4}, {4}}},
      {"dense_relu", dense_loss("relu"), {{16, 5}, {5, 4}, {4}}},
      {"dense_sigmoid", dense_loss("sigmoid"), {{16, 5}, {5, 4}, {4}}},
      {"dense_tanh", dense_loss("tanh"), {{2, 8, 5}, {5, 4}, {4}}},
      {"dense_elu", dense_loss("elu"), {{16, 5}, {5, 4}, {4}}},
      {"two_dense_layers_mse",
       [](L t) {
         Tensor h = ops::dense(t[0], t[1], t[2], "relu");
         Tensor y = ops::dense(h, t[3], t[4], "linear");
         Tensor e = ops::subtract(y, t[5]);
         return ops::mean(ops::multiply(e, e));
       },
       {{32, 6}, {6, 8}, {8}, {8, 2}, {2}, {32, 2}}},
      {"broadcast_add_relu_divide",
       [](L t) {
         Tensor z = ops::relu(ops::add(t[0], t[1]));
         return ops::sum(ops::divide(ops::multiply(z, t[2]), ops::add(ops::multiply(ops::relu(t[2]), 1.0), 2.0)));
       },
       {{4, 3, 5}, {3, 1}, {5}}},
      {"batched_matmul",
       [](L t) { return ops::sum(ops::matmul(t[0], t[1], false, true), {0, 2}); },
       {{2, 4, 5}, {2, 6, 5}}},
  };
}

INSTANTIATE_TEST_SUITE_P(Grads, CudaGrad, ::testing::ValuesIn(grad_cases()),
                         [](const ::testing::TestParamInfo<GradCase>& info) { return info.param.name; });

// ---- allocator, copies, errors ----

TEST(CudaAllocator, ReusesBlocksWithoutNewMallocs) {
  REQUIRE_CUDA();
  cuda::synchronize(0);
  { Tensor warm = Tensor::empty({1000, 37}, DType::float32, Device::cuda(0)); }
  cuda::AllocatorStats before = cuda::allocator_stats(0);
  for (int i = 0; i < 10; ++i) {
    Tensor t = Tensor::empty({1000, 37}, DType::float32, Device::cuda(0));
    Tensor u = Tensor::empty({1000, 37}, DType::float32, Device::cuda(0));
  }
  cuda::AllocatorStats after = cuda::allocator_stats(0);
  // The first pass may need one more block (two are live at once); later passes none.
  EXPECT_LE(after.device_mallocs, before.device_mallocs + 1);
  EXPECT_GE(after.cache_hits, before.cache_hits + 19);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  cuda::empty_cache();
  cuda::AllocatorStats emptied = cuda::allocator_stats(0);
  EXPECT_EQ(emptied.bytes_cached, 0u);
  EXPECT_GT(emptied.device_frees, after.device_frees);
}

TEST(CudaAllocator, TrainingStepsStopAllocating) {
  REQUIRE_CUDA();
  Tensor x = input({32, 6}, DType::float32, 1, false).to(Device::cuda(0));
  Tensor w = input({6, 4}, DType::float32, 2, false).to(Device::cuda(0)).set_requires_grad(true);
  Tensor b = Tensor::zeros({4}, DType::float32, Device::cuda(0)).set_requires_grad(true);
  auto step = [&] {
    GradientTape tape;
    Tensor y = ops::dense(x, w, b, "relu");
    Tensor loss = ops::mean(ops::multiply(y, y));
    TensorList g = tape.gradient(loss, {w, b});
    w.copy_from(ops::subtract(w.detach(), ops::multiply(g[0], 0.1)));
    b.copy_from(ops::subtract(b.detach(), ops::multiply(g[1], 0.1)));
  };
  step();
  step();
  uint64_t mallocs = cuda::allocator_stats(0).device_mallocs;
  for (int i = 0; i < 5; ++i) step();
  EXPECT_EQ(cuda::allocator_stats(0).device_mallocs, mallocs);
}

TEST(CudaCopy, RoundTripsEveryDtype) {
  REQUIRE_CUDA();
  for (DType t : {DType::float32, DType::float64, DType::int32, DType::int64, DType::boolean}) {
    Tensor cpu = Tensor::arange(-5, 7, 1, DType::float64).astype(t).view({3, 4});
    Tensor gpu = cpu.to(Device::cuda(0));
    EXPECT_EQ(gpu.device(), Device::cuda(0));
    Tensor back = gpu.to(Device::cpu());
    EXPECT_EQ(back.dtype(), t);
    EXPECT_EQ(back.to_vector<double>(), cpu.to_vector<double>()) << dtype_name(t);
    EXPECT_EQ(gpu.clone().to_vector<double>(), cpu.to_vector<double>()) << dtype_name(t);
  }
  Tensor empty = Tensor::zeros({0, 4}).to(Device::cuda(0));
  EXPECT_EQ(empty.to(Device::cpu()).shape(), (Shape{0, 4}));
  EXPECT_DOUBLE_EQ(Tensor::scalar(3.5).to(Device::cuda(0)).item(), 3.5);
}

TEST(CudaCopy, BetweenDevices) {
  REQUIRE_CUDA();
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices, found " << cuda::device_count();
  Tensor a = Tensor::arange(0, 100, 1).to(Device::cuda(0));
  Tensor b = a.to(Device::cuda(1));
  EXPECT_EQ(b.device(), Device::cuda(1));
  EXPECT_EQ(b.to_vector<float>(), a.to_vector<float>());
}

TEST(CudaErrors, MixedDevicesAreDeviceError) {
  REQUIRE_CUDA();
  Tensor a = Tensor::ones({2, 2});
  Tensor b = Tensor::ones({2, 2}, DType::float32, Device::cuda(0));
  EXPECT_THROW(ops::add(a, b), DeviceError);
  EXPECT_THROW(ops::matmul(b, a), DeviceError);
}

// An op registered with a CPU kernel alone (every real op has a CUDA kernel: test_cuda_coverage).
KERAS_REGISTER_OP(test_cpu_only) { def.shape = same_as_first_input; }
KERAS_REGISTER_KERNEL(test_cpu_only, cpu, [](const TensorList& in, TensorList& out, const Attrs&) {
  out[0].copy_from(in[0]);
});

TEST(CudaErrors, MissingKernelNamesOpAndDevice) {
  REQUIRE_CUDA();
  Tensor x = Tensor::ones({3}, DType::float32, Device::cuda(0));
  try {
    run_op("test_cpu_only", {x});
    FAIL() << "test_cpu_only has no CUDA kernel; expected NotImplementedError";
  } catch (const NotImplementedError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'test_cpu_only'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cuda"), std::string::npos) << msg;
  }
}

}  // namespace
