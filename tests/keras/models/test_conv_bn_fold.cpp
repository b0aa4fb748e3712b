// Inference folds Conv2D / DepthwiseConv2D -> BatchNormalization (-> ReLU / ReLU6) chains into one convolution
// (keras/models/conv_bn_fold.h), and ResNet's -> Add -> ReLU block ends into one conv2d_add; training
// fuses BatchNormalization -> ReLU: same values as the layers run one by one, only where it is allowed.
#include <gtest/gtest.h>

#include <map>

#include "backend/determinism.h"
#include "backend/op_profile.h"
#include "keras/keras.h"
#include "keras/applications/mobilenet_v2.h"
#include "keras/applications/resnet20.h"

using namespace keras;
namespace L = keras::layers;

namespace {

float max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  float m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

// Non-trivial BatchNormalization weights: each N(0, stddev), variances squared plus a floor,
// gammas shifted by gamma_offset.
void randomize(const LayerPtr& bn, uint64_t seed, double stddev = 1, double variance_floor = 0.1, double gamma_offset = 0) {
  TensorList w;
  for (const auto& v : bn->weights()) {
    Tensor r = random::normal(v.shape(), 0, stddev, seed++);
    if (v.name().find("variance") != std::string::npos) r = ops::add(ops::multiply(r, r), variance_floor);
    if (v.name().find("gamma") != std::string::npos) r = ops::add(r, gamma_offset);
    w.push_back(r);
  }
  bn->set_weights(w);
}

// How often `f` runs each op.
template <class F>
std::map<std::string, uint64_t> ops_run(F&& f) {
  reset_op_profile();
  set_op_profiling(true);
  f();
  set_op_profiling(false);
  std::map<std::string, uint64_t> calls;
  for (const auto& e : op_profile()) calls[e.op] += e.calls;
  return calls;
}

struct Chain {
  L::Conv2D conv;
  L::BatchNormalization bn;
  L::ReLU relu;
  std::shared_ptr<Model> model;
  // The chain run layer by layer, in inference mode: the reference.
  Tensor reference(const Tensor& x) const {
    Tensor y = (*conv)(TensorList{x})[0];
    y = (*bn)(TensorList{y}, CallArgs{.training = false})[0];
    return (*relu)(TensorList{y})[0];
  }
};

Chain make_chain(bool use_bias, bool center, bool scale, int64_t groups = 1) {
  auto in = L::Input({9, 7, 4});
  Chain c{L::Conv2D({.filters = 6, .kernel_size = 3, .strides = 2, .padding = "same", .groups = groups, .use_bias = use_bias,
                     .bias_initializer = "glorot_uniform"}),
          L::BatchNormalization({.epsilon = 1e-3, .center = center, .scale = scale}), L::ReLU(), nullptr};
  c.model = std::make_shared<Model>(in, c.relu(c.bn(c.conv(in))));
  randomize(c.bn, 11);
  return c;
}

}  // namespace

TEST(ConvBnFold, PredictMatchesTheLayersRunOneByOneWithoutRunningThem) {
  Tensor x = random::normal({3, 9, 7, 4}, 0, 1, uint64_t{5});
  for (bool use_bias : {false, true})
    for (bool center : {false, true})
      for (bool scale : {false, true})
        for (int64_t groups : {1, 2}) {
          Chain c = make_chain(use_bias, center, scale, groups);
          Tensor folded;
          auto names = ops_run([&] { folded = c.model->predict_on_batch(x); });
          EXPECT_EQ(names.count("batch_norm_inference"), 0u) << "not folded";
          EXPECT_EQ(names.count("relu"), 0u) << "ReLU not fused";
          EXPECT_LT(max_abs_diff(folded, c.reference(x)), 2e-5f) << use_bias << center << scale << groups;
        }
}

