// The FLOP counts behind the profiler's FLOP/s: 2 per multiply-add of matmul (either transpose),
// dense, conv2d (grouped too) and conv2d's two backward ops; 0 ("unknown") for anything else.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "keras/profiler/op_flops.h"

using namespace keras;
using profiler::op_flops;

TEST(OpFlops, MatmulAndDenseCountTwoPerMultiplyAdd) {
  const Tensor a = Tensor::ones({2, 5, 3}), b = Tensor::ones({3, 4});
  EXPECT_DOUBLE_EQ(op_flops("matmul", {a, b}, {Tensor::ones({2, 5, 4})}, {}), 2.0 * 2 * 5 * 4 * 3);
  // a^T: a is (k, m) = (3, 5); the contracted extent is a's second-to-last axis.
  const Tensor at = Tensor::ones({3, 5});
  EXPECT_DOUBLE_EQ(op_flops("matmul", {at, b}, {Tensor::ones({5, 4})}, Attrs{{"transpose_a", true}}), 2.0 * 5 * 4 * 3);
  const Tensor x = Tensor::ones({8, 16}), w = Tensor::ones({16, 10});
  EXPECT_DOUBLE_EQ(op_flops("dense", {x, w, Tensor::ones({10})}, {Tensor::ones({8, 10})}, {}), 2.0 * 8 * 10 * 16);
}

TEST(OpFlops, ConvolutionsCountKernelElementsPerOutputChannel) {
  const Tensor x = Tensor::ones({2, 8, 8, 6}), y = Tensor::ones({2, 6, 6, 4});
  const Tensor k = Tensor::ones({3, 3, 6, 4});
  const double forward = 2.0 * (2 * 6 * 6 * 4) * (3 * 3 * 6);
  EXPECT_DOUBLE_EQ(op_flops("conv2d", {x, k}, {y}, {}), forward);
  EXPECT_DOUBLE_EQ(op_flops("conv2d_backward_data", {y, k}, {x}, {}), forward);
  EXPECT_DOUBLE_EQ(op_flops("conv2d_backward_weights", {x, y}, {k}, Attrs{{"kernel_shape", std::vector<int64_t>{3, 3, 6, 4}}}),
                   forward);
  // Two groups: each output element sees in/groups = 3 input channels.
  const Tensor kg = Tensor::ones({3, 3, 3, 4});
  EXPECT_DOUBLE_EQ(op_flops("conv2d", {x, kg}, {y}, {}), forward / 2);
}

TEST(OpFlops, OtherOpsAreUnknown) {
  const Tensor a = Tensor::ones({4});
  EXPECT_EQ(op_flops("add", {a, a}, {a}, {}), 0);
  EXPECT_EQ(op_flops("relu", {a}, {a}, {}), 0);
  EXPECT_EQ(op_flops("matmul", {a, a}, {}, {}), 0);  // no output: nothing ran
}
