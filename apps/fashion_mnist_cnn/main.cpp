// Conv-Conv-Pool-Dense on Fashion-MNIST, 5 epochs. Its last line is `test_accuracy=<value>`.
//
// `--policy mixed_bfloat16` (or any dtype policy) trains under that global policy, the softmax
// layer kept float32 as Keras's mixed-precision guide advises.
//
// Data-parallel over processes: `mpirun -np 2 build/apps/fashion_mnist_cnn --distributed`. The
// global batch stays 128 (64 rows per process), so it takes the same steps as one process; only
// process 0 prints.
#include <keras/keras.h>

#include <cstdio>
#include <cstring>

namespace k = keras;

int main(int argc, char** argv) {
  bool distributed = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--distributed") == 0) {
      distributed = true;
    } else if (std::strcmp(argv[i], "--policy") == 0 && i + 1 < argc) {
      k::mixed_precision::set_global_policy(argv[++i]);
    } else {
      std::fprintf(stderr, "fashion_mnist_cnn: expected --distributed or --policy <name>, got '%s'\n", argv[i]);
      return 2;
    }
  }
  if (distributed) k::distribution::set_distribution(k::distribution::DataParallel());
  const bool chief = k::distribution::process_id() == 0;

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
      k::layers::Dense({.units = 10, .activation = "softmax", .dtype = "float32"}),
  });
  if (chief) model.summary();
  if (chief && distributed) std::printf("data parallel over %d processes\n", k::distribution::num_processes());
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(x_train, train.y, {.batch_size = 128, .epochs = 5, .validation_split = 0.1});
  k::Logs result = model.evaluate(x_test, test.y, {.batch_size = 256, .verbose = chief ? 1 : 0});
  if (chief) {
    std::printf("test_loss=%.4f\n", result.at("loss"));
    std::printf("test_accuracy=%.4f\n", result.at("accuracy"));
  }
  return 0;
}
