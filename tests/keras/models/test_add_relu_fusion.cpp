// Training fuses a residual Add read only by a ReLU into one add_relu op (keras/models/functional.cpp,
// layers/elementwise_merge.cpp), and a BatchNormalization read only by such an Add into one
// batch_norm_add_relu_train op (layers/batch_normalization.cpp): the same weights as the layers
// run one by one, only where allowed.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "backend/bf16_compute.h"
#include "backend/determinism.h"
#include "backend/op_profile.h"
#include "keras/keras.h"

using namespace keras;
namespace L = keras::layers;

namespace {

// Three Adam steps of `model`; the ops they ran and the weights after them.
std::pair<std::map<std::string, uint64_t>, TensorList> train(const std::shared_ptr<Model>& model, const Tensor& x) {
  Tensor y = random::normal({4, 3}, 0, 1, uint64_t{61});
  reset_op_profile();
  set_op_profiling(true);
  for (int i = 0; i < 3; ++i) model->train_on_batch(x, y);
  set_op_profiling(false);
  std::map<std::string, uint64_t> calls;
  for (const auto& e : op_profile()) calls[e.op] += e.calls;
  return {calls, model->get_weights()};
}

// in -> conv [-> BN] -> Add(conv's input) -> activation -> pooled dense; the activation is the
// ReLU layer for "ReLU", else Activation(activation). With `second_reader` another Add reads the
// sum too (then it must not fuse). With `late_shortcut` the Add's other input is a convolution of
// `in` made after the normalization (so not computed yet when the normalization runs).
struct Residual {
  std::string activation = "ReLU";
  bool second_reader = false, with_bn = true, late_shortcut = false;
};
std::shared_ptr<Model> residual_model(const Residual& r) {
  set_random_seed(41);
  auto in = L::Input({6, 6, 4});
  auto y = L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"})(in);
  if (r.with_bn) y = L::BatchNormalization()(y);
  auto shortcut = r.late_shortcut ? L::Conv2D({.filters = 4, .kernel_size = 1})(in) : in;
  auto sum = L::Add()({y, shortcut});
  auto x = r.activation == "ReLU" ? L::ReLU()(sum) : L::Activation({.activation = r.activation})(sum);
  if (r.second_reader) x = L::Add()({x, sum});
  auto out = L::Dense({.units = 3})(L::GlobalAveragePooling2D()(x));
  auto model = std::make_shared<Model>(in, out);
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
  return model;
}

struct ExactConvolutions {  // the chooser may pick Winograd for one run and not the other
  ExactConvolutions() { set_op_determinism(true); }
  ~ExactConvolutions() { set_op_determinism(false); }
};

}  // namespace

// Against the same model with the fusions off (set_conv_bn_folding(false)): the same weights,
// moving statistics included, bit for bit.
void expect_same_training(const Residual& r, std::map<std::string, uint64_t>& fused_ops,
                          std::map<std::string, uint64_t>& plain_ops) {
  Tensor x = random::normal({4, 6, 6, 4}, 0, 1, uint64_t{60});
  TensorList fused, plain;
  std::tie(fused_ops, fused) = train(residual_model(r), x);
  set_conv_bn_folding(false);
  std::tie(plain_ops, plain) = train(residual_model(r), x);
  set_conv_bn_folding(true);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_EQ(fused[i].to_vector<float>(), plain[i].to_vector<float>()) << "weight " << i;
}

TEST(AddReluFusion, TrainingRunsOneOpWithTheLayersWeights) {
  ExactConvolutions exact;
  std::map<std::string, uint64_t> fused, plain;
  expect_same_training({.with_bn = false}, fused, plain);
  EXPECT_EQ(fused["add_relu"], 3u);
  EXPECT_EQ(fused["relu"], 0u);
  EXPECT_EQ(plain["add_relu"], 0u);
  EXPECT_EQ(plain["relu"], 3u);
}

TEST(AddReluFusion, BatchNormAddReluRunsAsOneOpWithTheLayersWeights) {
  ExactConvolutions exact;
  std::map<std::string, uint64_t> fused, plain;
  expect_same_training({}, fused, plain);
  EXPECT_EQ(fused["batch_norm_add_relu_train"], 3u);
  EXPECT_EQ(fused["batch_norm_train"] + fused["add_relu"] + fused["relu"], 0u);
  EXPECT_EQ(plain["batch_norm_add_relu_train"], 0u);
  EXPECT_EQ(plain["batch_norm_train"], 3u);
  EXPECT_EQ(plain["relu"], 3u);
}

// Under mixed_bfloat16 the block runs in bfloat16 with float32 weights: one pass where the
// bfloat16 kernels run (AVX512-BF16 / AMX CPUs), the separate ops elsewhere; the same weights.
TEST(AddReluFusion, MixedBfloat16TrainsTheSameWeights) {
  ExactConvolutions exact;
  struct MixedBfloat16 {  // restored even when an assertion returns early
    MixedBfloat16() { mixed_precision::set_global_policy("mixed_bfloat16"); }
    ~MixedBfloat16() { mixed_precision::set_global_policy("float32"); }
  };
  std::map<std::string, uint64_t> fused, plain;
  {
    MixedBfloat16 policy;
    expect_same_training({}, fused, plain);
  }
  EXPECT_EQ(fused["batch_norm_add_relu_train"], bf16_kernels_enabled(DeviceKind::cpu) ? 3u : 0u);
  EXPECT_EQ(plain["batch_norm_add_relu_train"], 0u);
}

// The Add's other input made after the normalization: the normalization runs alone, the Add
// takes the ReLU.
TEST(AddReluFusion, ALateResidualLeavesTheAddItsReluOnly) {
  ExactConvolutions exact;
  std::map<std::string, uint64_t> fused, plain;
  expect_same_training({.late_shortcut = true}, fused, plain);
  EXPECT_EQ(fused["batch_norm_add_relu_train"], 0u);
  EXPECT_EQ(fused["batch_norm_train"], 3u);
  EXPECT_EQ(fused["add_relu"], 3u);
}

TEST(AddReluFusion, OnlyASoleReluReaderFuses) {
  ExactConvolutions exact;
  Tensor x = random::normal({4, 6, 6, 4}, 0, 1, uint64_t{60});
  for (bool bn : {false, true}) {
    SCOPED_TRACE(bn ? "with BatchNormalization" : "without");
    auto two_readers = train(residual_model({.second_reader = true, .with_bn = bn}), x).first;
    EXPECT_EQ(two_readers["add_relu"] + two_readers["batch_norm_add_relu_train"], 0u);
    auto relu6 = train(residual_model({.activation = "relu6", .with_bn = bn}), x).first;
    EXPECT_EQ(relu6["add_relu"] + relu6["batch_norm_add_relu_train"], 0u);
    auto activation_layer = train(residual_model({.activation = "relu", .with_bn = bn}), x).first;  // as ReLU() does
    EXPECT_EQ(activation_layer[bn ? "batch_norm_add_relu_train" : "add_relu"], 3u);
    EXPECT_EQ(activation_layer["relu"], 0u);
  }
}
