// Keras's "addition RNN" example: a sequence-to-sequence LSTM learns to add two numbers of up to
// three digits, given as text ("535+61 " -> "596 "). The questions are generated here (unique
// pairs, a fixed seed) and, as in Keras's example, reversed, which shortens the paths between
// the digits the answer needs.
//
// Encoder LSTM(128) -> RepeatVector(answer length) -> decoder LSTM(128, sequences) -> Dense
// softmax over the 12 characters. Its last lines are the per-character accuracy Keras's metric
// reports and `test_accuracy=<value>`: the fraction of held-out sums answered exactly, every
// character right.
#include <keras/keras.h>

#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace k = keras;

namespace {

constexpr int kDigits = 3;
constexpr int kQuestionLength = kDigits + 1 + kDigits;  // "999+999"
constexpr int kAnswerLength = kDigits + 1;              // "1998"
const std::string kChars = "0123456789+ ";

struct Sums {
  k::Tensor x;  // (n, kQuestionLength, 12) one-hot questions, reversed
  k::Tensor y;  // (n, kAnswerLength) character ids of the answers
};

int char_id(char c) { return static_cast<int>(kChars.find(c)); }

std::string pad(std::string s, size_t length) { return s.append(length - s.size(), ' '); }

// `n` distinct questions a+b (a <= b: "a+b" and "b+a" would teach the same thing twice).
Sums make_sums(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto number = [&] {
    std::uniform_int_distribution<int> width(1, kDigits), digit(0, 9);
    int value = 0;
    for (int i = width(rng); i > 0; --i) value = value * 10 + digit(rng);
    return value;
  };
  std::set<std::pair<int, int>> seen;
  std::vector<float> x(static_cast<size_t>(n * kQuestionLength) * kChars.size(), 0.f);
  std::vector<int32_t> y;
  y.reserve(static_cast<size_t>(n * kAnswerLength));
  for (int64_t i = 0; i < n;) {
    int a = number(), b = number();
    if (a > b) std::swap(a, b);
    if (!seen.insert({a, b}).second) continue;
    std::string question = pad(std::to_string(a) + "+" + std::to_string(b), kQuestionLength);
    std::string answer = pad(std::to_string(a + b), kAnswerLength);
    for (int t = 0; t < kQuestionLength; ++t) {
      const char c = question[static_cast<size_t>(kQuestionLength - 1 - t)];  // reversed
      x[(static_cast<size_t>(i * kQuestionLength + t)) * kChars.size() + static_cast<size_t>(char_id(c))] = 1.f;
    }
    for (char c : answer) y.push_back(char_id(c));
    ++i;
  }
  return {k::Tensor::from_vector(x, {n, kQuestionLength, static_cast<int64_t>(kChars.size())}),
          k::Tensor::from_vector(y, {n, kAnswerLength})};
}

// Fraction of rows whose every predicted character is the labelled one.
double exact_match(const k::Tensor& probabilities, const k::Tensor& labels) {
  const auto predicted = k::ops::argmax(probabilities, -1).to_vector<int64_t>();
  const auto wanted = labels.to_vector<int32_t>();
  int64_t right = 0, rows = labels.dim(0);
  for (int64_t r = 0; r < rows; ++r) {
    bool all = true;
    for (int t = 0; t < kAnswerLength; ++t) all = all && predicted[r * kAnswerLength + t] == wanted[r * kAnswerLength + t];
    right += all;
  }
  return static_cast<double>(right) / static_cast<double>(rows);
}

}  // namespace

int main() {
  k::utils::set_random_seed(7);
  const int64_t total = 50000, test_size = 5000;
  Sums all = make_sums(total, 1234);
  const int64_t n_train = total - test_size;
  k::Tensor x_train = all.x.slice_batch(0, n_train), y_train = all.y.slice_batch(0, n_train);
  k::Tensor x_test = all.x.slice_batch(n_train, total), y_test = all.y.slice_batch(n_train, total);

  k::Sequential model({
      k::layers::Input({kQuestionLength, static_cast<int64_t>(kChars.size())}),
      k::layers::LSTM({.units = 128}),
      k::layers::RepeatVector({.n = kAnswerLength}),
      k::layers::LSTM({.units = 128, .return_sequences = true}),
      k::layers::Dense({.units = static_cast<int64_t>(kChars.size()), .activation = "softmax"}),
  });
  model.summary();
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(x_train, y_train, {.batch_size = 64, .epochs = 30, .validation_split = 0.1});
  k::Logs result = model.evaluate(x_test, y_test, {.batch_size = 256});
  const double exact = exact_match(model.predict(x_test, {.batch_size = 256}), y_test);
  std::printf("test_loss=%.4f\n", result.at("loss"));
  std::printf("test_character_accuracy=%.4f\n", result.at("accuracy"));
  std::printf("test_accuracy=%.4f\n", exact);
  return 0;
}
