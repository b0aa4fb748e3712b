// CUDA kernels of the training-side ops against their CPU kernels: the fused optimizer updates
// (5 steps, every option the CPU supports, bit-for-bit expected, 1e-6 relative required), dropout
// (the mask identical to the CPU's for several seeds, counters, rates and odd sizes) and its
// gradient, the sparse softmax cross-entropy (forward, gradient, large logits, bad labels), the
// bilinear / nearest resizes and their gradients (odd sizes, up and down), affine_transform
// (every fill mode and interpolation). Every test skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "backend/autodiff.h"
#include "backend/cuda.h"
#include "backend/ops.h"
#include "backend/ops_image.h"
#include "backend/ops_nn.h"
#include "backend/random.h"
#include "losses/sparse_softmax_cross_entropy.h"
#include "support/cuda_test.h"

using namespace keras;
using test_support::rel_err;

namespace {

const Device kGpu = Device::cuda(0);

Tensor normal(const Shape& s, DType t, uint64_t seed, double stddev = 1.0) { return random::normal(s, 0.0, stddev, seed, t); }

const DType kFloats[] = {DType::float32, DType::float64};

// ---------------- optimizer updates ----------------

struct UpdateCase {
  std::string op;
  Attrs attrs;
  int slots;
};

std::vector<UpdateCase> update_cases() {
  std::vector<UpdateCase> cases;
  const std::vector<Attrs> preps = {
      {}, {{"grad_scale", 0.5}, {"clip_value", 0.3}, {"decay", 0.01}}, {{"clip_value", 0.7}}, {{"decay", 0.004}}};
  for (const Attrs& p : preps) {
    auto with = [&](Attrs a) {
      for (const auto& [k, v] : p.values()) a.set(k, v);
      return a;
    };
    cases.push_back({"sgd_update", with({{"learning_rate", 0.1}}), 0});
    cases.push_back({"sgd_update", with({{"learning_rate", 0.1}, {"momentum", 0.9}}), 1});
    cases.push_back({"sgd_update", with({{"learning_rate", 0.05}, {"momentum", 0.8}, {"nesterov", true}}), 1});
    for (bool ams : {false, true})
      cases.push_back({"adam_update",
                       with({{"learning_rate", 0.01}, {"beta_1", 0.9}, {"beta_2", 0.999}, {"epsilon", 1e-7},
                             {"amsgrad", ams}}),
                       ams ? 3 : 2});
    for (double mom : {0.0, 0.5})
      for (bool centered : {false, true})
        cases.push_back({"rmsprop_update",
                         with({{"learning_rate", 0.01}, {"rho", 0.9}, {"momentum", mom}, {"epsilon", 1e-7},
                               {"centered", centered}}),
                         1 + (mom > 0) + centered});
    cases.push_back({"adagrad_update", with({{"learning_rate", 0.1}, {"epsilon", 1e-7}}), 1});
  }
  return cases;
}

TEST(CudaTrain, OptimizerUpdatesMatchCpuOverFiveSteps) {
  REQUIRE_CUDA();
  int index = 0;
  for (const UpdateCase& c : update_cases()) {
    for (DType dt : kFloats) {
      for (const Shape& shape : {Shape{7, 33}, Shape{1}, Shape{0}}) {
        SCOPED_TRACE(c.op + " " + c.attrs.str() + " " + dtype_name(dt) + " " + shape_str(shape));
        ++index;
        TensorList cpu{normal(shape, dt, 100 + index)}, gpu;
        // Slots start at zero, as the optimizers create them; five steps exercise every term.
        for (int s = 0; s < c.slots; ++s) cpu.push_back(Tensor::zeros(shape, dt, Device::cpu()));
        for (const Tensor& t : cpu) gpu.push_back(t.to(kGpu));
        for (int step = 1; step <= 5; ++step) {
          Attrs a = c.attrs;
          if (c.op == "adam_update") a.set("step", int64_t{step});
          Tensor g = normal(shape, dt, 300 + index * 7 + step);
          TensorList in_cpu{cpu[0], g}, in_gpu{gpu[0], g.to(kGpu)};
          for (int s = 0; s < c.slots; ++s) in_cpu.push_back(cpu[1 + s]), in_gpu.push_back(gpu[1 + s]);
          run_op(c.op, in_cpu, a);
          run_op(c.op, in_gpu, a);
        }
        for (size_t i = 0; i < cpu.size(); ++i) EXPECT_LE(rel_err(gpu[i], cpu[i]), 1e-6) << "tensor " << i;
      }
    }
  }
}

// ---------------- dropout ----------------

TEST(CudaTrain, DropoutMaskIsTheCpuMask) {
  REQUIRE_CUDA();
  const uint64_t seeds[] = {0, 42, (uint64_t{1} << 40) + 3};
  const uint64_t counters[] = {0, 5, (uint64_t{1} << 32) - 2};  // the last crosses the counter's low word
  for (DType dt : kFloats)
    for (uint64_t seed : seeds)
      for (uint64_t counter : counters)
        for (double rate : {0.1, 0.5, 0.9})
          for (const Shape& shape : {Shape{1}, Shape{3}, Shape{7, 5}, Shape{1031}, Shape{0}}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " seed " + std::to_string(seed) + " counter " +
                         std::to_string(counter) + " rate " + std::to_string(rate) + " " + shape_str(shape));
            Attrs a{{"rate", rate}, {"seed", static_cast<int64_t>(seed)}, {"counter", static_cast<int64_t>(counter)}};
            Tensor x = normal(shape, dt, seed + 1);
            TensorList want = run_op("dropout", {x}, a), got = run_op("dropout", {x.to(kGpu)}, a);
            ASSERT_EQ(got[1].device(), kGpu);
            EXPECT_EQ(got[1].to_vector<bool>(), want[1].to_vector<bool>());
            EXPECT_EQ(rel_err(got[0], want[0]), 0.0);
            Tensor g = normal(shape, dt, seed + 2);
            Attrs ga{{"rate", rate}};
            Tensor dwant = run_op1(OpRegistry::instance().find("dropout_grad"), {g, want[1]}, ga);
            Tensor dgot = run_op1(OpRegistry::instance().find("dropout_grad"), {g.to(kGpu), got[1]}, ga);
            EXPECT_EQ(rel_err(dgot, dwant), 0.0);
          }
}

