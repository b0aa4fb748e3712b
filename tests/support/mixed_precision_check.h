// Check (i) of the layer harness (layer_harness.h): the layer made under the global policy
// mixed_bfloat16, given the float32 layer's weights, keeps float32 variables, returns its
// floating outputs in bfloat16 within bfloat16 rounding of the float32 outputs (5e-2 of the
// largest magnitude: a few roundings of 2^-8 through the layer), and its gradients reach the
// float32 weights in float32.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/autodiff.h"
#include "backend/ops.h"
#include "layers/dtype_policy.h"
#include "layers/layer.h"

namespace keras::testing::harness_detail {

inline void check_mixed_bfloat16(const std::function<LayerPtr()>& make, const TensorList& xs, const CallArgs& args,
                                 const std::string& name) {
  SCOPED_TRACE(name + " (i) under mixed_bfloat16");
  LayerPtr reference = make();
  TensorList want = (*reference)(xs, args);
  LayerPtr layer;
  {
    mixed_precision::set_global_policy("mixed_bfloat16");
    struct Restore {
      ~Restore() { mixed_precision::set_global_policy("float32"); }
    } restore;
    layer = make();
  }
  (*layer)(xs, args);  // builds
  layer->set_weights(reference->get_weights());
  for (const auto& v : layer->weights())
    if (is_floating(v.dtype())) EXPECT_EQ(v.dtype(), DType::float32) << v.path();
  std::vector<Tensor> sources;
  for (const auto& v : layer->trainable_weights()) sources.push_back(v.value());
  GradientTape tape;
  TensorList got = (*layer)(xs, args);
  ASSERT_EQ(got.size(), want.size());
  Tensor loss;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!is_floating(want[i].dtype())) continue;
    // Layers whose policy is pinned (float32 heads) or that keep float32 (none so far) would
    // fail here: every harness layer takes the global policy.
    EXPECT_EQ(got[i].dtype(), DType::bfloat16) << "output " << i;
    std::vector<double> g = got[i].to_vector<double>(), w = want[i].to_vector<double>();
    ASSERT_EQ(g.size(), w.size());
    double scale = 0, diff = 0;
    for (size_t k = 0; k < w.size(); ++k) scale = std::max(scale, std::fabs(w[k]));
    for (size_t k = 0; k < w.size(); ++k) diff = std::max(diff, std::fabs(g[k] - w[k]));
    EXPECT_LE(diff, 5e-2 * std::max(scale, 1.0)) << "output " << i << " against float32";
    Tensor l = ops::sum(ops::cast(got[i], DType::float32));
    loss = loss.defined() ? ops::add(loss, l) : l;
  }
  if (!loss.defined() || sources.empty()) return;
  TensorList grads = tape.gradient(loss, sources);
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined()) EXPECT_EQ(grads[i].dtype(), DType::float32) << "gradient of weight " << i;
}

}  // namespace keras::testing::harness_detail
