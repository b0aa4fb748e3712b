// ONNX export (keras/export): every exportable layer as a one-layer model, Sequential and
// functional models (nested, shared layers, several inputs and outputs), checked by onnx.checker
// and ONNX Runtime against model.predict at batch 1 and 7 from one dynamic-batch file; the graph's
// shape (BatchNormalization folded, transposes only at layout changes, weights once); errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "keras/export/model_graph.h"
#include "keras/keras.h"
#include "support/expect_error.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace L = keras::layers;
using keras::KerasTensor;
using keras::Shape;

namespace {

// Non-trivial weights: BatchNormalization / Normalization statistics away from 0 and 1, and
// every other float weight random, so that a mapping that drops a weight shows.
// `statistics_only` leaves the other weights at their initialisers (deep models, whose
// activations would explode with random N(0, 0.5) kernels).
void randomize(k::Model& model, uint64_t seed = 5, bool statistics_only = false) {
  auto ends_with = [](const std::string& p, const std::string& s) {
    return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0;
  };
  for (auto& v : model.weights()) {
    if (!k::is_floating(v.dtype())) continue;
    const std::string& p = v.path();
    if (ends_with(p, "variance")) v.assign(k::random::uniform(v.shape(), 0.5, 1.5, seed++));
    else if (!statistics_only || ends_with(p, "moving_mean") || ends_with(p, "gamma") || ends_with(p, "beta"))
      v.assign(k::random::normal(v.shape(), 0.0, statistics_only ? 0.1 : 0.5, seed++));
  }
}

struct LayerCase {
  std::string name;
  std::function<k::LayerPtr()> make;
  std::vector<Shape> inputs;  // without the batch axis
  std::string dtype = "float32";
};

// One model per case: Input(s) -> layer -> output.
std::shared_ptr<k::Model> one_layer_model(const LayerCase& c) {
  std::vector<KerasTensor> ins;
  for (size_t i = 0; i < c.inputs.size(); ++i) ins.push_back(L::Input(c.inputs[i], {.dtype = c.dtype, .name = "x" + std::to_string(i)}));
  k::LayerPtr layer = c.make();
  std::vector<KerasTensor> outs = (*layer)(ins);
  auto model = std::make_shared<k::Model>(ins, outs, c.name);
  randomize(*model);
  return model;
}

void expect_layers_export(const std::string& tag, const std::vector<LayerCase>& cases) {
  test_support::OnnxCases checks(tag);
  std::vector<std::shared_ptr<k::Model>> keep;
  for (const auto& c : cases) {
    keep.push_back(one_layer_model(c));
    checks.add(c.name, *keep.back());
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

k::LayerPtr P(k::LayerPtr p) { return p; }

// A user's own layer (x cubed): no emitter knows its class.
class Cube : public k::Layer {
 public:
  using k::Layer::Layer;
  std::string class_name() const override { return "Cube"; }
  k::TensorList call(const k::TensorList& xs, const k::CallContext&) override {
    return {k::ops::multiply(k::ops::multiply(xs[0], xs[0]), xs[0])};
  }
};

}  // namespace

TEST(OnnxExport, CoreAndActivationLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  std::vector<LayerCase> cases{
      {"dense_relu", [] { return P(L::Dense({.units = 5, .activation = "relu"})); }, {{6}}},
      {"dense_3d_softmax", [] { return P(L::Dense({.units = 4, .activation = "softmax"})); }, {{3, 6}}},
      {"dense_no_bias", [] { return P(L::Dense({.units = 3, .use_bias = false})); }, {{6}}}};
  for (const std::string act : {"linear", "relu", "relu6", "leaky_relu", "elu", "selu", "gelu", "silu", "swish",
                                "sigmoid", "hard_sigmoid", "hard_silu", "hard_swish", "tanh", "softmax",
                                "log_softmax", "softplus", "softsign", "exponential"})
    cases.push_back({"activation_" + act, [act] { return P(L::Activation({.activation = act})); }, {{4, 5}}});
  cases.push_back({"relu_plain", [] { return P(L::ReLU()); }, {{7}}});
  cases.push_back({"relu_max6", [] { return P(L::ReLU({.max_value = 6.0})); }, {{7}}});
  cases.push_back({"relu_full", [] { return P(L::ReLU({.max_value = 1.0, .negative_slope = 0.1, .threshold = 0.2})); }, {{7}}});
  cases.push_back({"leaky_relu", [] { return P(L::LeakyReLU({.negative_slope = 0.1})); }, {{7}}});
  cases.push_back({"elu_layer", [] { return P(L::ELU({.alpha = 0.5})); }, {{7}}});
  cases.push_back({"softmax_axis1", [] { return P(L::Softmax({.axis = 1})); }, {{3, 4}}});
  cases.push_back({"dropout", [] { return P(L::Dropout({.rate = 0.5})); }, {{7}}});
  cases.push_back({"random_flip", [] { return P(L::RandomFlip()); }, {{4, 4, 3}}});
  cases.push_back({"rescaling", [] { return P(L::Rescaling({.scale = 1.0 / 255, .offset = -0.5})); }, {{4, 4, 3}}});
  cases.push_back({"rescaling_channels", [] { return P(L::Rescaling({.channel_scales = {0.5, 2.0, 3.0}})); }, {{4, 4, 3}}});
  cases.push_back({"normalization", [] { return P(L::Normalization()); }, {{4, 3}}});
  cases.push_back({"normalization_invert", [] { return P(L::Normalization({.invert = true})); }, {{4, 3}}});
  cases.push_back({"embedding", [] { return P(L::Embedding({.input_dim = 5, .output_dim = 3})); }, {{6}}, "int32"});
  expect_layers_export("core", cases);
}

TEST(OnnxExport, ConvolutionLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  using L::PairArg;
  expect_layers_export(
      "conv",
      {{"conv2d_same_s2", [] { return P(L::Conv2D({.filters = 4, .kernel_size = 3, .strides = 2, .padding = "same", .activation = "relu"})); }, {{9, 8, 3}}},
       {"conv2d_valid_dilated", [] { return P(L::Conv2D({.filters = 3, .kernel_size = {3, 2}, .padding = "valid", .dilation_rate = 2})); }, {{9, 8, 2}}},
       {"conv2d_groups", [] { return P(L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same", .groups = 2})); }, {{6, 6, 4}}},
       {"conv2d_channels_first", [] { return P(L::Conv2D({.filters = 4, .kernel_size = 3, .data_format = "channels_first"})); }, {{2, 7, 7}}},
       {"conv1d_same", [] { return P(L::Conv1D({.filters = 3, .kernel_size = 4, .strides = 2, .padding = "same"})); }, {{9, 2}}},
       {"conv1d_causal", [] { return P(L::Conv1D({.filters = 3, .kernel_size = 3, .padding = "causal", .dilation_rate = 2})); }, {{9, 2}}},
       {"depthwise", [] { return P(L::DepthwiseConv2D({.kernel_size = 3, .strides = 2, .padding = "same", .depth_multiplier = 2})); }, {{7, 7, 3}}},
       {"separable", [] { return P(L::SeparableConv2D({.filters = 5, .kernel_size = 3, .padding = "same", .depth_multiplier = 2, .activation = "relu"})); }, {{6, 6, 3}}},
       {"conv_transpose_valid", [] { return P(L::Conv2DTranspose({.filters = 3, .kernel_size = 3, .strides = 2})); }, {{4, 5, 2}}},
       {"conv_transpose_same", [] { return P(L::Conv2DTranspose({.filters = 3, .kernel_size = 4, .strides = 2, .padding = "same"})); }, {{4, 5, 2}}},
       {"conv_transpose_output_padding", [] { return P(L::Conv2DTranspose({.filters = 2, .kernel_size = 3, .strides = 2, .output_padding = PairArg(1)})); }, {{4, 4, 2}}},
       {"conv_transpose_small_kernel", [] { return P(L::Conv2DTranspose({.filters = 2, .kernel_size = 1, .strides = 2})); }, {{3, 3, 2}}}});
}

TEST(OnnxExport, PoolingAndNormalizationLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  using L::PairArg;
  expect_layers_export(
      "pool_norm",
      {{"max_pool_same", [] { return P(L::MaxPooling2D({.pool_size = 3, .strides = PairArg(2), .padding = "same"})); }, {{7, 6, 3}}},
       {"avg_pool_same", [] { return P(L::AveragePooling2D({.pool_size = {2, 3}, .strides = PairArg(1, 2), .padding = "same"})); }, {{5, 7, 2}}},
       {"avg_pool_valid", [] { return P(L::AveragePooling2D()); }, {{6, 6, 2}}},
       {"max_pool1d", [] { return P(L::MaxPooling1D({.pool_size = 3, .padding = "same"})); }, {{8, 2}}},
       {"avg_pool1d", [] { return P(L::AveragePooling1D()); }, {{8, 2}}},
       {"gap2d", [] { return P(L::GlobalAveragePooling2D()); }, {{5, 4, 3}}},
       {"gmp2d_keepdims", [] { return P(L::GlobalMaxPooling2D({.keepdims = true})); }, {{5, 4, 3}}},
       {"gap1d", [] { return P(L::GlobalAveragePooling1D()); }, {{5, 3}}},
       {"gmp1d", [] { return P(L::GlobalMaxPooling1D()); }, {{5, 3}}},
       {"batch_norm_4d", [] { return P(L::BatchNormalization()); }, {{3, 3, 4}}},
       {"batch_norm_2d", [] { return P(L::BatchNormalization({.center = false})); }, {{4}}},
       {"layer_norm", [] { return P(L::LayerNormalization()); }, {{3, 6}}},
       {"layer_norm_no_center", [] { return P(L::LayerNormalization({.center = false})); }, {{6}}},
       {"unit_norm", [] { return P(L::UnitNormalization()); }, {{3, 6}}},
       {"group_norm", [] { return P(L::GroupNormalization({.groups = 2})); }, {{3, 3, 4}}}});
}

TEST(OnnxExport, ShapeAndMergeLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  using L::PairArg;
  auto merge = [](std::string name, std::function<k::LayerPtr()> make) {
    return LayerCase{std::move(name), std::move(make), {{4, 3}, {4, 3}}};
  };
  expect_layers_export(
      "shape_merge",
      {{"flatten", [] { return P(L::Flatten()); }, {{3, 2, 4}}},
       {"flatten_channels_first", [] { return P(L::Flatten({.data_format = "channels_first"})); }, {{3, 2, 4}}},
       {"reshape", [] { return P(L::Reshape({.target_shape = {4, -1}})); }, {{3, 2, 4}}},
       {"permute", [] { return P(L::Permute({.dims = {2, 1}})); }, {{3, 5}}},
       {"repeat_vector", [] { return P(L::RepeatVector({.n = 3})); }, {{5}}},
       {"zero_padding2d", [] { return P(L::ZeroPadding2D({.padding = {PairArg(1, 2), PairArg(0, 3)}})); }, {{3, 4, 2}}},
       {"zero_padding1d", [] { return P(L::ZeroPadding1D({.padding = {2, 1}})); }, {{3, 2}}},
       {"cropping2d", [] { return P(L::Cropping2D({.cropping = {PairArg(1, 0), PairArg(2, 1)}})); }, {{5, 6, 2}}},
       {"cropping1d", [] { return P(L::Cropping1D({.cropping = {2, 1}})); }, {{6, 2}}},
       {"upsampling2d_nearest", [] { return P(L::UpSampling2D({.size = {2, 3}})); }, {{3, 4, 2}}},
       {"upsampling2d_bilinear", [] { return P(L::UpSampling2D({.size = 2, .interpolation = "bilinear"})); }, {{3, 4, 2}}},
       {"upsampling1d", [] { return P(L::UpSampling1D({.size = 3})); }, {{4, 2}}},
       {"resizing_bilinear", [] { return P(L::Resizing({.height = 5, .width = 7})); }, {{8, 4, 2}}},
       {"resizing_nearest", [] { return P(L::Resizing({.height = 5, .width = 7, .interpolation = "nearest"})); }, {{8, 4, 2}}},
       {"center_crop", [] { return P(L::CenterCrop({.height = 3, .width = 2})); }, {{6, 5, 2}}},
       merge("add", [] { return P(L::Add()); }),
       merge("subtract", [] { return P(L::Subtract()); }),
       merge("multiply", [] { return P(L::Multiply()); }),
       merge("average", [] { return P(L::Average()); }),
       merge("maximum", [] { return P(L::Maximum()); }),
       merge("minimum", [] { return P(L::Minimum()); }),
       merge("concatenate", [] { return P(L::Concatenate({.axis = 1})); }),
       {"add3", [] { return P(L::Add()); }, {{4}, {4}, {4}}}});
}

TEST(OnnxExport, RecurrentLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_layers_export(
      "recurrent",
      {{"lstm_last", [] { return P(L::LSTM({.units = 4})); }, {{5, 3}}},
       {"lstm_sequences_backwards", [] { return P(L::LSTM({.units = 4, .return_sequences = true, .go_backwards = true})); }, {{5, 3}}},
       {"lstm_states", [] { return P(L::LSTM({.units = 3, .return_sequences = true, .return_state = true})); }, {{5, 2}}},
       {"gru_reset_after", [] { return P(L::GRU({.units = 4, .return_sequences = true})); }, {{5, 3}}},
       {"gru_reset_before", [] { return P(L::GRU({.units = 4, .reset_after = false})); }, {{5, 3}}},
       {"gru_backwards_state", [] { return P(L::GRU({.units = 3, .return_state = true, .go_backwards = true})); }, {{5, 3}}},
       {"simple_rnn", [] { return P(L::SimpleRNN({.units = 4, .return_sequences = true})); }, {{5, 3}}},
       {"simple_rnn_relu", [] { return P(L::SimpleRNN({.units = 4, .activation = "relu"})); }, {{5, 3}}},
       {"bidirectional_concat", [] { return P(L::Bidirectional({.layer = L::LSTM({.units = 3, .return_sequences = true})})); }, {{5, 2}}},
       {"bidirectional_sum_gru", [] { return P(L::Bidirectional({.layer = L::GRU({.units = 3}), .merge_mode = "sum"})); }, {{5, 2}}},
       {"bidirectional_no_merge", [] { return P(L::Bidirectional({.layer = L::GRU({.units = 2, .return_sequences = true}), .merge_mode = ""})); }, {{4, 2}}},
       {"bidirectional_states", [] { return P(L::Bidirectional({.layer = L::LSTM({.units = 2, .return_state = true})})); }, {{4, 2}}}});
}

// The generic RNN over one cell and over a StackedRNNCells: one ONNX op per cell.
TEST(OnnxExport, GenericRnnAndStackedCells) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto stack = [] {
    return std::vector<k::LayerPtr>{P(L::LSTMCell({.units = 4})), P(L::GRUCell({.units = 3, .reset_after = false})),
                                    P(L::SimpleRNNCell({.units = 2, .activation = "relu"}))};
  };
  expect_layers_export(
      "rnn_cells",
      {{"rnn_lstm_cell", [] { return P(L::RNN({.cell = L::LSTMCell({.units = 4}), .return_sequences = true})); }, {{5, 3}}},
       {"rnn_gru_cell_backwards_state", [] { return P(L::RNN({.cell = L::GRUCell({.units = 3}), .return_state = true, .go_backwards = true})); }, {{5, 3}}},
       {"rnn_simple_cell", [] { return P(L::RNN({.cell = L::SimpleRNNCell({.units = 4})})); }, {{5, 3}}},
       {"rnn_stacked_states", [stack] { return P(L::RNN({.cells = stack(), .return_sequences = true, .return_state = true})); }, {{5, 3}}},
       {"rnn_stacked_backwards", [stack] { return P(L::RNN({.cells = stack(), .return_sequences = true, .go_backwards = true})); }, {{5, 3}}},
       {"rnn_stacked_backwards_last", [stack] { return P(L::RNN({.cells = stack(), .go_backwards = true})); }, {{5, 3}}},
       {"bidirectional_stacked", [stack] { return P(L::Bidirectional({.layer = L::RNN({.cells = stack(), .return_sequences = true})})); }, {{5, 3}}}});
}

TEST(OnnxExport, AttentionDotAndTimeDistributed) {
  SKIP_WITHOUT_ONNX_WRITER();
  std::vector<LayerCase> cases{
      {"mha_self", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3})); }, {{5, 6}, {5, 6}}},
      {"mha_cross_value_dim", [] { return P(L::MultiHeadAttention({.num_heads = 3, .key_dim = 2, .value_dim = 4})); }, {{4, 6}, {7, 5}}},
      {"mha_key_no_bias", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .use_bias = false})); }, {{4, 6}, {3, 5}, {3, 2}}},
      {"mha_output_shape", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .output_shape = Shape{3}})); }, {{4, 6}, {4, 6}}},
      {"mha_gate_window", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .sliding_window = 2, .use_gate = true})); }, {{5, 6}, {5, 6}}},
      {"mha_image_axes", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2})); }, {{3, 4, 5}, {3, 4, 5}}},
      {"mha_axis2_batch_like", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .attention_axes = std::vector<int64_t>{2}})); }, {{3, 4, 5}, {3, 6, 5}}},
      {"mha_output_shape_2d", [] { return P(L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .output_shape = Shape{2, 3}})); }, {{4, 6}, {5, 6}}},
      {"gqa_self", [] { return P(L::GroupQueryAttention({.head_dim = 3, .num_query_heads = 4, .num_key_value_heads = 2})); }, {{5, 6}, {5, 6}}},
      {"gqa_cross_key_no_bias", [] { return P(L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 3, .num_key_value_heads = 1, .use_bias = false})); }, {{4, 6}, {3, 6}, {3, 2}}},
      {"attention_dot", [] { return P(L::Attention()); }, {{4, 3}, {5, 3}}},
      {"attention_scaled_key", [] { return P(L::Attention({.use_scale = true})); }, {{4, 3}, {5, 2}, {5, 3}}},
      {"attention_concat", [] { return P(L::Attention({.use_scale = true, .score_mode = "concat"})); }, {{4, 3}, {5, 3}}},
      {"additive_attention", [] { return P(L::AdditiveAttention()); }, {{4, 3}, {5, 3}}},
      {"additive_attention_unscaled_key", [] { return P(L::AdditiveAttention({.use_scale = false})); }, {{4, 3}, {5, 2}, {5, 3}}},
      {"dot_2d", [] { return P(L::Dot({.axes = L::DotAxes(1)})); }, {{4}, {4}}},
      {"dot_3d_22", [] { return P(L::Dot({.axes = L::DotAxes(2)})); }, {{3, 4}, {5, 4}}},
      {"dot_3d_12_normalized", [] { return P(L::Dot({.axes = L::DotAxes(1, 2), .normalize = true})); }, {{3, 4}, {5, 3}}},
      {"time_distributed_dense", [] { return P(L::TimeDistributed({.layer = L::Dense({.units = 3, .activation = "relu"})})); }, {{5, 4}}},
      {"time_distributed_conv", [] { return P(L::TimeDistributed({.layer = L::Conv2D({.filters = 2, .kernel_size = 3})})); }, {{3, 6, 6, 2}}}};
  expect_layers_export("attention", cases);

  // Call options: Attention's causal mask and returned scores.
  auto q = L::Input({4, 3}, {.name = "q"});
  auto v = L::Input({4, 3}, {.name = "v"});
  k::CallArgs args;
  args.options = {{"use_causal_mask", true}, {"return_attention_scores", true}};
  auto outs = (*L::Attention({.use_scale = true}).ptr())(std::vector<KerasTensor>{q, v}, args);
  k::Model causal(std::vector<KerasTensor>{q, v}, outs, "causal");
  randomize(causal);
  // MultiHeadAttention's scores over two attention axes: (B, heads, 3, 4, 3, 4).
  auto image = L::Input({3, 4, 5}, {.name = "image"});
  args.options = {{"return_attention_scores", true}};
  auto scored = (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3}).ptr())(std::vector<KerasTensor>{image, image}, args);
  k::Model image_scores(std::vector<KerasTensor>{image}, scored, "image_scores");
  randomize(image_scores);
  test_support::OnnxCases checks("attention_causal");
  checks.add("causal", causal);
  checks.add("image_scores", image_scores);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// A CNN as users write it: Conv -> BN -> ReLU blocks, pooling, dropout, a dense head.