TEST(CudaTrain, DropoutGradientThroughTheTape) {
  REQUIRE_CUDA();
  for (DType dt : kFloats) {
    auto grads = [&](Device d) {
      GradientTape tape;
      Generator gen(1234);
      Tensor x = normal({5, 13}, dt, 3).to(d);
      Tensor w = normal({5, 13}, dt, 4).to(d);
      x.set_requires_grad(true);
      Tensor loss = ops::sum(ops::multiply(ops::dropout(x, 0.3, gen), w));
      return tape.gradient(loss, {x})[0];
    };
    EXPECT_EQ(rel_err(grads(kGpu), grads(Device::cpu())), 0.0) << dtype_name(dt);
  }
}

// ---------------- sparse softmax cross-entropy ----------------

TEST(CudaTrain, SparseSoftmaxCrossEntropyMatchesCpu) {
  REQUIRE_CUDA();
  struct Case {
    int64_t n, c;
    double scale;
  };
  const Case cases[] = {{1, 1, 1}, {5, 3, 1}, {33, 1000, 3}, {3, 5000, 1}, {4, 10, 1e3}, {7, 257, 80}, {0, 3, 1}};
  for (DType dt : kFloats)
    for (DType lt : {DType::int32, DType::int64})
      for (const Case& c : cases) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " " + dtype_name(lt) + " n " + std::to_string(c.n) + " c " +
                     std::to_string(c.c) + " scale " + std::to_string(c.scale));
        std::vector<int64_t> lab(static_cast<size_t>(c.n));
        for (size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<int64_t>((i * 7 + 3) % c.c);
        Tensor labels = Tensor::from_vector(lab, {c.n}, Device::cpu()).astype(lt);
        Tensor logits = normal({c.n, c.c}, dt, 11, c.scale);
        Tensor weights = normal({c.n}, dt, 12);
        auto run = [&](Device d) {
          GradientTape tape;
          Tensor x = logits.to(d);
          x.set_requires_grad(true);
          TensorList out = run_op("sparse_softmax_cross_entropy", {x, labels.to(d)});
          Tensor loss = ops::sum(ops::multiply(ops::sparse_softmax_cross_entropy(x, labels.to(d)), weights.to(d)));
          TensorList r = tape.gradient(loss, {x});
          r.push_back(out[0]);
          r.push_back(out[1]);
          return r;
        };
        TensorList want = run(Device::cpu()), got = run(kGpu);
        EXPECT_LE(rel_err(got[0], want[0]), 1e-5) << "gradient";
        EXPECT_LE(rel_err(got[1], want[1]), 1e-5) << "loss";
        EXPECT_LE(rel_err(got[2], want[2]), 1e-5) << "softmax";
      }
}

TEST(CudaTrain, SparseSoftmaxCrossEntropyBadLabelThrowsAsCpu) {
  REQUIRE_CUDA();
  for (DType lt : {DType::int32, DType::int64}) {
    Tensor logits = normal({4, 3}, DType::float32, 5);
    Tensor labels = Tensor::from_vector(std::vector<int64_t>{0, 2, 3, -1}, {4}, Device::cpu()).astype(lt);
    std::string want, got;
    try {
      ops::sparse_softmax_cross_entropy(logits, labels);
    } catch (const IndexError& e) {
      want = e.what();
    }
    try {
      ops::sparse_softmax_cross_entropy(logits.to(kGpu), labels.to(kGpu));
    } catch (const IndexError& e) {
      got = e.what();
    }
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want);
    Tensor probs = normal({4, 3}, DType::float32, 6), g = normal({4}, DType::float32, 7);
    EXPECT_THROW(ops::sparse_softmax_cross_entropy_grad(probs.to(kGpu), labels.to(kGpu), g.to(kGpu)), IndexError);
  }
}

