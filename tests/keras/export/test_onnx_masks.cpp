// ONNX export of masked models (keras/export/masks.h): Embedding(mask_zero) and Masking make the
// mask explicit in the graph, and every layer that reads masks (recurrent layers, stacked cells,
// Bidirectional, MultiHeadAttention, GroupQueryAttention, Attention, GlobalAveragePooling1D, the
// masked merges) must predict in ONNX Runtime what model.predict gives, on inputs padded at the
// end, at the start and with holes in the middle (where a Keras RNN keeps its states).
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "keras/keras.h"
#include "support/expect_error.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace L = keras::layers;
using keras::KerasTensor;
using keras::Shape;

namespace {

constexpr int64_t kSteps = 6, kVocab = 9, kFeatures = 3;

// Which steps row `r` pads: 0 trailing two, 1 leading two, 2 holes at 1 and 3, 3 none, 4 all.
bool padded(int pattern, int64_t t, int64_t steps = kSteps) {
  switch (pattern) {
    case 4: return true;
    case 0: return t >= steps - 2;
    case 1: return t < 2;
    case 2: return t == 1 || t == 3;
    default: return false;
  }
}

// Batch 1 (a row with holes) and batch 7 (patterns 0-3, then 0-2, or 4 in the last row with
// `empty_row`) of padded token ids or float steps, `steps` long.
std::vector<k::TensorList> padded_batches(bool tokens, uint64_t seed, int64_t steps = kSteps, bool empty_row = false) {
  std::vector<k::TensorList> out;
  for (int64_t batch : {1, 7}) {
    const int first = batch == 1 ? 2 : 0;
    auto pattern = [&](int64_t r) { return empty_row && r == 6 ? 4 : (first + static_cast<int>(r)) % 4; };
    if (tokens) {
      std::vector<float> ids = k::random::uniform({batch, steps}, 1.0, kVocab - 0.001, seed++).to_vector<float>();
      for (int64_t r = 0; r < batch; ++r)
        for (int64_t t = 0; t < steps; ++t) {
          float& v = ids[static_cast<size_t>(r * steps + t)];
          v = padded(pattern(r), t, steps) ? 0.f : std::floor(v);
        }
      out.push_back({k::Tensor::from_vector(ids, {batch, steps}).astype(k::DType::int32)});
    } else {
      std::vector<float> x = k::random::normal({batch, steps, kFeatures}, 0.0, 1.0, seed++).to_vector<float>();
      for (int64_t r = 0; r < batch; ++r)
        for (int64_t t = 0; t < steps; ++t)
          if (padded(pattern(r), t, steps))
            for (int64_t f = 0; f < kFeatures; ++f) x[static_cast<size_t>((r * steps + t) * kFeatures + f)] = 0.f;
      out.push_back({k::Tensor::from_vector(x, {batch, steps, kFeatures})});
    }
  }
  return out;
}

// Every float weight random (recurrent kernels, biases and embeddings away from their
// initialisers, so that a gate or mask mistake shows).
void randomize(k::Model& model, uint64_t seed = 7) { test_support::random_weights(model, seed, 0.5); }

struct MaskCase {
  std::string name;
  bool tokens;  // padded int32 ids (for Embedding) or float steps with zero rows (for Masking)
  std::function<std::vector<KerasTensor>(const KerasTensor&)> body;
};

KerasTensor input_of(bool tokens) {
  return tokens ? L::Input({kSteps}, {.dtype = "int32", .name = "ids"}) : L::Input({kSteps, kFeatures}, {.name = "steps"});
}

KerasTensor embed(const KerasTensor& ids, int64_t dim = 4, bool mask_zero = true) {
  return L::Embedding({.input_dim = kVocab, .output_dim = dim, .mask_zero = mask_zero})(ids);
}

KerasTensor masked(const KerasTensor& x) { return L::Masking()(x); }

k::CallArgs options(nlohmann::json o) {
  k::CallArgs args;
  args.options = std::move(o);
  return args;
}

void expect_masked_export(const std::string& tag, const std::vector<MaskCase>& cases) {
  test_support::OnnxCases checks(tag);
  std::vector<std::shared_ptr<k::Model>> keep;
  for (const auto& c : cases) {
    auto in = input_of(c.tokens);
    keep.push_back(std::make_shared<k::Model>(std::vector<KerasTensor>{in}, c.body(in), c.name));
    randomize(*keep.back());
    checks.add(c.name, *keep.back(), {}, padded_batches(c.tokens, 100));
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

std::vector<k::LayerPtr> cells() {
  return {L::LSTMCell({.units = 4}).ptr(), L::GRUCell({.units = 3, .reset_after = false}).ptr()};
}

}  // namespace

TEST(OnnxMasks, RecurrentLayersKeepTheirStatesAtMaskedSteps) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_masked_export(
      "masks_recurrent",
      {{"embedding_lstm", true, [](const KerasTensor& x) { return std::vector{L::LSTM({.units = 5})(embed(x))}; }},
       {"embedding_lstm_backwards_states", true,
        [](const KerasTensor& x) {
          return (*L::LSTM({.units = 4, .return_sequences = true, .return_state = true, .go_backwards = true}).ptr())(
              std::vector<KerasTensor>{embed(x)});
        }},
       {"embedding_gru_simple_rnn", true,
        [](const KerasTensor& x) {
          auto y = L::GRU({.units = 4, .reset_after = false, .return_sequences = true})(embed(x));
          return std::vector{L::SimpleRNN({.units = 3})(y)};
        }},
       {"embedding_rnn_stacked_cells", true,
        [](const KerasTensor& x) {
          return (*L::RNN({.cells = cells(), .return_sequences = true, .return_state = true}).ptr())(std::vector<KerasTensor>{embed(x)});
        }},
       {"embedding_rnn_zero_output_backwards", true,
        [](const KerasTensor& x) {
          return std::vector{L::RNN({.cell = L::GRUCell({.units = 3}), .return_sequences = true, .go_backwards = true,
                                     .zero_output_for_mask = true})(embed(x))};
        }},
       {"embedding_bidirectional", true,
        [](const KerasTensor& x) {
          auto y = L::Bidirectional({.layer = L::LSTM({.units = 3, .return_sequences = true})})(embed(x));
          return std::vector{L::Bidirectional({.layer = L::GRU({.units = 2}), .merge_mode = "sum"})(y)};
        }},
       {"embedding_bidirectional_no_merge_pool", true,
        [](const KerasTensor& x) {
          auto ys = (*L::Bidirectional({.layer = L::GRU({.units = 2, .return_sequences = true}), .merge_mode = ""}).ptr())(
              std::vector<KerasTensor>{embed(x)});
          return std::vector{L::GlobalAveragePooling1D()(ys[0]), L::GlobalAveragePooling1D()(ys[1])};
        }},
       {"embedding_time_distributed_lstm", true,
        [](const KerasTensor& x) {
          auto y = L::TimeDistributed({.layer = L::Dense({.units = 4, .activation = "tanh"})})(embed(x));
          return std::vector{L::LSTM({.units = 3, .return_sequences = true})(y)};
        }},
       {"masking_lstm_pool", false,
        [](const KerasTensor& x) {
          auto y = L::LSTM({.units = 4, .return_sequences = true})(masked(x));
          return std::vector{L::GlobalAveragePooling1D()(L::Dense({.units = 4})(y))};
        }},
       {"masking_bidirectional_stacked_cells", false, [](const KerasTensor& x) {
          return std::vector{L::Bidirectional({.layer = L::RNN({.cells = cells(), .return_sequences = true})})(masked(x))};
        }}});
}

TEST(OnnxMasks, AttentionPoolingAndMerges) {
  SKIP_WITHOUT_ONNX_WRITER();
  expect_masked_export(
      "masks_attention",
      {{"embedding_mha_pool", true,
        [](const KerasTensor& x) {
          auto e = embed(x, 6);
          return std::vector{L::GlobalAveragePooling1D()(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3})(std::vector<KerasTensor>{e, e})[0])};
        }},
       {"embedding_mha_causal_scores", true,
        [](const KerasTensor& x) {
          auto e = embed(x, 6);
          return (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3}).ptr())(
              std::vector<KerasTensor>{e, e}, options({{"use_causal_mask", true}, {"return_attention_scores", true}}));
        }},
       {"embedding_gqa_pool", true,
        [](const KerasTensor& x) {
          auto e = embed(x, 6);
          auto y = L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 4, .num_key_value_heads = 2})(std::vector<KerasTensor>{e, e})[0];
          return std::vector{L::GlobalAveragePooling1D()(y)};
        }},
       {"embedding_attention", true,
        [](const KerasTensor& x) {
          auto q = embed(x), v = embed(x);
          return std::vector{L::Attention({.use_scale = true})(std::vector<KerasTensor>{q, v})[0]};
        }},
       {"embedding_attention_causal_scores", true,
        [](const KerasTensor& x) {
          auto q = embed(x), v = embed(x);
          return (*L::AdditiveAttention().ptr())(std::vector<KerasTensor>{q, v},
                                                 options({{"use_causal_mask", true}, {"return_attention_scores", true}}));
        }},
       {"embedding_merges", true,
        [](const KerasTensor& x) {
          auto a = embed(x), b = embed(x), plain = embed(x, 4, false);
          std::vector<KerasTensor> parts{L::Maximum()(std::vector<KerasTensor>{a, b})[0], L::Minimum()(std::vector<KerasTensor>{a, b, plain})[0],
                                         L::Multiply()(std::vector<KerasTensor>{a, plain})[0], L::Multiply()(std::vector<KerasTensor>{a, b})[0],
                                         L::Add()(std::vector<KerasTensor>{a, b})[0]};
          return std::vector{L::LSTM({.units = 3})(L::Concatenate()(parts)[0])};
        }},
       {"embedding_concatenate_unmasked", true, [](const KerasTensor& x) {
          auto joined = L::Concatenate()(std::vector<KerasTensor>{embed(x), embed(x, 2, false)})[0];
          return std::vector{L::GlobalAveragePooling1D()(joined), L::GlobalAveragePooling1D()(L::Concatenate({.axis = 1})(std::vector<KerasTensor>{embed(x), embed(x)})[0])};
        }}});
}