TEST(ConvBnFold, FoldedWeightsFollowWeightChanges) {
  Chain c = make_chain(true, true, true);
  Tensor x = random::normal({2, 9, 7, 4}, 0, 1, uint64_t{6});
  Tensor before = c.model->predict_on_batch(x);
  randomize(c.bn, 40);  // new moving statistics, gamma and beta
  Tensor after = c.model->predict_on_batch(x);
  EXPECT_GT(max_abs_diff(before, after), 1e-2f);
  EXPECT_LT(max_abs_diff(after, c.reference(x)), 2e-5f);
  // A training step changes the kernel and the statistics; inference follows.
  c.model->compile({.optimizer = optimizers::SGD({.learning_rate = 0.1}), .loss = "mse"});
  c.model->train_on_batch(x, ops::multiply(before, 0.5));
  EXPECT_LT(max_abs_diff(c.model->predict_on_batch(x), c.reference(x)), 2e-5f);
}

TEST(ConvBnFold, NotFoldedWhenGradientsAreRecordedOrBatchNormTrains) {
  Chain c = make_chain(true, true, true);
  Tensor x = random::normal({2, 9, 7, 4}, 0, 1, uint64_t{7});
  // Fine-tuning with inference-mode BatchNormalization under a tape: the kernel gets gradients.
  TensorList grads;
  auto names = ops_run([&] {
    GradientTape tape;
    Tensor y = (*c.model)(TensorList{x}, CallArgs{.training = false})[0];
    grads = tape.gradient(ops::sum(y), {c.conv->kernel().value()});
  });
  EXPECT_EQ(names["batch_norm_inference"], 1u);
  ASSERT_TRUE(grads[0].defined());
  // Training mode normalizes with the batch statistics, without any tape too.
  Tensor moving = c.bn->moving_mean().value().clone();
  names = ops_run([&] { (*c.model)(TensorList{x}, CallArgs{.training = true}); });
  EXPECT_EQ(names["batch_norm_relu_train"], 1u);  // with the ReLU after it (training's fusion)
  EXPECT_GT(max_abs_diff(moving, c.bn->moving_mean().value()), 0.0f);
  // A frozen BatchNormalization runs in inference mode even when called with training=true.
  c.bn->set_trainable(false);
  Tensor y;
  names = ops_run([&] { y = (*c.model)(TensorList{x}, CallArgs{.training = true})[0]; });
  EXPECT_EQ(names.count("batch_norm_inference") + names.count("batch_norm_train"), 0u);
  EXPECT_LT(max_abs_diff(y, c.reference(x)), 2e-5f);
}

TEST(ConvBnFold, ChainsWhoseIntermediatesAreReadElsewhereAreNotFolded) {
  auto in = L::Input({6, 6, 3});
  auto conv = L::Conv2D({.filters = 4, .kernel_size = 3});
  auto bn = L::BatchNormalization();
  auto bn2 = L::BatchNormalization();
  auto conv_act = L::Conv2D({.filters = 4, .kernel_size = 1, .activation = "relu"});
  auto relu = L::ReLU({.max_value = 6.0});
  auto c = conv(in);
  auto n = bn(c);
  // conv's output is also a model output, and conv_act applies its activation before bn2: neither
  // chain may fold.
  auto model = std::make_shared<Model>(std::vector<KerasTensor>{in},
                                       std::vector<KerasTensor>{c, relu(bn2(conv_act(n)))});
  randomize(bn, 3);
  randomize(bn2, 9);
  Tensor x = random::normal({2, 6, 6, 3}, 0, 1, uint64_t{8});
  TensorList out;
  auto names = ops_run([&] { out = model->predict_on_batch(TensorList{x}); });
  EXPECT_EQ(names["batch_norm_inference"], 2u);
  Tensor ref_c = (*conv)(TensorList{x})[0];
  Tensor ref_n = (*bn)(TensorList{ref_c})[0];
  Tensor ref = (*relu)((*bn2)((*conv_act)(TensorList{ref_n})))[0];
  EXPECT_LT(max_abs_diff(out[0], ref_c), 1e-6f);
  EXPECT_LT(max_abs_diff(out[1], ref), 1e-5f);
}

