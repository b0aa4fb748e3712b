// Transfer learning on Fashion-MNIST: a small convolutional backbone learns classes 0-4, then
// serves frozen under a new head for classes 5-9, then its top block is unfrozen and fine-tuned
// with a low learning rate. Checks that the frozen phase left the backbone bit-identical; the last
// line is `transfer_test_accuracy=<value>`.
#include <keras/keras.h>

#include <cstdio>

namespace k = keras;
namespace L = keras::layers;

namespace {
struct Subset {
  k::Tensor x, y;
};

// Samples whose label is in [lo, lo + 5), labels shifted to 0..4, images scaled to [0, 1].
Subset classes(const k::datasets::Split& split, int64_t lo) {
  std::vector<int64_t> labels = split.y.to_vector<int64_t>(), rows, shifted;
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] >= lo && labels[i] < lo + 5) rows.push_back(static_cast<int64_t>(i)), shifted.push_back(labels[i] - lo);
  k::Tensor idx = k::Tensor::from_vector(rows);
  k::Tensor x = k::ops::take(split.x, idx, 0);
  return {k::ops::reshape(x, {x.dim(0), 28, 28, 1}) / 255.0, k::Tensor::from_vector(shifted)};
}

std::vector<std::vector<float>> snapshot(const k::Layer& layer) {
  std::vector<std::vector<float>> out;
  for (const auto& w : layer.weights()) out.push_back(w.value().to_vector<float>());
  return out;
}
}  // namespace

int main() {
  k::utils::set_random_seed(11);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  Subset a_train = classes(train, 0), b_train = classes(train, 5), b_test = classes(test, 5);

  // 1. The backbone learns classes 0-4 under a first head.
  auto inputs = k::Input({28, 28, 1});
  auto x = L::Conv2D({.filters = 32, .kernel_size = 3, .activation = "relu"})(inputs);
  x = L::MaxPooling2D({.pool_size = 2})(x);
  x = L::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu"})(x);
  x = L::MaxPooling2D({.pool_size = 2})(x);
  x = L::Conv2D({.filters = 64, .kernel_size = 3, .activation = "relu", .name = "top_conv"})(x);
  auto features = L::Flatten()(x);
  auto backbone = std::make_shared<k::Model>(inputs, features, "backbone");
  auto pre_in = k::Input({28, 28, 1});
  auto pre_out = L::Dense({.units = 5, .activation = "softmax"})((*backbone)(pre_in));
  k::Model pretrain(pre_in, pre_out, "pretrain");
  pretrain.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                    .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Phase 1: backbone on classes 0-4\n");
  pretrain.fit(a_train.x, a_train.y, {.batch_size = 128, .epochs = 4, .verbose = 2});

  // 2. Frozen backbone (inference mode) under a new head for classes 5-9.
  backbone->set_trainable(false);
  auto in = k::Input({28, 28, 1});
  auto feats = (*backbone)(in, {.training = false});
  auto out = L::Dense({.units = 5, .activation = "softmax"})(feats);
  k::Model transfer(in, out, "transfer");
  transfer.summary();
  auto before = snapshot(*backbone);
  transfer.compile({.optimizer = k::optimizers::Adam({.learning_rate = 2e-3}),
                    .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Phase 2: frozen backbone, new head on classes 5-9\n");
  transfer.fit(b_train.x, b_train.y, {.batch_size = 128, .epochs = 4, .verbose = 2});
  bool identical = snapshot(*backbone) == before;
  std::printf("frozen_backbone_bit_identical=%s\n", identical ? "true" : "false");
  if (!identical) return 1;

  // 3. Unfreeze the top block and fine-tune with a low learning rate.
  backbone->get_layer("top_conv")->set_trainable(true);
  transfer.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-4}),
                    .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Phase 3: fine-tuning top_conv\n");
  transfer.fit(b_train.x, b_train.y, {.batch_size = 128, .epochs = 3, .verbose = 2});
  k::Logs result = transfer.evaluate(b_test.x, b_test.y, {.batch_size = 256, .verbose = 0});
  std::printf("transfer_test_accuracy=%.4f\n", result.at("accuracy"));
  return 0;
}
