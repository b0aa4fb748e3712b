// Conv-Conv-Pool-Dense on Fashion-MNIST, 5 epochs. Its last line is `test_accuracy=<value>`.
#include <keras/keras.h>

#include <cstdio>

namespace k = keras;

int main() {
  k::utils::set_random_seed(42);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  // (N, 28, 28) floats in 0..255 -> (N, 28, 28, 1) in [0, 1], channels last.
  auto prepare = [](const k::Tensor& images) { return k::ops::reshape(images, {images.dim(0), 28, 28, 1}) / 255.0; };
  k::Tensor x_train = prepare(train.x), x_test = prepare(test.x);

  k::Sequential model({
      k::layers::Input({28, 28, 1}),
      k::layers::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"}),
      k::layers::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"}),
      k::layers::MaxPooling2D({.pool_size = 2}),
      k::layers::Flatten(),
      k::layers::Dense({.units = 128, .activation = "relu"}),
      k::layers::Dense({.units = 10, .activation = "softmax"}),
  });
  model.summary();
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(x_train, train.y, {.batch_size = 128, .epochs = 5, .validation_split = 0.1});
  k::Logs result = model.evaluate(x_test, test.y, {.batch_size = 256});
  std::printf("test_loss=%.4f\n", result.at("loss"));
  std::printf("test_accuracy=%.4f\n", result.at("accuracy"));
  return 0;
}