// ---------------- resizes ----------------

struct ResizeCase {
  Shape in;
  ops::Size2 out;
};

const ResizeCase kResizeCases[] = {
    {{2, 5, 7, 3}, {9, 4}},  {{1, 1, 1, 1}, {3, 5}},  {{1, 13, 11, 2}, {4, 6}}, {{2, 4, 4, 1}, {8, 8}},
    {{1, 3, 5, 33}, {3, 5}}, {{1, 17, 9, 1}, {5, 27}}, {{3, 2, 3, 5}, {1, 1}},  {{1, 40, 37, 2}, {3, 100}},
};

void check_resize(const std::function<Tensor(const Tensor&, ops::Size2)>& resize, const char* name) {
  for (DType dt : kFloats)
    for (const ResizeCase& c : kResizeCases) {
      SCOPED_TRACE(std::string(name) + " " + dtype_name(dt) + " " + shape_str(c.in) + " -> " +
                   std::to_string(c.out[0]) + "x" + std::to_string(c.out[1]));
      Tensor x0 = normal(c.in, dt, 21);
      Tensor w0 = normal({c.in[0], c.out[0], c.out[1], c.in[3]}, dt, 22);
      auto run = [&](Device d) {
        GradientTape tape;
        Tensor x = x0.to(d);
        x.set_requires_grad(true);
        Tensor y = resize(x, c.out);
        TensorList r = tape.gradient(ops::sum(ops::multiply(y, w0.to(d))), {x});
        r.push_back(y);
        return r;
      };
      TensorList want = run(Device::cpu()), got = run(kGpu);
      EXPECT_LE(rel_err(got[1], want[1]), 1e-6) << "forward";
      EXPECT_LE(rel_err(got[0], want[0]), 1e-5) << "gradient";
    }
}

TEST(CudaTrain, ResizeBilinearAndGradientMatchCpu) {
  REQUIRE_CUDA();
  check_resize([](const Tensor& x, ops::Size2 s) { return ops::resize_bilinear2d(x, s); }, "bilinear");
}

TEST(CudaTrain, ResizeNearestAndGradientMatchCpu) {
  REQUIRE_CUDA();
  check_resize([](const Tensor& x, ops::Size2 s) { return ops::resize_nearest2d(x, s); }, "nearest");
}

TEST(CudaTrain, ResizeGradientsAreDeterministic) {
  REQUIRE_CUDA();
  Tensor g = normal({2, 31, 45, 3}, DType::float32, 9).to(kGpu);
  for (const char* op : {"resize_bilinear_grad", "resize_nearest_grad"}) {
    Attrs a{{"size", std::vector<int64_t>{31, 45}}, {"input_shape", std::vector<int64_t>{2, 10, 16, 3}}};
    Tensor first = run_op(op, {g}, a)[0];
    for (int i = 0; i < 3; ++i) EXPECT_EQ(run_op(op, {g}, a)[0].to_vector<float>(), first.to_vector<float>()) << op;
  }
}

// ---------------- affine_transform ----------------

TEST(CudaTrain, AffineTransformMatchesCpu) {
  REQUIRE_CUDA();
  const float c = std::cos(0.4f), s = std::sin(0.4f);
  const std::vector<std::vector<float>> transforms = {
      {c, -s, 2.5f, s, c, -1.0f, 0.0f, 0.0f},                                  // rotation + shift
      {0.5f, 0.0f, 0.0f, 0.0f, 0.5f, 0.0f, 0.0f, 0.0f},                        // ties on .5
      {1.3f, 0.2f, -4.0f, -0.1f, 0.9f, 3.0f, 0.01f, -0.02f},                   // projective
      {2.0f, 0.0f, -20.0f, 0.0f, -1.5f, 30.0f, 0.0f, 0.0f},                    // far outside
      {c, -s, 2.5f, s, c, -1.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.5f, 0.0f, 1.0f, -0.5f, 0.0f, 0.0f},  // per image
  };
  for (DType dt : kFloats)
    for (const auto& t : transforms)
      for (const char* interp : {"nearest", "bilinear"})
        for (const char* mode : {"reflect", "wrap", "constant", "nearest"}) {
          SCOPED_TRACE(std::string(dtype_name(dt)) + " " + interp + " " + mode + " t[0] " + std::to_string(t[0]));
          Tensor x = normal({2, 7, 9, 3}, dt, 31);
          Tensor tt = Tensor::from_vector(t, {static_cast<int64_t>(t.size() / 8), 8}, Device::cpu());
          Tensor want = ops::affine_transform(x, tt, interp, mode, 0.5);
          Tensor got = ops::affine_transform(x.to(kGpu), tt.to(kGpu), interp, mode, 0.5);
          EXPECT_LE(rel_err(got, want), 1e-6);
        }
}

}  // namespace
