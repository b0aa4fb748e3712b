// Training fuses a residual Add read only by a ReLU into one add_relu op (keras/models/functional.cpp,
// layers/elementwise_merge.cpp): the same weights as the layers run one by one, only where allowed.
#include <gtest/gtest.h>

#include <map>

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

// in -> conv -> BN -> Add(conv's input) -> activation -> pooled dense; the activation is the ReLU
// layer for "ReLU", else Activation(activation). With `second_reader` another Add reads the sum
// too (then it must not fuse).
std::shared_ptr<Model> residual_model(const std::string& activation, bool second_reader = false) {
  set_random_seed(41);
  auto in = L::Input({6, 6, 4});
  auto y = L::BatchNormalization()(L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"})(in));
  auto sum = L::Add()({y, in});
  auto x = activation == "ReLU" ? L::ReLU()(sum) : L::Activation({.activation = activation})(sum);
  if (second_reader) x = L::Add()({x, sum});
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

TEST(AddReluFusion, TrainingRunsOneOpWithTheLayersWeights) {
  ExactConvolutions exact;
  Tensor x = random::normal({4, 6, 6, 4}, 0, 1, uint64_t{60});
  auto [fused_ops, fused] = train(residual_model("ReLU"), x);
  set_conv_bn_folding(false);
  auto [plain_ops, plain] = train(residual_model("ReLU"), x);
  set_conv_bn_folding(true);
  EXPECT_EQ(fused_ops["add_relu"], 3u);
  EXPECT_EQ(fused_ops["relu"], 0u);
  EXPECT_EQ(plain_ops["add_relu"], 0u);
  EXPECT_EQ(plain_ops["relu"], 3u);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_EQ(fused[i].to_vector<float>(), plain[i].to_vector<float>()) << "weight " << i;
}

TEST(AddReluFusion, OnlyASoleReluReaderFuses) {
  ExactConvolutions exact;
  Tensor x = random::normal({4, 6, 6, 4}, 0, 1, uint64_t{60});
  EXPECT_EQ(train(residual_model("ReLU", /*second_reader=*/true), x).first["add_relu"], 0u);
  EXPECT_EQ(train(residual_model("relu6"), x).first["add_relu"], 0u);
  auto activation_layer = train(residual_model("relu"), x).first;  // Activation("relu") fuses as ReLU() does
  EXPECT_EQ(activation_layer["add_relu"], 3u);
  EXPECT_EQ(activation_layer["relu"], 0u);
}
