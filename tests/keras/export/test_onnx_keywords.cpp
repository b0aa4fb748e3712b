// ONNX export of calls that pass tensors by keyword: MultiHeadAttention's and
// GroupQueryAttention's `key` and `attention_mask`, the initial_state of the generic RNN (over
// stacked cells) and of Bidirectional; checked against model.predict in ONNX Runtime.
#include <gtest/gtest.h>

#include "keras/keras.h"
#include "support/onnx_reference.h"

namespace k = keras;
namespace L = keras::layers;
using keras::KerasTensor;

namespace {

void randomize(k::Model& model, uint64_t seed = 3) { test_support::random_weights(model, seed, 0.5); }

k::CallArgs keywords(std::vector<std::string> names, nlohmann::json options = nlohmann::json::object()) {
  k::CallArgs args;
  args.keywords = std::move(names);
  args.options = std::move(options);
  return args;
}

std::shared_ptr<k::Model> model_of(const std::vector<KerasTensor>& ins, const std::vector<KerasTensor>& outs, const std::string& name) {
  auto m = std::make_shared<k::Model>(ins, outs, name);
  randomize(*m);
  return m;
}

}  // namespace

TEST(OnnxKeywords, AttentionKeyAndAttentionMask) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto q = L::Input({4, 6}, {.name = "query"});
  auto v = L::Input({5, 6}, {.name = "value"});
  auto key = L::Input({5, 3}, {.name = "key"});
  // Integer ids in [0, 5) from the test inputs: zeros mask, the rest attend (Keras casts to bool).
  auto mask = L::Input({4, 5}, {.dtype = "int32", .name = "attention_mask"});
  test_support::OnnxCases checks("keywords_attention");
  std::vector<std::shared_ptr<k::Model>> keep;
  auto mha = L::MultiHeadAttention({.num_heads = 2, .key_dim = 3});
  keep.push_back(model_of({q, v, key, mask}, (*mha.ptr())(std::vector<KerasTensor>{q, v, key, mask}, keywords({"key", "attention_mask"})),
                          "mha_key_mask"));
  auto scores = L::MultiHeadAttention({.num_heads = 2, .key_dim = 2, .value_dim = 3});
  keep.push_back(model_of({q, v, mask},
                          (*scores.ptr())(std::vector<KerasTensor>{q, v, mask}, keywords({"attention_mask"}, {{"return_attention_scores", true}})),
                          "mha_mask_scores"));
  auto gqa = L::GroupQueryAttention({.head_dim = 2, .num_query_heads = 4, .num_key_value_heads = 2, .use_gate = true});
  keep.push_back(model_of({q, v, key, mask}, (*gqa.ptr())(std::vector<KerasTensor>{q, v, key, mask}, keywords({"key", "attention_mask"})),
                          "gqa_key_mask_gate"));
  auto window = L::GroupQueryAttention({.head_dim = 3, .num_query_heads = 2, .num_key_value_heads = 1, .sliding_window = 2});
  auto self = L::Input({5, 6}, {.name = "sequence"});
  keep.push_back(model_of({self}, (*window.ptr())(std::vector<KerasTensor>{self, self}, keywords({}, {{"use_causal_mask", true}})),
                          "gqa_causal_window"));
  for (const auto& m : keep) checks.add(m->name(), *m);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}

TEST(OnnxKeywords, RecurrentInitialStates) {
  SKIP_WITHOUT_ONNX_WRITER();
  auto x = L::Input({5, 3}, {.name = "x"});
  auto h4 = L::Input({4}, {.name = "h4"}), c4 = L::Input({4}, {.name = "c4"}), h3 = L::Input({3}, {.name = "h3"});
  auto stacked = L::RNN({.cells = {L::LSTMCell({.units = 4}).ptr(), L::GRUCell({.units = 3}).ptr()}, .return_sequences = true,
                         .return_state = true});
  test_support::OnnxCases checks("keywords_states");
  std::vector<std::shared_ptr<k::Model>> keep;
  keep.push_back(model_of({x, h4, c4, h3},
                          (*stacked.ptr())(std::vector<KerasTensor>{x, h4, c4, h3}, keywords({"initial_state", "initial_state", "initial_state"})),
                          "rnn_stacked_initial_state"));
  auto hf = L::Input({2}, {.name = "hf"}), cf = L::Input({2}, {.name = "cf"}), hb = L::Input({2}, {.name = "hb"}),
       cb = L::Input({2}, {.name = "cb"});
  auto bi = L::Bidirectional({.layer = L::LSTM({.units = 2, .return_sequences = true})});
  keep.push_back(model_of({x, hf, cf, hb, cb},
                          (*bi.ptr())(std::vector<KerasTensor>{x, hf, cf, hb, cb}, keywords(std::vector<std::string>(4, "initial_state"))),
                          "bidirectional_initial_state"));
  auto hg = L::Input({3}, {.name = "hg"}), hgb = L::Input({3}, {.name = "hgb"});
  auto bi_gru = L::Bidirectional({.layer = L::GRU({.units = 3, .return_state = true}), .merge_mode = "ave"});
  keep.push_back(model_of({x, hg, hgb}, (*bi_gru.ptr())(std::vector<KerasTensor>{x, hg, hgb}, keywords({"initial_state", "initial_state"})),
                          "bidirectional_gru_initial_state"));
  for (const auto& m : keep) checks.add(m->name(), *m);
  EXPECT_ONNX_CASES_MATCH(checks, 1e-5);
}
