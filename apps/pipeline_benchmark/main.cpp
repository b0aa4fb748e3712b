// Does the data pipeline keep training fed? Times epochs of the Fashion-MNIST MLP (784-256-128-10,
// Adam, batch 128) fed (a) from pre-built in-memory batches and (b) from a Dataset pipeline
// (shuffle, batch, prefetch), and prints per epoch both times, the time the loop waited in next(),
// then the medians and the median of the per-epoch ratios.
//
// A shared machine's speed drifts within seconds, so the two sides alternate in blocks of
// --block steps (default 47, a tenth of an epoch): every pipeline epoch is timed as the sum of its
// blocks, and the same number of pre-built steps, run in the blocks between, as its pre-built
// twin. With sleeping OpenMP threads (OMP_WAIT_POLICY=passive), the pipeline's idle-priority
// copier may finish its next batches while the pre-built side runs (at most buffer_size = 2 of
// every 47, a head start of ~0.15 ms on ~95 ms); with libgomp's default spinning the training
// step's own team copies each batch when it is taken, so there is no head start. --block 469
// alternates whole epochs. --only prebuilt|pipeline runs one side alone (for a profiler).
// Not a test: timings vary with the machine.
//   build/apps/pipeline_benchmark [--rounds N] [--block STEPS] [--only prebuilt|pipeline]
#include <keras/keras.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace k = keras;

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int main(int argc, char** argv) {
  int rounds = 5;
  int64_t block = 47;
  std::string only;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--block") == 0) block = std::max(1, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  }
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
  const bool run_prebuilt = only != "pipeline", run_pipeline = only != "prebuilt";

  size_t next_prebuilt = 0;
  auto prebuilt_steps = [&](int64_t n) {  // seconds for n pre-built steps
    const double t0 = now();
    for (int64_t i = 0; i < n; ++i) {
      const auto& [xb, yb] = prebuilt[next_prebuilt];
      next_prebuilt = (next_prebuilt + 1) % prebuilt.size();
      model.train_on_batch(xb, yb);
    }
    return now() - t0;
  };
  prebuilt_steps(static_cast<int64_t>(prebuilt.size()));  // warm-up: primitives, allocator, OpenMP pool

  std::vector<double> a, b, ratios;
  for (int r = 0; r < rounds; ++r) {
    k::data::EpochIterator it(pipeline);
    it.begin_epoch();
    double t_prebuilt = 0, t_pipeline = 0, waited = 0;
    bool more = true;
    while (more) {
      int64_t steps = 0;
      if (run_pipeline) {
        const double t0 = now();
        for (; steps < block; ++steps) {
          const double w0 = now();
          auto e = it.next();
          waited += now() - w0;
          if (!e) {
            more = false;
            break;
          }
          model.train_on_batch((*e)[0], (*e)[1]);
        }
        t_pipeline += now() - t0;
      } else {
        steps = std::min<int64_t>(block, static_cast<int64_t>(prebuilt.size()) - static_cast<int64_t>(next_prebuilt));
        more = next_prebuilt + static_cast<size_t>(steps) < prebuilt.size();
      }
      if (run_prebuilt) t_prebuilt += prebuilt_steps(steps);
    }
    a.push_back(run_prebuilt ? t_prebuilt : 1.0);
    b.push_back(run_pipeline ? t_pipeline : 1.0);
    ratios.push_back(b.back() / a.back());
    std::printf("epoch %d: prebuilt %.3f s, pipeline %.3f s (%.3f s of it in next()), ratio %.3f\n", r + 1, a.back(),
                b.back(), waited, ratios.back());
  }
  const double ma = median(a), mb = median(b), paired = median(ratios);
  std::printf("median epoch: prebuilt %.3f s, pipeline %.3f s, pipeline/prebuilt %.3f; median of epoch ratios %.3f\n",
              ma, mb, mb / ma, paired);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::printf(
      "{\"bench\":\"pipeline\",\"prebuilt_s\":%.4f,\"pipeline_s\":%.4f,\"ratio\":%.4f,\"paired_ratio\":%.4f,"
      "\"rounds\":%d,\"block\":%lld,\"threads\":%d,\"omp_wait_policy\":\"%s\"}\n",
      ma, mb, mb / ma, paired, rounds, static_cast<long long>(block), k::num_threads(), policy ? policy : "");
  return 0;
}
