// ONNX export of ConvLSTM1D / 2D / 3D (keras/export/conv_lstm_op.h): a Scan whose body is the
// cell's step in ONNX Conv ops. Every option the layers take at inference (padding, strides,
// dilation, bias, activations, data_format, return_sequences, return_state, go_backwards,
// initial_state, masks, zero_output_for_mask) must predict in ONNX Runtime what model.predict
// gives, at batch 1 and 7 from one dynamic-batch file, and pass onnx.checker.
#include <gtest/gtest.h>

#include <functional>

#include "keras/keras.h"
#include "layers/conv_lstm_cell.h"
#include "support/expect_error.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace L = keras::layers;
using keras::KerasTensor;
using keras::Shape;

namespace {

// Every float weight random: the input, recurrent and bias blocks away from their initialisers,
// so that a gate out of order or a kernel transposed wrongly shows.
void randomize(k::Model& model, uint64_t seed = 21) { test_support::random_weights(model, seed, 0.4); }

struct ConvLstmCase {
  std::string name;
  Shape input;  // without the batch axis
  std::function<std::vector<KerasTensor>(const KerasTensor&)> body;
};

void expect_export(const std::string& tag, const std::vector<ConvLstmCase>& cases, const k::ExportOptions& options = {}) {
  test_support::OnnxCases checks(tag);
  std::vector<std::shared_ptr<k::Model>> keep;
  for (const auto& c : cases) {
    auto x = L::Input(c.input, {.name = "frames"});
    keep.push_back(std::make_shared<k::Model>(std::vector<KerasTensor>{x}, c.body(x), c.name));
    randomize(*keep.back());
    checks.add(c.name, *keep.back(), options);
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

std::vector<KerasTensor> call(k::LayerPtr layer, const KerasTensor& x) { return (*layer)(std::vector<KerasTensor>{x}); }

// Steps of `frames` zeroed as a Masking layer reads them: row r of a batch follows pattern
// (first + r) % 4: 0 trailing two steps padded, 1 leading two, 2 holes at steps 1 and 3, 3 none.
std::vector<k::TensorList> padded_frames(int64_t steps, int64_t features, uint64_t seed) {
  std::vector<k::TensorList> out;
  for (int64_t batch : {1, 7}) {
    std::vector<float> x = k::random::normal({batch, steps, features}, 0.0, 1.0, seed++).to_vector<float>();
    for (int64_t r = 0; r < batch; ++r) {
      const int pattern = (batch == 1 ? 2 : static_cast<int>(r)) % 4;
      for (int64_t t = 0; t < steps; ++t) {
        const bool pad = pattern == 0 ? t >= steps - 2 : pattern == 1 ? t < 2 : pattern == 2 ? (t == 1 || t == 3) : false;
        if (pad)
          for (int64_t f = 0; f < features; ++f) x[static_cast<size_t>((r * steps + t) * features + f)] = 0.f;
      }
    }
    out.push_back({k::Tensor::from_vector(x, {batch, steps, features})});
  }
  return out;
}

}  // namespace

TEST(OnnxConvLstm, ConvLstm2DOptions) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_export(
      "conv_lstm2d",
      {{"valid_last", {4, 6, 6, 2}, [](const KerasTensor& x) { return call(L::ConvLSTM2D({.filters = 3, .kernel_size = 3}), x); }},
       // Odd extents with strides 2: "same" pads its extra row at the end, as TF.
       {"same_strides_no_bias_states", {4, 7, 6, 2},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM2D({.filters = 3, .kernel_size = {3, 2}, .strides = 2, .padding = "same", .use_bias = false,
                                     .return_sequences = true, .return_state = true}),
                      x);
        }},
       {"dilation_backwards_activations", {5, 7, 7, 2},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM2D({.filters = 2, .kernel_size = 2, .padding = "same", .dilation_rate = 2, .activation = "relu",
                                     .recurrent_activation = "hard_sigmoid", .return_sequences = true, .go_backwards = true}),
                      x);
        }},
       {"backwards_last_and_states", {3, 5, 5, 3},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .strides = {1, 2}, .return_state = true, .go_backwards = true}), x);
        }},
       {"channels_first", {4, 2, 6, 5},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .data_format = "channels_first",
                                     .return_sequences = true, .return_state = true}),
                      x);
        }},
       // Channels-first values flow on into convolutions, pooling and dense layers.
       {"stacked_into_conv_head", {4, 6, 6, 2}, [](const KerasTensor& x) {
          auto y = L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .return_sequences = true})(x);
          y = L::ConvLSTM2D({.filters = 4, .kernel_size = 3})(y);
          y = L::Conv2D({.filters = 2, .kernel_size = 1, .activation = "relu"})(y);
          return std::vector{L::Dense({.units = 3})(L::GlobalAveragePooling2D()(y))};
        }}});
}