// Softmax with a mask: Keras broadcasts the (batch, steps) mask against the input from the right,
// so (batch, 7, 7) inputs fit at batch 1 and 7 (the mask of row n then masks column n of every
// row, Keras's own reading); ONNX's Where broadcasts the same way.
TEST(OnnxMasks, SoftmaxBroadcastsItsMaskFromTheRight) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto ids = L::Input({7}, {.dtype = "int32", .name = "ids"});
  auto y = L::Softmax({.name = "probs"})(L::Embedding({.input_dim = kVocab, .output_dim = 7, .mask_zero = true})(ids));
  k::Model model(std::vector<KerasTensor>{ids}, std::vector<KerasTensor>{y}, "masked_softmax");
  randomize(model);
  test_support::OnnxCases checks("masks_softmax");
  checks.add("masked_softmax", model, {}, padded_batches(true, 1300, 7));
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Initial states with a mask: rows padded at the start output zeros (the previous output) while
// the states stay the given ones, until their first real step.
TEST(OnnxMasks, InitialStatesUnderLeadingPadding) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = input_of(false);
  auto h = L::Input({4}, {.name = "h"}), c = L::Input({4}, {.name = "c"});
  k::CallArgs args;
  args.keywords = {"initial_state", "initial_state"};
  auto outs = (*L::LSTM({.units = 4, .return_sequences = true, .return_state = true}).ptr())(std::vector<KerasTensor>{masked(x), h, c}, args);
  k::Model model(std::vector<KerasTensor>{x, h, c}, outs, "masked_initial_state");
  randomize(model);
  std::vector<k::TensorList> batches = padded_batches(false, 300);
  for (auto& b : batches) {
    const int64_t n = b[0].shape()[0];
    b.push_back(k::random::normal({n, 4}, 0.0, 1.0, 400 + static_cast<uint64_t>(n)));
    b.push_back(k::random::normal({n, 4}, 0.0, 1.0, 500 + static_cast<uint64_t>(n)));
  }
  test_support::OnnxCases checks("masks_initial_state");
  checks.add("masked_initial_state", model, {}, batches);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// The mask computations and the Scan body under every opset (ReduceMax takes its axes as an input