namespace {

// `model`'s predict, where conv -> BN (-> ReLU) chains fold, against its call under a tape, where
// nothing folds; none of `unfused_ops` may run in the folded predict. Deep models add up float32
// rounding of the two orders of computation: compared relative to the logits' scale.
void expect_folded_predict_matches_unfolded(Model& model, const Tensor& x, const std::vector<std::string>& unfused_ops) {
  Tensor folded;
  auto names = ops_run([&] { folded = model.predict_on_batch(x); });
  for (const auto& op : unfused_ops) EXPECT_EQ(names[op], 0u) << op;
  Tensor reference;
  {
    GradientTape tape;
    reference = model(TensorList{x}, CallArgs{.training = false})[0];
  }
  float scale = 0;
  for (float v : reference.to_vector<float>()) scale = std::max(scale, std::abs(v));
  EXPECT_LT(max_abs_diff(folded, reference), 1e-5f * scale) << "logits up to " << scale;
}

}  // namespace

TEST(ConvBnFold, ResNetPredictMatchesTheUnfoldedGraph) {
  // ResNet-20: 19 Conv2D -> BatchNormalization chains, 10 with a ReLU of their own; the rest end
  // in Add -> ReLU. Under a tape nothing folds, which gives the reference.
  set_random_seed(12);
  auto model = applications::ResNet20({.input_shape = {8, 8, 3}, .classifier_activation = "linear"});
  for (const auto& l : model->layers())
    if (l->class_name() == "BatchNormalization") randomize(l, 100, 0.3, 0.5, 1.0);
  const Tensor x = random::normal({4, 8, 8, 3}, 0, 1, uint64_t{13});
  expect_folded_predict_matches_unfolded(*model, x, {"batch_norm_inference"});
  // The 9 blocks end in Conv -> BN -> Add -> ReLU: the residual goes into the convolution
  // (conv2d_add) wherever it is at hand when that convolution runs, so those Adds and ReLUs
  // never run.
  auto names = ops_run([&] { model->predict_on_batch(x); });
  EXPECT_GE(names["conv2d_add"], 7u);
  EXPECT_EQ(names["conv2d_add"] + names["add"], 9u);
  EXPECT_EQ(names["conv2d"] + names["conv2d_add"], 21u);
}

TEST(ConvBnFold, MixedBfloat16ResNetFoldsItsResidualsToo) {
  // Under mixed_bfloat16 the blocks' Conv -> BN -> Add -> ReLU ends fold into bfloat16
  // conv2d_adds as in float32 (the sum rounded once instead of after the conv and after the
  // add); the graph run layer by layer rounds between every layer, so the logits agree to
  // bfloat16 rounding compounded over 20 layers.
  mixed_precision::set_global_policy("mixed_bfloat16");
  set_random_seed(12);
  auto model = applications::ResNet20({.input_shape = {8, 8, 3}, .classifier_activation = "linear"});
  mixed_precision::set_global_policy("float32");
  for (const auto& l : model->layers())
    if (l->class_name() == "BatchNormalization") randomize(l, 100, 0.3, 0.5, 1.0);
  const Tensor x = random::normal({4, 8, 8, 3}, 0, 1, uint64_t{13});
  Tensor folded = model->predict_on_batch(x);  // folds the weights (adds and multiplies)
  auto names = ops_run([&] { folded = model->predict_on_batch(x); });
  EXPECT_GE(names["conv2d_add"], 7u);
  EXPECT_EQ(names["conv2d_add"] + names["add"] + names["add_relu"], 9u);
  EXPECT_EQ(names["batch_norm_inference"], 0u);
  set_conv_bn_folding(false);
  const Tensor plain = model->predict_on_batch(x).astype(DType::float32);
  set_conv_bn_folding(true);
  const float scale = static_cast<float>(ops::max(ops::abs(plain)).item());
  EXPECT_GT(scale, 0.1f);
  EXPECT_LT(max_abs_diff(folded.astype(DType::float32), plain), 0.05f * scale) << "logits up to " << scale;
}

