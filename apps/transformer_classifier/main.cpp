// A small transformer that tells palindromes from near-palindromes, a task no bag of tokens can
// solve: every token must be compared with its mirror image, which attention over learned
// position embeddings finds. The data is generated here: sequences of 12 tokens over 8 symbols,
// half of them palindromes, the other half palindromes with one or two positions changed.
//
// TokenAndPositionEmbedding (a custom layer, below) -> 2 x [MultiHeadAttention + residual +
// LayerNormalization, Dense feed-forward + residual + LayerNormalization] ->
// GlobalAveragePooling1D -> Dense softmax. Its last line is `test_accuracy=<value>` on held-out
// sequences.
#include <keras/keras.h>

#include <cstdio>
#include <random>
#include <vector>

namespace k = keras;

namespace {

constexpr int64_t kLength = 12, kSymbols = 8, kModel = 32;

// Token embeddings plus learned position embeddings, as in Keras's "text classification with
// transformer" example. A custom layer: weights from add_weight(), the forward pass from ops, the
// gradients from the tape.
class TokenAndPositionEmbedding : public k::Layer {
 public:
  TokenAndPositionEmbedding() : k::Layer(k::LayerOptions{"token_and_position_embedding"}) {}
  std::string class_name() const override { return "TokenAndPositionEmbedding"; }
  void build(const std::vector<k::Shape>& input_shapes) override {
    const int64_t length = input_shapes.at(0).at(1);
    tokens_ = add_weight("tokens", {kSymbols + 1, kModel}, k::initializers::get("uniform"));
    positions_ = add_weight("positions", {length, kModel}, k::initializers::get("uniform"));
  }
  std::vector<k::Shape> compute_output_shape(const std::vector<k::Shape>& input_shapes) override {
    return {{input_shapes.at(0).at(0), input_shapes.at(0).at(1), kModel}};
  }
  k::TensorList call(const k::TensorList& inputs, const k::CallContext&) override {
    return {k::ops::add(k::ops::take(tokens_.value(), inputs[0], 0), positions_.value())};
  }

 private:
  k::Variable tokens_, positions_;
};

struct Sequences {
  k::Tensor x;  // (n, kLength) int32 symbols in [1, kSymbols]
  k::Tensor y;  // (n,) 1 for a palindrome
};

Sequences make_sequences(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> symbol(1, kSymbols);
  std::uniform_int_distribution<int64_t> position(0, kLength - 1);
  std::vector<int32_t> x(static_cast<size_t>(n * kLength));
  std::vector<int32_t> y(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    int32_t* row = &x[static_cast<size_t>(i * kLength)];
    for (int64_t t = 0; t < kLength / 2; ++t) row[t] = row[kLength - 1 - t] = symbol(rng);
    const bool palindrome = i % 2 == 0;
    if (!palindrome) {
      // One or two changes, each to another symbol: the mirror pair no longer matches.
      const int changes = 1 + static_cast<int>(rng() % 2);
      for (int c = 0; c < changes; ++c) {
        const int64_t p = position(rng);
        int32_t s = row[p];
        while (s == row[p]) s = symbol(rng);
        row[p] = s;
      }
      bool still = true;  // two changes may restore the symmetry
      for (int64_t t = 0; t < kLength / 2; ++t) still = still && row[t] == row[kLength - 1 - t];
      if (still) {
        --i;
        continue;
      }
    }
    y[static_cast<size_t>(i)] = palindrome ? 1 : 0;
  }
  return {k::Tensor::from_vector(x, {n, kLength}), k::Tensor::from_vector(y, {n})};
}

k::KerasTensor encoder_block(k::KerasTensor x) {
  auto attention = k::layers::MultiHeadAttention({.num_heads = 4, .key_dim = 8})(std::vector<k::KerasTensor>{x, x})[0];
  x = k::layers::LayerNormalization({.epsilon = 1e-6})(k::layers::Add()({x, attention}));
  auto ff = k::layers::Dense({.units = 64, .activation = "relu"})(x);
  ff = k::layers::Dense({.units = kModel})(ff);
  return k::layers::LayerNormalization({.epsilon = 1e-6})(k::layers::Add()({x, ff}));
}

}  // namespace

int main() {
  k::utils::set_random_seed(3);
  Sequences train = make_sequences(24000, 11), test = make_sequences(4000, 12);

  auto inputs = k::layers::Input({kLength}, {.dtype = "int32"});
  auto x = (*std::make_shared<TokenAndPositionEmbedding>())(inputs);
  x = encoder_block(encoder_block(x));
  x = k::layers::GlobalAveragePooling1D()(x);
  auto outputs = k::layers::Dense({.units = 2, .activation = "softmax"})(x);
  k::Model model(inputs, outputs, "palindrome_transformer");
  model.summary();
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(train.x, train.y, {.batch_size = 64, .epochs = 25, .validation_split = 0.1});
  k::Logs result = model.evaluate(test.x, test.y, {.batch_size = 256});
  std::printf("test_loss=%.4f\n", result.at("loss"));
  std::printf("test_accuracy=%.4f\n", result.at("accuracy"));
  return 0;
}