// from opset 18) and with a fixed batch.
TEST(OnnxMasks, OpsetsAndStaticBatch) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = input_of(false);
  auto y = L::Bidirectional({.layer = L::GRU({.units = 3, .return_sequences = true})})(masked(x));
  auto ids = input_of(true);
  auto e = embed(ids, 4);
  auto z = L::Concatenate()(std::vector<KerasTensor>{e, embed(ids, 2, false)})[0];
  k::Model series(std::vector<KerasTensor>{x}, std::vector<KerasTensor>{L::GlobalAveragePooling1D()(y)}, "series");
  k::Model tokens(std::vector<KerasTensor>{ids}, std::vector<KerasTensor>{L::LSTM({.units = 3})(z)}, "tokens");
  randomize(series);
  randomize(tokens, 11);
  test_support::OnnxCases checks("masks_opsets");
  for (int opset : {17, 18, 21}) {
    checks.add("series_opset" + std::to_string(opset), series, {.opset = opset}, padded_batches(false, 600));
    checks.add("tokens_opset" + std::to_string(opset), tokens, {.opset = opset}, padded_batches(true, 700));
  }
  checks.add("series_static7", series, {.dynamic_batch = false, .batch_size = 7}, {padded_batches(false, 800)[1]});
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Sequences of unknown length (Input shape (None,)): the masks, the causal and sliding-window
// masks and the Scan take the length from the tensors at run time; one file serves 6 and 9 steps.
TEST(OnnxMasks, UnknownSequenceLength) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto ids = L::Input({-1}, {.dtype = "int32", .name = "ids"});
  auto e = embed(ids, 6);
  auto mha = (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .sliding_window = 3}).ptr())(
      std::vector<KerasTensor>{e, e}, options({{"use_causal_mask", true}}))[0];
  auto att = (*L::Attention().ptr())(std::vector<KerasTensor>{e, e}, options({{"use_causal_mask", true}}))[0];
  auto gqa = (*L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 2, .num_key_value_heads = 1}).ptr())(
      std::vector<KerasTensor>{e, e}, options({{"use_causal_mask", true}}))[0];
  std::vector<KerasTensor> outs{L::GlobalAveragePooling1D()(mha), L::GlobalAveragePooling1D()(att), L::GlobalAveragePooling1D()(gqa),
                                L::LSTM({.units = 3})(e)};
  k::Model model(std::vector<KerasTensor>{ids}, outs, "unknown_length");
  randomize(model);
  std::vector<k::TensorList> batches = padded_batches(true, 900);
  for (auto& b : padded_batches(true, 950, 9)) batches.push_back(b);
  test_support::OnnxCases checks("masks_unknown_length");
  checks.add("unknown_length", model, {}, batches);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Rows with every step masked: the recurrent layers output zeros (or their initial states),