std::shared_ptr<k::Sequential> small_cnn() {
  auto model = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      L::Input({12, 12, 3}, {.name = "image"}),
      L::Conv2D({.filters = 8, .kernel_size = 3, .padding = "same"}),
      L::BatchNormalization(),
      L::ReLU(),
      L::Conv2D({.filters = 8, .kernel_size = 3, .strides = 2, .padding = "same", .activation = "relu"}),
      L::MaxPooling2D(),
      L::Dropout({.rate = 0.3}),
      L::Flatten(),
      L::Dense({.units = 5, .activation = "softmax", .name = "probs"})}, "cnn");
  randomize(*model);
  return model;
}

TEST(OnnxExport, SequentialCnnFoldsBatchNormAndTransposesOnlyAtTheEnds) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto model = small_cnn();
  const k::onnx::Graph g = k::onnx::build_graph(*model, {});
  int transposes = 0, convs = 0;
  for (const auto& n : g.nodes()) {
    transposes += n.op_type == "Transpose";
    convs += n.op_type == "Conv";
    EXPECT_NE(n.op_type, "Dropout");
  }
  EXPECT_EQ(convs, 2);
  EXPECT_EQ(transposes, 2) << "one into NCHW at the input, one back to NHWC before Flatten";
  // Folded: no per-channel scale and shift nodes of the BatchNormalization.
  for (const auto& n : g.nodes()) EXPECT_EQ(n.name.find("batch_normalization"), std::string::npos) << n.name;
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0].name, "image");
  EXPECT_EQ(g.outputs()[0].name, "probs");

  test_support::OnnxCases checks("cnn");
  checks.add("cnn", *model);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Functional: two named inputs, a nested Sequential and a nested functional model, a layer shared
