// Does the data pipeline keep training fed? Times one epoch of the Fashion-MNIST MLP
// (784-256-128-10, Adam, batch 128) fed (a) from pre-built in-memory batches and (b) from a
// Dataset pipeline (shuffle, batch, prefetch), interleaved a b a b, and prints per round the time
// the training loop waited in next(), then the median epoch times, their ratio, and the median of
// the per-round ratios (each round's two epochs run back to back, so that ratio cancels the slow
// drifts of a shared machine's speed). Not a test: timings vary with the machine.
//   build/apps/pipeline_benchmark [--rounds N]
#include <keras/keras.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace k = keras;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <class F>
double seconds(F&& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
  k::utils::set_random_seed(1);
  auto [train, test] = k::datasets::fashion_mnist::load_data();
  k::Tensor x = k::ops::reshape(train.x, {train.x.dim(0), 784}) / 255.0;
  const int64_t batch = 128;

  k::Sequential model({k::layers::Input({784}), k::layers::Dense({.units = 256, .activation = "relu"}),
                       k::layers::Dense({.units = 128, .activation = "relu"}),
                       k::layers::Dense({.units = 10, .activation = "softmax"})});
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-3}), .loss = "sparse_categorical_crossentropy"});

  // (a) The same shuffled batches, built before timing.
  std::vector<std::pair<k::Tensor, k::Tensor>> prebuilt;
  {
    auto it = k::data::EpochIterator(k::data::Dataset::from_tensor_slices({x, train.y}).shuffle(60000, 7).batch(batch));
    it.begin_epoch();
    while (auto e = it.next()) prebuilt.emplace_back((*e)[0].clone(), (*e)[1].clone());
  }
  // (b) The pipeline, doing the shuffling and batching while the model trains.
  auto pipeline = k::data::Dataset::from_tensor_slices({x, train.y}).shuffle(60000, 7).batch(batch).prefetch(2);

  auto epoch_prebuilt = [&] {
    for (const auto& [xb, yb] : prebuilt) model.train_on_batch(xb, yb);
  };
  double waited = 0;  // of the last pipeline epoch: seconds the training loop spent in next()
  auto epoch_pipeline = [&] {
    k::data::EpochIterator it(pipeline);
    it.begin_epoch();
    waited = 0;
    while (true) {
      std::optional<k::data::Element> e;
      waited += seconds([&] { e = it.next(); });
      if (!e) break;
      model.train_on_batch((*e)[0], (*e)[1]);
    }
  };
  epoch_prebuilt();  // warm-up: primitives, allocator, OpenMP pool
  std::vector<double> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(seconds(epoch_prebuilt));
    b.push_back(seconds(epoch_pipeline));
    std::printf("round %d: prebuilt %.3f s, pipeline %.3f s (%.3f s of it in next())\n", r + 1, a.back(), b.back(),
                waited);
  }
  double ma = median(a), mb = median(b);
  std::vector<double> ratios;
  for (size_t r = 0; r < a.size(); ++r) ratios.push_back(b[r] / a[r]);
  const double paired = median(ratios);
  std::printf("median epoch: prebuilt %.3f s, pipeline %.3f s, pipeline/prebuilt %.3f; median of round ratios %.3f\n",
              ma, mb, mb / ma, paired);
  std::printf(
      "{\"bench\":\"pipeline\",\"prebuilt_s\":%.4f,\"pipeline_s\":%.4f,\"ratio\":%.4f,\"paired_ratio\":%.4f,"
      "\"rounds\":%d}\n",
      ma, mb, mb / ma, paired, rounds);
  return 0;
}
