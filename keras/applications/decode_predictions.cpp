#include "keras/applications/decode_predictions.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <utility>

#include "keras/applications/builder.h"

namespace keras::applications::imagenet_utils {
namespace {

constexpr int64_t kClasses = 1000;
const std::string kWhere = "decode_predictions";

using ClassIndex = std::vector<std::pair<std::string, std::string>>;  // by class number

ClassIndex read_class_index(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail<IOError>(kWhere, "a readable ImageNet class index", "cannot open " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    fail<IOError>(kWhere, "the JSON of imagenet_class_index.json in " + path, e.what());
  }
  if (!j.is_object() || j.size() != static_cast<size_t>(kClasses))
    fail<ValueError>(kWhere, "an index of 1000 classes {\"0\": [class_id, description], ...} in " + path,
                     j.is_object() ? std::to_string(j.size()) + " entries" : std::string(j.type_name()));
  ClassIndex index(kClasses);
  for (int64_t i = 0; i < kClasses; ++i) {
    const std::string key = std::to_string(i);
    const auto it = j.find(key);
    if (it == j.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_string() || !(*it)[1].is_string())
      fail<ValueError>(kWhere, "entry \"" + key + "\" of " + path + " a pair [class_id, description]",
                       it == j.end() ? "no such entry" : it->dump());
    index[static_cast<size_t>(i)] = {(*it)[0].get<std::string>(), (*it)[1].get<std::string>()};
  }
  return index;
}

}  // namespace

std::vector<std::vector<DecodedPrediction>> decode_predictions(const Tensor& preds,
                                                               const DecodePredictionsOptions& options) {
  if (preds.shape().size() != 2 || preds.shape()[1] != kClasses)
    fail<ValueError>(kWhere, "a batch of predictions (a 2D array of shape (samples, 1000))",
                     "shape " + shape_str(preds.shape()), "Pass the output of an ImageNet classifier with its top.");
  if (options.top < 1) fail<ValueError>(kWhere, "top >= 1", std::to_string(options.top));
  const std::string path =
      options.class_index_path.empty()
          ? detail::keras_cached_file(kWhere, "imagenet_class_index.json", kImagenetClassIndexUrl)
          : options.class_index_path;
  const ClassIndex index = read_class_index(path);
  const Tensor host = preds.detach().to(Device::cpu()).astype(DType::float64).contiguous();
  const double* data = host.data<double>();
  const auto top = static_cast<size_t>(std::min(options.top, kClasses));
  std::vector<std::vector<DecodedPrediction>> out;
  std::array<int64_t, kClasses> order{};
  for (int64_t n = 0; n < preds.shape()[0]; ++n) {
    const double* row = data + n * kClasses;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                      [row](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    std::vector<DecodedPrediction> best;
    for (size_t k = 0; k < top; ++k) {
      const auto& [class_id, description] = index[static_cast<size_t>(order[k])];
      best.push_back({class_id, description, row[order[k]]});
    }
    out.push_back(std::move(best));
  }
  return out;
}

}  // namespace keras::applications::imagenet_utils