// by both branches, two outputs.
TEST(OnnxExport, FunctionalNestedSharedMultiIO) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto inner_in = L::Input({6});
  auto inner = std::make_shared<k::Model>(inner_in, L::Dense({.units = 6, .activation = "tanh"})(inner_in), "inner");
  auto seq = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      L::Input({6}), L::Dense({.units = 6, .activation = "relu"}), L::BatchNormalization()}, "block");
  auto a = L::Input({6}, {.name = "left"});
  auto b = L::Input({6}, {.name = "right"});
  auto shared = L::Dense({.units = 6, .name = "shared"});
  auto xa = (*seq)(shared(a));
  auto xb = (*inner)(shared(b));
  auto sum = L::Add({.name = "sum"})(std::vector<KerasTensor>{xa, xb})[0];
  auto head = L::Dense({.units = 2, .activation = "softmax", .name = "head"})(sum);
  auto aux = L::Concatenate({.name = "aux"})(std::vector<KerasTensor>{xa, xb})[0];
  k::Model model(std::vector<KerasTensor>{a, b}, std::vector<KerasTensor>{head, aux}, "two_towers");
  randomize(model);

  const k::onnx::Graph g = k::onnx::build_graph(model, {});
  int shared_weights = 0;
  for (const auto& init : g.initializers()) shared_weights += init.name.rfind("shared/", 0) == 0;
  EXPECT_EQ(shared_weights, 2) << "the shared layer's kernel and bias once";
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.outputs()[0].name, "head");
  EXPECT_EQ(g.outputs()[1].name, "aux");
  EXPECT_EQ(g.inputs()[1].name, "right");

  test_support::OnnxCases checks("functional");
  checks.add("two_towers", model);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Op layers (model arithmetic on KerasTensors), residual blocks in channels-first, and the
