#include "keras/models/adapt.h"

namespace keras {

void adapt(layers::NormalizationImpl& layer, const data::Dataset& dataset) {
  const std::string where = layer.where() + " adapt(Dataset)";
  data::Iterator it = dataset.iterator();  // one pass: a reshuffling dataset moves on one epoch
  int64_t index = 0;
  auto next_x = [&]() -> std::optional<Tensor> {
    std::optional<data::Element> e = it.next();
    if (!e) return std::nullopt;
    ++index;
    return data::unpack_batch(*e, where).x;
  };
  std::optional<Tensor> first = next_x();
  if (!first) fail<ValueError>(where, "a dataset with at least one batch", "an empty dataset " + dataset.describe());
  const bool unbatched = first->rank() == 1;  // single samples: batched by 128, as Keras
  layer.adapt_batches([&]() -> std::optional<Tensor> {
    if (!unbatched) {
      std::optional<Tensor> x = first ? std::move(first) : next_x();
      first.reset();
      return x;
    }
    std::vector<Tensor> samples;
    const int64_t start = index - (first ? 1 : 0);
    if (first) samples.push_back(*first);
    first.reset();
    while (samples.size() < 128)
      if (std::optional<Tensor> x = next_x()) samples.push_back(*x);
      else break;
    if (samples.empty()) return std::nullopt;
    return data::stack(samples, where, start);
  });
}

}  // namespace keras