// MultiHeadAttention averages the values uniformly and Attention zeroes the rows, as in Keras.
TEST(OnnxMasks, FullyMaskedRows) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto ids = input_of(true);
  auto e = embed(ids, 6);
  std::vector<KerasTensor> outs = (*L::LSTM({.units = 3, .return_sequences = true, .return_state = true}).ptr())(std::vector<KerasTensor>{e});
  outs.push_back(L::Bidirectional({.layer = L::GRU({.units = 2})})(e));
  outs.push_back(L::MultiHeadAttention({.num_heads = 2, .key_dim = 3})(std::vector<KerasTensor>{e, e})[0]);
  outs.push_back(L::Attention()(std::vector<KerasTensor>{e, e})[0]);
  k::Model model(std::vector<KerasTensor>{ids}, outs, "fully_masked_rows");
  randomize(model);
  test_support::OnnxCases checks("masks_empty_rows");
  checks.add("fully_masked_rows", model, {}, padded_batches(true, 1000, kSteps, true));
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// TimeDistributed over (batch, sentences, words) ids embedded with mask_zero: each sentence's word
// mask goes to the wrapped recurrent layer (Keras folds the mask as the input).
TEST(OnnxMasks, TimeDistributedHandsOnPerStepMasks) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto words = L::Input({3, 4}, {.dtype = "int32", .name = "words"});
  auto e = L::Embedding({.input_dim = kVocab, .output_dim = 3, .mask_zero = true})(words);
  auto sentences = L::TimeDistributed({.layer = L::Bidirectional({.layer = L::GRU({.units = 2})})})(e);
  auto pooled = L::TimeDistributed({.layer = L::GlobalAveragePooling1D()})(e);
  k::Model model(std::vector<KerasTensor>{words}, std::vector<KerasTensor>{sentences, pooled}, "per_step_masks");
  randomize(model);
  // Every sentence keeps at least one word (a fully masked one would average to NaN).
  std::vector<k::TensorList> batches;
  for (int64_t batch : {1, 7}) {
    std::vector<float> ids = k::random::uniform({batch, 3, 4}, 1.0, kVocab - 0.001, 1100 + static_cast<uint64_t>(batch)).to_vector<float>();
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i % 4 != 0 && (i * 7) % 3 == 0) ? 0.f : std::floor(ids[i]);
    batches.push_back({k::Tensor::from_vector(ids, {batch, 3, 4}).astype(k::DType::int32)});
  }
  test_support::OnnxCases checks("masks_per_step");
  checks.add("per_step_masks", model, {}, batches);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// Masks cross nested-model boundaries (a Sequential made of Embedding(mask_zero) and a GRU inside a