// ResNet-20 of the zoo.
TEST(OnnxExport, ResidualBlocksAndOpLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({8, 8, 4}, {.name = "x"});
  auto c1 = L::Conv2D({.filters = 4, .kernel_size = 3, .padding = "same"})(x);
  auto r = L::Add()(std::vector<KerasTensor>{c1, x})[0];
  auto scaled = k::layers::apply_op1("multiply_scalar", {r}, k::Attrs{{"value", 0.5}});
  auto shifted = k::layers::apply_op1("add", {scaled, L::DepthwiseConv2D({.kernel_size = 3, .padding = "same"})(scaled)});
  auto out = L::GlobalAveragePooling2D()(k::layers::apply_op1("relu", {shifted}));
  k::Model model(x, out, "residual");
  randomize(model);

  auto resnet = k::applications::ResNet20({.classifier_activation = "linear"});
  randomize(*resnet, 9, true);
  test_support::OnnxCases checks("residual");
  checks.add("residual", model);
  checks.add("resnet20", *resnet);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

TEST(OnnxExport, StaticBatchOpsetsAndExternalData) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto model = small_cnn();
  test_support::OnnxCases checks("options");
  checks.add("static7", *model, {.dynamic_batch = false, .batch_size = 7}, {test_support::model_inputs(*model, 7, 3)});
  checks.add("opset18", *model, {.opset = 18});
  checks.add("opset21", *model, {.opset = 21});
  checks.add("external", *model, {.external_data_threshold = 0});
  EXPECT_TRUE(std::filesystem::exists(checks.dir() / "external.onnx.data"));
  // The member form writes the same file as the free function.
  model->export_model((checks.dir() / "member.onnx").string(), {.opset = 18});
  EXPECT_EQ(k::read_file_bytes((checks.dir() / "member.onnx").string()),
            k::read_file_bytes((checks.dir() / "opset18.onnx").string()));
  EXPECT_FALSE(std::filesystem::exists(checks.dir() / "opset18.onnx.data"));
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

TEST(OnnxExport, UnsupportedLayerFailsBeforeWritingAnything) {
  auto x = L::Input({5, 8, 3});
  auto y = (*std::make_shared<Cube>(k::LayerOptions{.name = "cube"}))(x);
  auto z = L::Dense({.units = 2})((*std::make_shared<Cube>(k::LayerOptions{.name = "cube2"}))(L::Reshape({.target_shape = {40, 3}})(y)));
  k::Model model(x, z, "unsupported");
  const auto path = std::filesystem::temp_directory_path() / ("keras_onnx_unsupported_" + std::to_string(getpid()) + ".onnx");
  k::testing::expect_error<k::NotImplementedError>([&] { k::export_model(model, path.string()); },
                                                   {"Layer 'cube' (Cube)", "Layer 'cube2' (Cube)"});
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(OnnxExport, UnexpressibleOptionsAndBadArgumentsAreErrors) {
  const auto path = std::filesystem::temp_directory_path() / ("keras_onnx_bad_" + std::to_string(getpid()) + ".onnx");
  auto x = L::Input({6, 6, 3});
  k::Model crop(x, L::Resizing({.height = 3, .width = 4, .crop_to_aspect_ratio = true, .name = "resize"})(x));
  k::testing::expect_error<k::NotImplementedError>([&] { k::export_model(crop, path.string()); }, {"Layer 'resize' (Resizing)"});
  auto cnn = small_cnn();
  k::testing::expect_error<k::ValueError>([&] { k::export_model(*cnn, path.string(), {.format = "tflite"}); }, {"format 'onnx'"});
  k::testing::expect_error<k::ValueError>([&] { k::export_model(*cnn, path.string(), {.opset = 12}); }, {"opset 17 to 21"});
  k::Sequential unbuilt({L::Dense({.units = 2})});
  EXPECT_THROW(k::export_model(unbuilt, path.string()), k::StateError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(OnnxExport, ListsTheExportableClasses) {
  const auto classes = k::onnx_exportable_classes();
  for (const char* c : {"Conv2D", "Dense", "BatchNormalization", "Dropout", "Concatenate", "LayerNormalization"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), c), classes.end()) << c;
  for (const char* c : {"RNN", "GroupedQueryAttention", "Masking", "MultiHeadAttention"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), c), classes.end()) << c;
  for (const char* c : {"ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"})
    EXPECT_NE(std::find(classes.begin(), classes.end(), c), classes.end()) << c;
}
