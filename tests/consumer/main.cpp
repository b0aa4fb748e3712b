// Built against the installed library only: proves the installed headers are complete and
// self-contained and that keras::keras links and runs.
#include <keras/keras.h>

#include <cmath>
#include <cstdio>

#include "backend/ops.h"    // the library's own include style resolves in the install tree too
#include "backend/tensor.h"

// The public headers must not drag oneDNN into user code.
#ifdef ONEAPI_DNNL_DNNL_HPP
#error "a public header includes oneDNN (oneapi/dnnl/dnnl.hpp)"
#endif

namespace k = keras;

int main() {
  k::Tensor a = k::Tensor::from_vector<float>({1, 2, 3}, {3});
  k::Tensor c = k::ops::add(a, k::Tensor::full({3}, 0.5));
  std::printf("add -> %s\n", c.str().c_str());
  if (c.to_vector<float>()[2] != 3.5f) {
    std::printf("consumer FAILED: expected 3.5, got %g\n", c.to_vector<float>()[2]);
    return 1;
  }

  // A tiny model through the whole public API: a linearly separable 2-class problem.
  k::Tensor x = k::random::normal({64, 4}, 0, 1, uint64_t{7});
  std::vector<int64_t> labels;
  for (float v : k::ops::sum(x, {1}, false).to_vector<float>()) labels.push_back(v > 0 ? 1 : 0);
  k::Tensor y = k::Tensor::from_vector(labels);
  k::Sequential model({k::layers::Input({4}), k::layers::Dense({.units = 2, .activation = "softmax"})});
  model.compile({.optimizer = k::optimizers::Adam({.learning_rate = 1e-2}),
                 .loss = "sparse_categorical_crossentropy",
                 .metrics = {"accuracy"}});
  model.fit(x, y, {.batch_size = 16, .epochs = 3, .verbose = 0});
  const double loss = model.evaluate(x, y, {.verbose = 0}).at("loss");
  std::printf("evaluate loss %.4f\n", loss);
  if (!std::isfinite(loss)) {
    std::printf("consumer FAILED: expected a finite loss, got %g\n", loss);
    return 1;
  }
  std::printf("consumer ok\n");
  return 0;
}