TEST(ConvBnFold, DepthwiseChainsAndReLU6Fold) {
  // MobileNetV2's blocks: DepthwiseConv2D (here with a depth multiplier and a bias, which Keras's
  // MobileNetV2 has not) and Conv2D, each -> BatchNormalization -> ReLU(max_value=6).
  Tensor x = random::normal({3, 9, 7, 4}, 0, 2, uint64_t{30});
  for (bool depthwise : {true, false})
    for (bool use_bias : {false, true}) {
      auto in = L::Input({9, 7, 4});
      LayerPtr conv = depthwise ? LayerPtr(L::DepthwiseConv2D({.kernel_size = 3, .strides = 2, .depth_multiplier = 2,
                                                               .use_bias = use_bias, .bias_initializer = "glorot_uniform"}))
                                : LayerPtr(L::Conv2D({.filters = 8, .kernel_size = 1, .use_bias = use_bias,
                                                      .bias_initializer = "glorot_uniform"}));
      L::BatchNormalization bn({.epsilon = 1e-3});
      L::ReLU relu6({.max_value = 6.0});
      auto model = std::make_shared<Model>(in, relu6(bn((*conv)(in))));
      randomize(bn, 31, 2, 0.1, 1.5);  // wide enough that some outputs pass 6
      Tensor folded;
      auto names = ops_run([&] { folded = model->predict_on_batch(x); });
      EXPECT_EQ(names.count("batch_norm_inference"), 0u) << "not folded: depthwise " << depthwise << " bias " << use_bias;
      EXPECT_EQ(names.count("relu6") + names.count("relu"), 0u) << "ReLU6 not fused";
      Tensor ref = (*relu6)((*bn)((*conv)(TensorList{x}), CallArgs{.training = false}))[0];
      EXPECT_LT(max_abs_diff(folded, ref), 2e-5f) << "depthwise " << depthwise << " bias " << use_bias;
      EXPECT_EQ(element_as_double(ops::max(ref), 0), 6.0) << "the test does not reach the clip";
    }
}

TEST(ConvBnFold, ReLUWithOtherOptionsStaysALayer) {
  auto in = L::Input({6, 6, 3});
  L::BatchNormalization bn;
  L::ReLU relu({.max_value = 4.0});
  auto model = std::make_shared<Model>(in, relu(bn(L::DepthwiseConv2D({.kernel_size = 3})(in))));
  randomize(bn, 5, 2, 0.1, 1.5);
  Tensor x = random::normal({2, 6, 6, 3}, 0, 2, uint64_t{32});
  Tensor folded;
  auto names = ops_run([&] { folded = model->predict_on_batch(x); });
  EXPECT_EQ(names.count("batch_norm_inference"), 0u);  // the convolution and the normalization fold
  EXPECT_EQ(element_as_double(ops::max(folded), 0), 4.0);  // and the ReLU still clips at 4
}

TEST(ConvBnFold, MobileNetV2PredictMatchesTheUnfoldedGraph) {
  // 52 convolution -> BatchNormalization chains, 35 of them with a ReLU6; the stride-2 depthwise
  // layers read a ZeroPadding2D.
  set_random_seed(14);
  auto model = applications::MobileNetV2({.input_shape = {32, 32, 3}, .alpha = 0.35, .classifier_activation = "linear"});
  for (const auto& l : model->layers())
    if (l->class_name() == "BatchNormalization") randomize(l, 200, 0.3, 0.5, 1.0);
  expect_folded_predict_matches_unfolded(*model, random::normal({2, 32, 32, 3}, 0, 1, uint64_t{15}),
                                         {"batch_norm_inference", "relu6"});
}