TEST(OnnxConvLstm, ConvLstm1DAnd3D) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_export(
      "conv_lstm1d_3d",
      {{"conv_lstm1d_strides_states", {5, 9, 3},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM1D({.filters = 4, .kernel_size = 3, .strides = 2, .return_state = true, .go_backwards = true}), x);
        }},
       {"conv_lstm1d_same_sequences", {4, 8, 2},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM1D({.filters = 3, .kernel_size = 4, .padding = "same", .dilation_rate = 2, .return_sequences = true}), x);
        }},
       {"conv_lstm3d_same", {3, 4, 5, 4, 2},
        [](const KerasTensor& x) {
          return call(L::ConvLSTM3D({.filters = 2, .kernel_size = 2, .padding = "same", .return_sequences = true, .return_state = true}), x);
        }},
       {"conv_lstm3d_valid_strides_backwards", {3, 5, 5, 4, 2}, [](const KerasTensor& x) {
          return call(L::ConvLSTM3D({.filters = 2, .kernel_size = {3, 2, 2}, .strides = {2, 1, 2}, .go_backwards = true}), x);
        }}});
}

// Bidirectional over ConvLSTM: both directions' Scans, merged in Keras's layout.
TEST(OnnxConvLstm, Bidirectional) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_export(
      "conv_lstm_bidirectional",
      {{"concat_sequences", {4, 5, 5, 2},
        [](const KerasTensor& x) {
          return call(L::Bidirectional({.layer = L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .padding = "same", .return_sequences = true})}), x);
        }},
       {"sum_last", {4, 6, 6, 2},
        [](const KerasTensor& x) {
          return call(L::Bidirectional({.layer = L::ConvLSTM2D({.filters = 3, .kernel_size = 3}), .merge_mode = "sum"}), x);
        }},
       {"no_merge_states", {4, 8, 2}, [](const KerasTensor& x) {
          return call(L::Bidirectional({.layer = L::ConvLSTM1D({.filters = 2, .kernel_size = 3, .return_state = true}), .merge_mode = ""}), x);
        }}});
}

// Spatial extents unknown until run time (Input (T, None, None, C)): the zero states take their
// shape from the first step; one file serves frames of any size.
TEST(OnnxConvLstm, UnknownSpatialExtents) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({4, -1, -1, 2}, {.name = "frames"});
  std::vector<KerasTensor> outs =
      call(L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .return_sequences = true, .return_state = true}), x);
  outs.push_back(L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .strides = 2, .go_backwards = true})(x));
  k::Model model(std::vector<KerasTensor>{x}, outs, "conv_lstm_any_size");
  randomize(model);
  std::vector<k::TensorList> batches;
  for (const Shape& s : {Shape{1, 4, 5, 6, 2}, Shape{7, 4, 5, 6, 2}, Shape{7, 4, 8, 3, 2}})
    batches.push_back({k::random::normal(s, 0.0, 1.0, 60 + static_cast<uint64_t>(s[2]))});
  test_support::OnnxCases checks("conv_lstm_any_size");
  checks.add("conv_lstm_any_size", model, {}, batches);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// A generic RNN over a ConvLSTMCell exports as the layer does.