// functional model) and reach every call of a shared layer.
TEST(OnnxMasks, NestedModelsAndSharedLayers) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto encoder = std::make_shared<k::Sequential>(std::initializer_list<k::SequentialEntry>{
      L::Input({kSteps}, {.dtype = "int32"}), L::Embedding({.input_dim = kVocab, .output_dim = 4, .mask_zero = true}),
      L::GRU({.units = 3, .return_sequences = true})}, "encoder");
  auto ids = input_of(true);
  auto shared = L::LSTM({.units = 2, .name = "shared_lstm"});
  auto a = shared((*encoder)(ids));
  auto b = shared(L::Dense({.units = 3})((*encoder)(ids)));
  k::Model model(std::vector<KerasTensor>{ids}, std::vector<KerasTensor>{a, b}, "nested_shared_masks");
  randomize(model);
  test_support::OnnxCases checks("masks_nested");
  checks.add("nested_shared_masks", model, {}, padded_batches(true, 1200));
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// MultiHeadAttention over several attention axes, or over one axis of a rank-4 query, with masks:
// Keras's rule (size-1 axes inserted before the query's attention axes until the mask has the
// scores' rank, then broadcast) is followed as the layer follows it. (Masking's query and value
// masks over two axes broadcast against the scores only at batch 1 under that rule, in Keras
// too, so those come with one attention axis.) Frames of 4 x 4 so that masks from both sides fit.
TEST(OnnxMasks, MaskedAttentionOverSeveralAxesAndRank4Queries) {
  SKIP_WITHOUT_ONNX_WRITER();
  test_support::OnnxCases checks("masks_axial");
  std::vector<std::shared_ptr<k::Model>> keep;
  // Rows of 4 x 4 x 5 frames with some (row, column) positions zeroed, and a random 0/1
  // attention_mask (B, 4, 4, 4, 4), at batch 1 and 7.
  auto batches = [](bool with_given, uint64_t seed) {
    std::vector<k::TensorList> out;
    for (int64_t batch : {1, 7}) {
      std::vector<float> x = k::random::normal({batch, 4, 4, 5}, 0.0, 1.0, seed++).to_vector<float>();
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t p = 0; p < 16; ++p)
          if ((p + b) % 5 == 2)
            for (int64_t f = 0; f < 5; ++f) x[static_cast<size_t>((b * 16 + p) * 5 + f)] = 0.f;
      k::TensorList in{k::Tensor::from_vector(x, {batch, 4, 4, 5})};
      if (with_given) {
        std::vector<float> m = k::random::uniform({batch, 4, 4, 4, 4}, 0.0, 1.0, seed++).to_vector<float>();
        for (float& v : m) v = v < 0.7f ? 1.f : 0.f;
        in.push_back(k::Tensor::from_vector(m, {batch, 4, 4, 4, 4}));
      }
      out.push_back(std::move(in));
    }
    return out;
  };
  {  // attention over both frame axes, an attention_mask by keyword and the causal mask
    auto frames = L::Input({4, 4, 5}, {.name = "frames"});
    auto given = L::Input({4, 4, 4, 4}, {.name = "given_mask"});
    k::CallArgs args = options({{"use_causal_mask", true}});
    args.keywords = {"attention_mask"};
    auto y = (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .name = "axial"}).ptr())(
        std::vector<KerasTensor>{frames, frames, given}, args);
    keep.push_back(std::make_shared<k::Model>(std::vector<KerasTensor>{frames, given}, y, "axial_given_causal"));
    randomize(*keep.back());
    checks.add("axial_given_causal", *keep.back(), {}, batches(true, 1300));
  }
  {  // both axes, an attention_mask by keyword, and the returned scores
    auto frames = L::Input({4, 4, 5}, {.name = "frames"});
    auto given = L::Input({4, 4, 4, 4}, {.name = "given_mask"});
    k::CallArgs args = options({{"return_attention_scores", true}});
    args.keywords = {"attention_mask"};
    auto outs = (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3}).ptr())(std::vector<KerasTensor>{frames, frames, given}, args);
    keep.push_back(std::make_shared<k::Model>(std::vector<KerasTensor>{frames, given}, outs, "axial_given_scores"));
    randomize(*keep.back());
    checks.add("axial_given_scores", *keep.back(), {}, batches(true, 1310));
  }
  {  // a rank-4 query attended over axis 2 only (axis 1 batch-like), masks of Masking and causal
    auto frames = L::Input({4, 4, 5}, {.name = "frames"});
    auto x = masked(frames);
    auto y = (*L::MultiHeadAttention({.num_heads = 2, .key_dim = 3, .attention_axes = std::vector<int64_t>{2}}).ptr())(
        std::vector<KerasTensor>{x, x}, options({{"use_causal_mask", true}}));
    keep.push_back(std::make_shared<k::Model>(std::vector<KerasTensor>{frames}, y, "rows_masking_causal"));
    randomize(*keep.back());
    checks.add("rows_masking_causal", *keep.back(), {}, batches(false, 1320));
  }
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

// What cannot be exported is refused before anything is written, naming the layer: a masked
// attention over several axes whose extents are known only at run time.
TEST(OnnxMasks, MaskedAttentionOverUnknownExtentsIsRefused) {
  const auto path = std::filesystem::temp_directory_path() / ("keras_onnx_masks_bad_" + std::to_string(getpid()) + ".onnx");
  auto image = L::Input({-1, 4, 5});
  auto x = L::Masking()(image);
  k::Model model(std::vector<KerasTensor>{image},
                 std::vector<KerasTensor>{L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .name = "axial"})(std::vector<KerasTensor>{x, x})[0]});
  k::testing::expect_error<k::NotImplementedError>([&] { k::export_model(model, path.string()); },
                                                   {"Layer 'axial' (MultiHeadAttention)", "known attention extents"});
  EXPECT_FALSE(std::filesystem::exists(path));
}