namespace {

// in -> conv1 -> bn1 -> relu -> conv2 -> bn2 -> relu -> average -> dense, with the four backbone
// layers frozen except those named in `trainable`. Same seed, same weights every time.
std::shared_ptr<Model> backbone_model(const std::set<std::string>& trainable) {
  set_random_seed(21);
  auto in = L::Input({8, 8, 3});
  auto x = L::ReLU()(L::BatchNormalization({.name = "bn1"})(L::Conv2D({.filters = 6, .kernel_size = 3, .name = "conv1"})(in)));
  x = L::ReLU()(L::BatchNormalization({.name = "bn2"})(L::Conv2D({.filters = 5, .kernel_size = 3, .name = "conv2"})(x)));
  auto out = L::Dense({.units = 3})(L::GlobalAveragePooling2D()(x));
  auto model = std::make_shared<Model>(in, out);
  randomize(model->get_layer("bn1"), 50, 0.5, 0.3);
  randomize(model->get_layer("bn2"), 60, 0.5, 0.3);
  for (const char* name : {"conv1", "bn1", "conv2", "bn2"}) model->get_layer(name)->set_trainable(trainable.count(name) > 0);
  model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
  return model;
}

// Three training steps; the ops they ran and the weights after them.
std::pair<std::map<std::string, uint64_t>, TensorList> train(const std::shared_ptr<Model>& model) {
  Tensor x = random::normal({4, 8, 8, 3}, 0, 1, uint64_t{60});
  Tensor y = random::normal({4, 3}, 0, 1, uint64_t{61});
  auto names = ops_run([&] {
    for (int i = 0; i < 3; ++i) model->train_on_batch(x, y);
  });
  return {names, model->get_weights()};
}

}  // namespace

TEST(ConvBnFold, FrozenBackboneFoldsWhileTheHeadTrains) {
  // Exact convolution kernels only: the CPU's kernel chooser may pick Winograd (1e-4 relative)
  // for the folded convolution and not the plain one, and Adam's steps would carry that
  // difference past this test's float32 tolerance.
  set_op_determinism(true);
  struct Restore {
    ~Restore() { set_op_determinism(false); }
  } restore;
  for (const std::set<std::string>& trainable : {std::set<std::string>{}, {"conv2"}, {"conv1"}, {"bn1"}}) {
    std::string what = trainable.empty() ? "all frozen" : *trainable.begin() + " trainable";
    auto [folded_ops, folded] = train(backbone_model(trainable));
    set_conv_bn_folding(false);
    auto [plain_ops, plain] = train(backbone_model(trainable));
    set_conv_bn_folding(true);
    ASSERT_EQ(folded.size(), plain.size());
    for (size_t i = 0; i < folded.size(); ++i) EXPECT_LT(max_abs_diff(folded[i], plain[i]), 1e-5f) << what << " weight " << i;
    // Without folding every frozen BatchNormalization runs, 3 steps x 2 layers (bn1 trainable:
    // it normalizes with batch statistics instead).
    EXPECT_EQ(plain_ops["batch_norm_inference"], trainable.count("bn1") ? 3u : 6u) << what;
    // A chain folds when it and everything before it are frozen: conv1 -> bn1 unless conv1 or bn1
    // trains, conv2 -> bn2 only when nothing trains before or in it.
    const uint64_t expected = trainable.empty() ? 0u : trainable.count("conv2") ? 3u : trainable.count("bn1") ? 3u : 6u;
    EXPECT_EQ(folded_ops["batch_norm_inference"], expected) << what;
  }
}

