// Gradient checks against central differences, shared by every op and layer test.
//
// The function under test maps inputs to one tensor of any shape. Its output is contracted with a
// fixed random projection P (so every output element counts), giving the scalar L = sum(f(x) * P).
// The analytic gradient dL/dx comes from the tape seeded with P; the numeric one from central
// differences of L, accumulated in double on the host.
//  - float64 inputs: one small step, tight tolerance.
//  - float32 inputs: a sweep of step sizes; the best-agreeing step must pass a looser tolerance
//    (truncation error shrinks with the step, rounding error grows; one of them is in the valley).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "backend/autodiff.h"
#include "backend/random.h"

namespace keras::testing {

using Fn = std::function<Tensor(const TensorList&)>;

inline double contract(const Tensor& y, const Tensor& p) {
  double s = 0;
  Tensor yc = y.contiguous(), pc = p.contiguous();
  for (int64_t i = 0; i < yc.numel(); ++i) s += element_as_double(yc, i) * element_as_double(pc, i);
  return s;
}

inline void set_element(Tensor& t, int64_t i, double v) {
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    static_cast<T*>(t.raw_data())[i] = static_cast<T>(v);
  });
  t.bump_version();  // caches keyed on the version (reordered weights) must see the change
}

// Checks every element of every floating input (inputs listed in `skip` are left alone).
// Returns true when all gradients agree; failures are reported through gtest with the op name.
inline bool check_gradients(const std::string& name, const Fn& f, TensorList inputs,
                            std::vector<size_t> skip = {}, double tol64 = 1e-6, double tol32 = 2e-2) {
  for (auto& x : inputs) x = x.clone();
  auto skipped = [&](size_t i) { return std::find(skip.begin(), skip.end(), i) != skip.end() || !is_floating(inputs[i].dtype()); };
  TensorList grads;
  Tensor proj;
  {
    for (size_t i = 0; i < inputs.size(); ++i) if (!skipped(i)) inputs[i].set_requires_grad(true);
    GradientTape tape;
    Tensor y = f(inputs);
    proj = random::normal(y.shape(), 0, 1, uint64_t{7}, y.dtype());
    grads = compute_gradients(y, inputs, proj);
    for (auto& x : inputs) x.set_requires_grad(false);
  }
  bool ok = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (skipped(i)) continue;
    bool f64 = inputs[i].dtype() == DType::float64;
    std::vector<double> steps = f64 ? std::vector<double>{1e-6} : std::vector<double>{1e-2, 3e-3, 1e-3, 3e-4};
    Tensor& x = inputs[i];
    Tensor g = grads[i].defined() ? grads[i] : Tensor::zeros(x.shape(), x.dtype());
    double best = 1e300;
    int64_t worst_index = -1;
    double worst_num = 0, worst_ana = 0;
    for (double h : steps) {
      double err = 0;
      int64_t at = -1;
      double num_at = 0, ana_at = 0;
      for (int64_t k = 0; k < x.numel(); ++k) {
        double orig = element_as_double(x, k);
        set_element(x, k, orig + h);
        double up = contract(f(inputs), proj);
        set_element(x, k, orig - h);
        double down = contract(f(inputs), proj);
        set_element(x, k, orig);
        double num = (up - down) / (2 * h);
        double ana = element_as_double(g, k);
        double e = std::abs(num - ana) / std::max(1.0, std::abs(num) + std::abs(ana));
        if (e > err) err = e, at = k, num_at = num, ana_at = ana;
      }
      if (err < best) best = err, worst_index = at, worst_num = num_at, worst_ana = ana_at;
    }
    double tol = f64 ? tol64 : tol32;
    if (best > tol) {
      ok = false;
      ADD_FAILURE() << name << ": gradient of input " << i << " differs at element " << worst_index
                    << ": numeric " << worst_num << ", analytic " << worst_ana << " (rel err " << best << ")";
    }
  }
  return ok;
}

}  // namespace keras::testing
