// A custom training loop: GradientTape + optimizer.apply on Fashion-MNIST, as in Keras's
// "writing a training loop from scratch" guide. Prints `test_accuracy=<value>` last.
#include <keras/keras.h>

#include <cstdio>

namespace k = keras;

int main() {
  k::utils::set_random_seed(7);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  auto prepare = [](const k::Tensor& images) { return k::ops::reshape(images, {images.dim(0), 784}) / 255.0; };
  k::Tensor x_train = prepare(train.x), x_test = prepare(test.x);

  auto inputs = k::Input({784});
  auto h = k::layers::Dense({.units = 128, .activation = "relu"})(inputs);
  auto logits = k::layers::Dense({.units = 10})(h);
  k::Model model(inputs, logits, "mlp");

  auto loss_fn = k::losses::SparseCategoricalCrossentropy({.from_logits = true});
  auto optimizer = k::optimizers::Adam({.learning_rate = 1e-3});
  auto train_accuracy = k::metrics::SparseCategoricalAccuracy({});

  auto dataset = k::data::Dataset::from_tensor_slices({x_train, train.y}).shuffle(4096, 1).batch(128);
  for (int epoch = 0; epoch < 2; ++epoch) {
    train_accuracy->reset_state();
    double loss_sum = 0;
    int steps = 0;
    k::data::EpochIterator batches(dataset);
    batches.begin_epoch();
    while (auto batch = batches.next()) {
      const k::Tensor& x = (*batch)[0];
      const k::Tensor& y = (*batch)[1];
      auto vars = model.trainable_weights();
      k::TensorList sources;
      for (const auto& v : vars) sources.push_back(v.value());
      k::GradientTape tape;
      k::Tensor out = model(x, {.training = true});
      k::Tensor loss = (*loss_fn)(y, out);
      k::TensorList grads = tape.gradient(loss, sources);
      optimizer->apply(grads, vars);
      train_accuracy->update_state(y, out.detach());
      loss_sum += loss.item();
      ++steps;
    }
    std::printf("epoch %d: loss=%.4f accuracy=%.4f\n", epoch + 1, loss_sum / steps, train_accuracy->result());
  }
  k::Tensor predictions = model.predict(x_test, {.batch_size = 512});
  auto test_accuracy = k::metrics::SparseCategoricalAccuracy({});
  test_accuracy->update_state(test.y, predictions);
  std::printf("test_accuracy=%.4f\n", test_accuracy->result());
  return 0;
}