TEST(ConvBnFold, TrainingFusesBatchNormalizationAndReLU) {
  // A BatchNormalization read only by a ReLU / ReLU6 normalizes and activates in one op
  // (batch_norm_relu_train) in training; the weights after three Adam steps are those of the
  // layers run one by one (exact convolution kernels, as above).
  set_op_determinism(true);
  struct Restore {
    ~Restore() { set_op_determinism(false); }
  } restore;
  auto build = [] {
    set_random_seed(31);
    auto in = L::Input({8, 8, 3});
    auto x = L::ReLU()(L::BatchNormalization()(L::Conv2D({.filters = 6, .kernel_size = 3})(in)));
    x = L::Activation({.activation = "relu6"})(L::BatchNormalization()(L::Conv2D({.filters = 5, .kernel_size = 3})(x)));
    auto model = std::make_shared<Model>(in, L::Dense({.units = 3})(L::GlobalAveragePooling2D()(x)));
    model->compile({.optimizer = optimizers::Adam({.learning_rate = 0.01}), .loss = "mse"});
    return model;
  };
  auto [fused_ops, fused] = train(build());
  set_conv_bn_folding(false);
  auto [plain_ops, plain] = train(build());
  set_conv_bn_folding(true);
  EXPECT_EQ(fused_ops["batch_norm_relu_train"], 6u);
  EXPECT_EQ(fused_ops["batch_norm_relu_train_grad"], 6u);
  EXPECT_EQ(fused_ops["batch_norm_train"] + fused_ops["relu"] + fused_ops["relu6"], 0u);
  EXPECT_EQ(plain_ops["batch_norm_train"], 6u);
  EXPECT_EQ(plain_ops["batch_norm_relu_train"], 0u);
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_LT(max_abs_diff(fused[i], plain[i]), 1e-5f) << "weight " << i;
}

