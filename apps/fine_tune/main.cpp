// Keras's transfer-learning guide in C++ ("Transfer learning & fine-tuning", keras.io), on
// Fashion-MNIST: a keras::applications backbone (MobileNet, alpha 0.5, 32x32), with weights
// from a file given on the command line, else pretrained here on classes 0-4; augmentation in
// front of it; the base frozen (BatchNormalization kept in inference mode by calling it with
// training = false) under a new head for classes 5-9; then its top blocks unfrozen and trained at
// a low learning rate, with ModelCheckpoint and EarlyStopping; the result saved as .keras.
//
//   fine_tune [--weights backbone.weights.h5] [--out fine_tuned.keras] [--train N] [--epochs N]
//             [--pretrain N]
//
// The last two lines are `frozen_accuracy=<value>` and `fine_tuned_accuracy=<value>` (test
// accuracy on classes 5-9 after each phase).
#include <keras/keras.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace k = keras;
namespace L = keras::layers;

namespace {
struct Subset {
  k::Tensor x, y;
};

// At most `limit` samples whose label is in [lo, lo + 5), labels shifted to 0..4, images as
// (N, 28, 28, 1) holding 0..255 (the model rescales them, as preprocess_input would).
Subset classes(const k::datasets::Split& split, int64_t lo, int64_t limit) {
  std::vector<int64_t> labels = split.y.to_vector<int64_t>(), rows, shifted;
  for (size_t i = 0; i < labels.size() && static_cast<int64_t>(rows.size()) < limit; ++i)
    if (labels[i] >= lo && labels[i] < lo + 5) rows.push_back(static_cast<int64_t>(i)), shifted.push_back(labels[i] - lo);
  k::Tensor x = k::ops::take(split.x, k::Tensor::from_vector(rows), 0);
  return {k::ops::reshape(x, {x.dim(0), 28, 28, 1}), k::Tensor::from_vector(shifted)};
}

// Grey 28x28 images in 0..255 -> the backbone's input: 32x32, three channels, in [-1, 1]
// (MobileNet's preprocess_input), with random flips and small rotations while training.
k::KerasTensor preprocess(const k::KerasTensor& images) {
  auto x = L::RandomFlip({.mode = "horizontal", .seed = 1})(images);
  x = L::RandomRotation({.factor = 0.05, .fill_mode = "nearest", .seed = 2})(x);
  x = L::Resizing({.height = 32, .width = 32})(x);
  x = L::Rescaling({.scale = 1.0 / 127.5, .offset = -1.0})(x);
  return L::Concatenate()(std::vector<k::KerasTensor>{x, x, x})[0];
}

std::shared_ptr<k::Model> backbone(const std::string& weights) {
  return k::applications::MobileNet({.input_shape = {32, 32, 3}, .alpha = 0.5, .include_top = false,
                                     .weights = weights, .pooling = "avg"});
}

// A backbone as a user would download one: trained on classes 0-4 and saved as weights only.
// (MobileNet rather than MobileNetV2: V2's BatchNormalization momentum of 0.999 leaves the moving
// statistics far from the batch statistics after the ~2,000 steps this app can afford, so the
// frozen, inference-mode V2 computes nothing useful; MobileNet's 0.99 settles in a few hundred.)
std::string pretrain_backbone(const Subset& data, const std::string& path, int epochs) {
  auto base = backbone("");
  auto in = k::Input({28, 28, 1});
  auto out = L::Dense({.units = 5, .activation = "softmax"})((*base)(preprocess(in)));
  k::Model model(in, out, "pretrain");
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 2e-3}),
                 .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Pretraining the backbone on classes 0-4\n");
  model.fit(data.x, data.y, {.batch_size = 64, .epochs = epochs, .verbose = 2});
  base->save_weights(path);
  return path;
}

double test_accuracy(k::Model& model, const Subset& test) {
  return model.evaluate(test.x, test.y, {.batch_size = 256, .verbose = 0}).at("accuracy");
}
}  // namespace

int main(int argc, char** argv) {
  std::string weights, out = "fine_tuned.keras";
  int64_t train_samples = 12000, pretrain_samples = 30000;
  int epochs = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--weights") weights = value;
    else if (flag == "--out") out = value;
    else if (flag == "--train") train_samples = std::atoll(value.c_str());
    else if (flag == "--epochs") epochs = std::atoi(value.c_str());
    else if (flag == "--pretrain") pretrain_samples = std::atoll(value.c_str());
    else {
      std::fprintf(stderr, "fine_tune: unknown option '%s' (expected --weights, --out, --train, --epochs or --pretrain)\n", argv[i]);
      return 2;
    }
  }
  k::utils::set_random_seed(7);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  const Subset target = classes(train, 5, train_samples), target_test = classes(test, 5, 5000);
  if (weights.empty())
    weights = pretrain_backbone(classes(train, 0, pretrain_samples), (std::filesystem::temp_directory_path() /
                                                                  "fine_tune_backbone.weights.h5").string(), epochs);

  // Phase 1: the loaded backbone frozen under a new head.
  auto base = backbone(weights);
  base->set_trainable(false);
  auto inputs = k::Input({28, 28, 1});
  auto features = (*base)(preprocess(inputs), {.training = false});
  auto outputs = L::Dense({.units = 5, .activation = "softmax", .name = "new_head"})(L::Dropout({.rate = 0.2})(features));
  k::Model model(inputs, outputs, "fine_tune");
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}),
                 .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Phase 1: frozen backbone, new head on classes 5-9\n");
  model.fit(target.x, target.y, {.batch_size = 64, .epochs = epochs, .verbose = 2, .validation_split = 0.1});
  const double frozen = test_accuracy(model, target_test);

  // Phase 2: the top blocks unfrozen (from conv_dw_12 on), a low learning rate, the best epoch kept.
  base->set_trainable(true);
  bool top = false;
  for (const auto& layer : base->layers()) {
    top = top || layer->name() == "conv_dw_12";
    layer->set_trainable(top);
  }
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-4}),
                 .loss = "sparse_categorical_crossentropy", .metrics = {"accuracy"}});
  std::printf("Phase 2: top blocks unfrozen at learning rate 1e-4\n");
  model.fit(target.x, target.y,
            {.batch_size = 64, .epochs = epochs, .verbose = 2,
             .callbacks = {k::callbacks::ModelCheckpoint({.filepath = out, .monitor = "val_accuracy", .save_best_only = true}),
                           k::callbacks::EarlyStopping({.monitor = "val_accuracy", .patience = 2,
                                                        .restore_best_weights = true})},
             .validation_split = 0.1});
  const double fine_tuned = test_accuracy(model, target_test);
  std::printf("saved=%s\n", out.c_str());
  std::printf("frozen_accuracy=%.4f\n", frozen);
  std::printf("fine_tuned_accuracy=%.4f\n", fine_tuned);
  return 0;
}
