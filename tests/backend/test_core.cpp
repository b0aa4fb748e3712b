#include <gtest/gtest.h>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "backend/random.h"
#include "backend/threads.h"

using namespace keras;

TEST(Tensor, CreationAndViews) {
  Tensor t = Tensor::arange(0, 6).view({2, 3});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor tt = t.permuted();
  EXPECT_FALSE(tt.is_contiguous());
  EXPECT_EQ(tt.contiguous().to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor row = t.slice_batch(1, 2);
  EXPECT_EQ(row.to_vector<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_THROW(t.slice_batch(1, 3), IndexError);
  EXPECT_THROW(t.view({4, -1}), ShapeError);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Tensor::zeros({3}).raw_data()) % 64, 0u);
  EXPECT_EQ(Tensor::full({2}, 7, DType::int64).to_vector<int64_t>(), (std::vector<int64_t>{7, 7}));
  EXPECT_NE(t.str().find("shape=(2, 3)"), std::string::npos);
}

TEST(Tensor, StridedCopyMatchesElementByElementReference) {
  // copy moves whole unit-stride rows at once; element_as_double walks the view's strides one
  // element at a time. Permutations (inner stride > 1), outer-axis slices (offset, inner stride
  // 1), size-1 axes, empty tensors and several dtypes.
  auto reference = [](const Tensor& v) {
    std::vector<double> out;
    for (int64_t i = 0; i < v.numel(); ++i) out.push_back(element_as_double(v, i));
    return out;
  };
  for (DType dt : {DType::float32, DType::float64, DType::int32, DType::boolean}) {
    Tensor t = Tensor::arange(0, 2 * 3 * 4 * 5).view({2, 3, 4, 5}).astype(dt);
    std::vector<Tensor> views = {t.permuted({0, 2, 1, 3}), t.permuted({3, 1, 0, 2}), t.permuted(),
                                 t.slice_batch(1, 2), t.view({6, 20}).slice_batch(2, 5).permuted(),
                                 t.view({1, 120, 1}).permuted({2, 1, 0}), t.slice_batch(1, 1)};
    for (const Tensor& v : views) {
      Tensor c = v.clone();
      EXPECT_TRUE(c.is_contiguous());
      EXPECT_EQ(c.shape(), v.shape());
      EXPECT_EQ(reference(c), reference(v)) << dtype_name(dt) << " " << v.str();
    }
  }
  Tensor scalar = Tensor::full({}, 3.5, DType::float64);
  EXPECT_EQ(scalar.clone().item(), 3.5);
}

TEST(Random, SeededAndDeterministic) {
  Tensor a = random::normal({1000}, 0, 1, uint64_t{42});
  Tensor b = random::normal({1000}, 0, 1, uint64_t{42});
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  auto v = a.to_vector<float>();
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  EXPECT_NEAR(mean, 0.0, 0.1);
  EXPECT_NEAR(var, 1.0, 0.1);
  for (float x : random::truncated_normal({1000}, 0, 1, uint64_t{3}).to_vector<float>()) EXPECT_LE(std::abs(x), 2.0f);
  for (float x : random::uniform({1000}, -2, 3, uint64_t{3}).to_vector<float>()) {
    EXPECT_GE(x, -2.0f);
    EXPECT_LT(x, 3.0f);
  }
}

TEST(Registry, MissingKernelAndUnknownOp) {
  EXPECT_THROW(run_op("no_such_op", {}), NotImplementedError);
}

TEST(Threads, KerasVariableThenOmpVariableThenCores) {
  EXPECT_EQ(threads_from_environment("3", "5", 16), 3);
  EXPECT_EQ(threads_from_environment(nullptr, "5", 16), 5);
  EXPECT_EQ(threads_from_environment(nullptr, "4,2", 16), 4);  // libgomp's nested levels: the first
  EXPECT_EQ(threads_from_environment("0", "x", 16), 16);       // not a count: ignored
  EXPECT_EQ(threads_from_environment("2abc", "99999999999999", 16), 16);
  EXPECT_EQ(threads_from_environment(nullptr, nullptr, 6), 6);
  EXPECT_EQ(threads_from_environment(nullptr, nullptr, 0), 1);
}

TEST(Threads, EnvironmentOverridesAndSetter) {
  // ctest runs every test with KERAS_NUM_THREADS=2; by hand the default is OMP_NUM_THREADS, else
  // one per core the process may use.
  if (const char* env = std::getenv("KERAS_NUM_THREADS")) EXPECT_EQ(num_threads(), std::atoi(env));
  else EXPECT_GE(num_threads(), 1);
  int before = num_threads();
  set_num_threads(1);
  EXPECT_EQ(num_threads(), 1);
  EXPECT_THROW(set_num_threads(0), ValueError);
  set_num_threads(before);
}
