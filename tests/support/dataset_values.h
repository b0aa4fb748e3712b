// The elements of a Dataset as plain numbers, so tests compare whole passes with EXPECT_EQ
// (shared by test_dataset and test_dataset_threads).
#pragma once
#include <cstdint>
#include <vector>

#include "keras/data/dataset.h"

namespace keras::testing {

// One row of doubles per element: the values of its component `component`.
inline std::vector<std::vector<double>> collect(const data::Dataset& ds, size_t component = 0) {
  std::vector<std::vector<double>> out;
  for (const data::Element& e : ds.iterator()) {
    std::vector<double> v;
    for (int64_t i = 0; i < e[component].numel(); ++i) v.push_back(element_as_double(e[component], i));
    out.push_back(v);
  }
  return out;
}

// One integer per element of a dataset of scalars (Dataset::range and what is built on it).
inline std::vector<int64_t> scalars(const data::Dataset& ds) {
  std::vector<int64_t> out;
  for (const data::Element& e : ds.iterator()) out.push_back(static_cast<int64_t>(e[0].item()));
  return out;
}

}  // namespace keras::testing
