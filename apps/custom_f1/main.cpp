// A custom metric in a few lines next to the built-in one: a batch-wise macro F1 written as a
// plain function of (y_true, y_pred) (averaged over batches as Keras averages function metrics)
// and keras::metrics::F1Score (stateful: counts over the whole epoch), trained side by side on
// Fashion-MNIST. They differ by design: the mean of per-batch F1s is not the F1 of the epoch.
#include <keras/keras.h>

#include <cstdio>

namespace k = keras;

// Macro F1 of one batch: y_true one-hot, y_pred probabilities.
k::Tensor batch_macro_f1(const k::Tensor& y_true, const k::Tensor& y_pred) {
  int64_t classes = y_pred.dim(-1);
  k::Tensor predicted = k::ops::one_hot(k::ops::argmax(y_pred, -1), classes);
  k::Tensor tp = k::ops::sum(y_true * predicted, {0});
  k::Tensor fp = k::ops::sum((1.0 - y_true) * predicted, {0});
  k::Tensor fn = k::ops::sum(y_true * (1.0 - predicted), {0});
  k::Tensor f1 = (2.0 * tp) / (2.0 * tp + fp + fn + 1e-7);
  return k::ops::mean(f1);
}

int main() {
  k::utils::set_random_seed(3);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  auto prepare = [](const k::Tensor& images) { return k::ops::reshape(images, {images.dim(0), 784}) / 255.0; };
  k::Tensor x_train = prepare(train.x), x_test = prepare(test.x);
  k::Tensor y_train = k::ops::one_hot(train.y, 10), y_test = k::ops::one_hot(test.y, 10);

  k::Sequential model({k::layers::Input({784}), k::layers::Dense({.units = 128, .activation = "relu"}),
                       k::layers::Dense({.units = 10, .activation = "softmax"})});
  auto custom_f1 = std::make_shared<k::metrics::MeanMetricWrapper>(batch_macro_f1, "custom_f1", "float32", "max");
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "categorical_crossentropy",
                 .metrics = {custom_f1, k::metrics::F1Score({.average = "macro"})}});
  model.fit(x_train, y_train, {.batch_size = 128, .epochs = 3, .verbose = 2});
  k::Logs result = model.evaluate(x_test, y_test, {.batch_size = 256, .verbose = 0});
  std::printf("custom_f1=%.4f\n", result.at("custom_f1"));
  std::printf("f1_score=%.4f\n", result.at("f1_score"));
  return 0;
}
