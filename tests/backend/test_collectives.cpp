// Collectives on whatever world this process is in: one process under ctest's own run (the
// local communicator), 2 and 3 processes under mpirun (tests/CMakeLists.txt adds those runs).
// Every expectation is written for any world size.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/collectives/communicator.h"
#include "backend/autodiff.h"
#include "backend/collectives/collective_ops.h"
#include "backend/collectives/half_precision.h"
#include "backend/ops.h"

using namespace keras;
using namespace keras::collectives;

namespace {
int rank() { return world().rank(); }
int size() { return world().size(); }
// 1 + 2 + ... + size
double rank_sum() { return size() * (size() + 1) / 2.0; }
}  // namespace

TEST(Collectives, WorldMatchesTheLauncher) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launched && built_with_mpi()) {
    EXPECT_EQ(size(), std::atoi(launched));
    EXPECT_EQ(world().backend(), "mpi");
  } else {
    EXPECT_EQ(size(), 1);
    EXPECT_EQ(world().backend(), "local");
  }
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), size());
}

TEST(Collectives, AllreduceSumAndMeanFloat32AndFloat64) {
  Tensor a = Tensor::full({3, 5}, rank() + 1.0);
  world().allreduce(a, ReduceOp::sum);
  for (float v : a.to_vector<float>()) EXPECT_FLOAT_EQ(v, static_cast<float>(rank_sum()));
  Tensor b = Tensor::full({7}, rank() + 1.0, DType::float64);
  world().allreduce(b, ReduceOp::mean);
  for (double v : b.to_vector<double>()) EXPECT_DOUBLE_EQ(v, rank_sum() / size());
}

TEST(Collectives, AllreduceIntegers) {
  Tensor a = Tensor::full({4}, 10 * (rank() + 1), DType::int64);
  world().allreduce(a, ReduceOp::sum);
  for (int64_t v : a.to_vector<int64_t>()) EXPECT_EQ(v, static_cast<int64_t>(10 * rank_sum()));
}

TEST(Collectives, AllreduceHalfPrecision) {
  // Small integers are exact in both 16-bit formats, so the sums are exact too.
  std::vector<uint16_t> bf(9, float_to_bfloat16(static_cast<float>(rank() + 1)));
  std::vector<uint16_t> fp(9, float_to_float16(static_cast<float>(rank() + 1)));
  world().allreduce(bf.data(), bf.size(), ElementType::bfloat16, ReduceOp::sum);
  world().allreduce(fp.data(), fp.size(), ElementType::float16, ReduceOp::mean);
  for (uint16_t h : bf) EXPECT_EQ(bfloat16_to_float(h), static_cast<float>(rank_sum()));
  for (uint16_t h : fp) EXPECT_FLOAT_EQ(float16_to_float(h), static_cast<float>(rank_sum() / size()));
}

TEST(Collectives, AsyncAllreduceCompletesOnWait) {
  std::vector<float> v(100000, 1.0f);
  auto request = world().allreduce_async(v.data(), v.size(), ElementType::float32, ReduceOp::sum);
  request->wait();
  EXPECT_TRUE(request->test());
  EXPECT_EQ(v.front(), static_cast<float>(size()));
  EXPECT_EQ(v.back(), static_cast<float>(size()));
}

TEST(Collectives, BroadcastFromTheLastRank) {
  const int root = size() - 1;
  Tensor t = Tensor::full({2, 2}, rank() == root ? 42.0 : -1.0);
  world().broadcast(t, root);
  for (float v : t.to_vector<float>()) EXPECT_EQ(v, 42.0f);
  EXPECT_THROW(world().broadcast(t, size()), ValueError);
}

TEST(Collectives, AllgatherConcatenatesInRankOrder) {
  Tensor t = Tensor::full({2, 3}, static_cast<double>(rank()));
  Tensor all = world().allgather(t);
  ASSERT_EQ(all.shape(), (Shape{2 * size(), 3}));
  std::vector<float> v = all.to_vector<float>();
  for (int r = 0; r < size(); ++r)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(v[static_cast<size_t>(r * 6 + i)], static_cast<float>(r));
}

TEST(Collectives, SumOfDoubles) {
  std::vector<double> s = world().sum({1.0, static_cast<double>(rank())});
  EXPECT_EQ(s[0], size());
  EXPECT_EQ(s[1], rank_sum() - size());
  world().barrier();
}

TEST(Collectives, TensorFormsRefuseWhatTheyCannotReduce) {
  Tensor strided = Tensor::zeros({3, 4}).permuted({1, 0});
  try {
    world().allreduce(strided, ReduceOp::sum);
    FAIL() << "a strided view was reduced";
  } catch (const ValueError& e) {
    EXPECT_STREQ(e.what(), "collectives allreduce: expected a contiguous tensor, got a strided view. Pass t.contiguous().");
  }
  Tensor flags = Tensor::zeros({2}, DType::boolean);
  EXPECT_THROW(world().allreduce(flags, ReduceOp::sum), TypeError);
}

TEST(HalfPrecision, ConversionsRoundToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 lies halfway between two bfloat16 values: ties go to the even one (1.0).
  EXPECT_EQ(float_to_bfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
  EXPECT_EQ(float_to_float16(1.0f), 0x3c00);
  EXPECT_EQ(float_to_float16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_float16(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_float16(1e6f), 0x7c00);
  EXPECT_EQ(float_to_float16(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_float16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  for (uint16_t h : {0x0001, 0x03ff, 0x0400, 0x3c00, 0x3555, 0x7bff, 0xfbff, 0x8001})
    EXPECT_EQ(float_to_float16(float16_to_float(h)), h) << std::hex << h;
  EXPECT_TRUE(std::isinf(float16_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(float16_to_float(float_to_float16(NAN))));
}

TEST(Collectives, AllSumOpAndItsGradientSumOverTheTrainingGroup) {
  set_training_group(&world());
  Tensor x = Tensor::full({3}, rank() + 1.0, DType::float64);
  x.set_requires_grad(true);
  Tensor w = Tensor::from_vector<double>({1, 2, 3});
  TensorList grads;
  Tensor y;
  {
    GradientTape tape;
    y = ops::all_sum(x);
    grads = tape.gradient(ops::sum(ops::multiply(y, w)), {x});
  }
  set_training_group(nullptr);
  for (double v : y.to_vector<double>()) EXPECT_DOUBLE_EQ(v, rank_sum());
  // Every process's loss depends on x: d(sum of the losses)/dx = size * w.
  EXPECT_EQ(grads[0].to_vector<double>(), (std::vector<double>{1.0 * size(), 2.0 * size(), 3.0 * size()}));
}