TEST(ConvBnFold, ResidualFoldKeepsEveryLayersDtypeAndSharedNormalizationsStayPlain) {
  // A ReLU computing in bfloat16 after the block's float32 Add: the conv -> BN -> Add part folds
  // into a conv2d_add and the ReLU runs as its own layer, casting as it would unfolded.
  auto in = L::Input({6, 6, 4});
  L::BatchNormalization bn;
  auto y = L::ReLU({.dtype = "mixed_bfloat16"})(
      L::Add()({bn(L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"})(in)), in}));
  Model block(in, y);
  randomize(bn, 70);
  Tensor x = random::normal({2, 6, 6, 4}, 0, 1, uint64_t{71});
  Tensor out;
  auto names = ops_run([&] { out = block.predict_on_batch(x); });
  EXPECT_EQ(out.dtype(), DType::bfloat16);
  EXPECT_EQ(names["conv2d_add"], 1u);
  EXPECT_EQ(names["relu"], 1u);
  EXPECT_EQ(names["batch_norm_inference"], 0u);
  set_conv_bn_folding(false);
  const Tensor plain = block.predict_on_batch(x);
  set_conv_bn_folding(true);
  // Both round one float32 result to bfloat16; float32 rounding may flip that by one step.
  const Tensor p = plain.astype(DType::float32);
  const float step = static_cast<float>(ops::max(ops::abs(p)).item()) / 128;
  EXPECT_LE(max_abs_diff(out.astype(DType::float32), p), step);
  // A BatchNormalization called at two nodes, one read by a ReLU, trains unfused at both (its
  // call options would change from node to node).
  L::BatchNormalization shared;
  auto a = L::ReLU()(shared(L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"})(in)));
  auto b = shared(L::Conv2D({.filters = 4, .kernel_size = 1})(in));
  Model two(in, L::Add()({a, b}));
  names = ops_run([&] { two(TensorList{x}, CallArgs{.training = true}); });
  EXPECT_EQ(names["batch_norm_relu_train"], 0u);
  EXPECT_EQ(names["batch_norm_train"], 2u);
}

TEST(ConvBnFold, SwitchedOffRunsEveryLayer) {
  Chain c = make_chain(true, true, true);
  Tensor x = random::normal({2, 9, 7, 4}, 0, 1, uint64_t{9});
  set_conv_bn_folding(false);
  EXPECT_FALSE(conv_bn_folding());
  auto names = ops_run([&] { c.model->predict_on_batch(x); });
  set_conv_bn_folding(true);
  EXPECT_EQ(names["batch_norm_inference"], 1u);
  EXPECT_EQ(names["relu"], 1u);
}

TEST(ConvBnFold, MixedBfloat16ChainsFoldInBfloat16AndMixedDtypeChainsStayLayers) {
  // Under mixed_bfloat16 the fold computes as the Conv2D does: bfloat16 input and folded weights
  // (rounded once from the float32 fold), bfloat16 output; the layers one by one round between
  // them, so the two agree to a few bfloat16 steps.
  Tensor x = random::normal({3, 9, 7, 4}, 0, 1, uint64_t{81});
  auto in = L::Input({9, 7, 4});
  L::Conv2D conv({.filters = 6, .kernel_size = 3, .padding = "same", .dtype = "mixed_bfloat16"});
  L::BatchNormalization bn({.dtype = "mixed_bfloat16"});
  L::ReLU relu({.dtype = "mixed_bfloat16"});
  Model model(in, relu(bn(conv(in))));
  randomize(bn, 82, 1, 0.5, 1.5);
  Tensor folded;
  auto names = ops_run([&] { folded = model.predict_on_batch(x); });
  EXPECT_EQ(names["batch_norm_inference"], 0u) << "not folded";
  EXPECT_EQ(names["relu"], 0u) << "ReLU not fused";
  ASSERT_EQ(folded.dtype(), DType::bfloat16);
  set_conv_bn_folding(false);
  Tensor plain = model.predict_on_batch(x);
  set_conv_bn_folding(true);
  ASSERT_EQ(plain.dtype(), DType::bfloat16);
  const Tensor f = folded.astype(DType::float32), p = plain.astype(DType::float32);
  const float scale = static_cast<float>(ops::max(ops::abs(p)).item());
  EXPECT_GT(scale, 0.5f);
  EXPECT_LT(max_abs_diff(f, p), 4 * scale / 128) << "more than a few bfloat16 steps apart";
  // The kernel's float32 variable is what the fold reads: a second predict reuses the cache.
  names = ops_run([&] { model.predict_on_batch(x); });
  EXPECT_EQ(names["multiply"], 0u) << "refolded without a weight change";

  // A plain bfloat16 BatchNormalization (two-byte variables) after a mixed_bfloat16 convolution:
  // both compute in bfloat16, so the chain folds, in float32 from the stored values.
  L::Conv2D conv_b({.filters = 6, .kernel_size = 3, .dtype = "mixed_bfloat16"});
  L::BatchNormalization bn_b({.dtype = "bfloat16"});
  Model plain_bf16(in, bn_b(conv_b(in)));
  randomize(bn_b, 84, 1, 0.5, 1.5);
  names = ops_run([&] { folded = plain_bf16.predict_on_batch(x); });
  EXPECT_EQ(names["batch_norm_inference"], 0u) << "not folded";
  EXPECT_EQ(folded.dtype(), DType::bfloat16);
  set_conv_bn_folding(false);
  plain = plain_bf16.predict_on_batch(x).astype(DType::float32);
  set_conv_bn_folding(true);
  EXPECT_LT(max_abs_diff(folded.astype(DType::float32), plain),
            4 * static_cast<float>(ops::max(ops::abs(plain)).item()) / 128);

  // A float32 BatchNormalization after a mixed_bfloat16 convolution keeps its layers.
  L::Conv2D conv16({.filters = 6, .kernel_size = 3, .dtype = "mixed_bfloat16"});
  L::BatchNormalization bn32;
  Model mixed(in, bn32(conv16(in)));
  randomize(bn32, 83);
  names = ops_run([&] { folded = mixed.predict_on_batch(x); });
  EXPECT_EQ(names["batch_norm_inference"], 1u);
  EXPECT_EQ(folded.dtype(), DType::float32);
}