TEST(OnnxConvLstm, RnnOverAConvLstmCell) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_export("conv_lstm_cell", {{"rnn_conv_lstm_cell", {4, 5, 5, 2}, [](const KerasTensor& x) {
                                      auto cell = std::make_shared<L::ConvLSTMCellImpl>(L::ConvLSTMCellOptions{
                                          .filters = 2, .kernel_size = {3, 3}, .strides = {1, 1}, .padding = "same", .dilation_rate = {1, 1}});
                                      return call(L::RNN({.cell = cell, .return_sequences = true}), x);
                                    }}});
}

// initial_state by keyword: h and c in Keras's layout (channels-last), transposed once inside.
TEST(OnnxConvLstm, InitialStates) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({4, 6, 6, 2}, {.name = "frames"});
  auto h = L::Input({6, 6, 3}, {.name = "h"}), c = L::Input({6, 6, 3}, {.name = "c"});
  k::CallArgs args;
  args.keywords = {"initial_state", "initial_state"};
  auto outs = (*L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .return_sequences = true, .return_state = true}).ptr())(
      std::vector<KerasTensor>{x, h, c}, args);
  k::Model model(std::vector<KerasTensor>{x, h, c}, outs, "conv_lstm_initial_state");
  randomize(model);
  test_support::OnnxCases checks("conv_lstm_initial_state");
  checks.add("conv_lstm_initial_state", model);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Masks (Masking over flattened frames, reshaped per step): masked steps keep the states and
// output the previous output (zeros with zero_output_for_mask), holes in the middle included.
TEST(OnnxConvLstm, MaskedSequences) {
  SKIP_WITHOUT_ONNX_WRITER();
  constexpr int64_t kSteps = 6, kFeatures = 5 * 4 * 2;
  auto flat = L::Input({kSteps, kFeatures}, {.name = "flat_frames"});
  auto frames = L::TimeDistributed({.layer = L::Reshape({.target_shape = {5, 4, 2}})})(L::Masking()(flat));
  std::vector<KerasTensor> outs = call(
      L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .return_sequences = true, .return_state = true}), frames);
  outs.push_back(L::ConvLSTM2D({.filters = 2, .kernel_size = 2, .return_sequences = true, .go_backwards = true,
                                .zero_output_for_mask = true})(frames));
  outs.push_back(L::ConvLSTM2D({.filters = 2, .kernel_size = 3, .strides = 2, .data_format = "channels_first"})(
      L::TimeDistributed({.layer = L::Permute({.dims = {3, 1, 2}})})(frames)));
  k::Model model(std::vector<KerasTensor>{flat}, outs, "masked_conv_lstm");
  randomize(model);
  test_support::OnnxCases checks("conv_lstm_masks");
  checks.add("masked_conv_lstm", model, {}, padded_frames(kSteps, kFeatures, 40));
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// The Scan body's Split and the activations under every opset (Split's sizes are an input from
// opset 13, and opset 18 adds num_outputs), and with a fixed batch.
TEST(OnnxConvLstm, OpsetsAndStaticBatch) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({4, 6, 6, 2}, {.name = "frames"});
  auto y = L::ConvLSTM2D({.filters = 3, .kernel_size = 3, .padding = "same", .return_sequences = true, .go_backwards = true})(x);
  k::Model model(std::vector<KerasTensor>{x}, std::vector<KerasTensor>{y}, "conv_lstm_opsets");
  randomize(model);
  test_support::OnnxCases checks("conv_lstm_opsets");
  for (int opset : {17, 18, 21}) checks.add("opset" + std::to_string(opset), model, {.opset = opset});
  checks.add("static7", model, {.dynamic_batch = false, .batch_size = 7}, {test_support::model_inputs(model, 7, 3)});
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}
