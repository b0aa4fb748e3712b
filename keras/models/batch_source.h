// Where fit / evaluate / predict take their batches from: in-memory tensors (sliced, or gathered
// in a seeded shuffled order) or a data::Dataset pipeline. Private to keras/.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "keras/data/dataset.h"
#include "backend/op_registry.h"

namespace keras {

struct BatchData {
  TensorList x, y;
  Tensor sample_weight;
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  // Batches per epoch; -1 when unknown.
  virtual int64_t steps() const = 0;
  // Starts epoch `epoch` (its shuffled order, a fresh pass over the pipeline).
  virtual void begin_epoch(int epoch) = 0;
  // The next batch of the epoch, nullopt at its end.
  virtual std::optional<BatchData> next() = 0;
  // True when the data ended before the epoch's step count (training stops, as Keras).
  virtual bool ran_out() const { return false; }
};

// Tensors with one row per sample; shuffled per epoch from (seed, epoch) when `shuffle`. With
// steps >= 1 an epoch is its first `steps` batches (at most the batches there are).
class TensorBatches : public BatchSource {
 public:
  TensorBatches(TensorList x, TensorList y, Tensor sample_weight, int64_t batch_size, bool shuffle, uint64_t seed,
                int64_t steps = -1);
  int64_t steps() const override;
  void begin_epoch(int epoch) override;
  std::optional<BatchData> next() override;

 private:
  TensorList x_, y_;
  Tensor sw_;
  int64_t n_, batch_size_;
  int64_t end_;  // rows an epoch covers: n_, or fewer under `steps`
  bool shuffle_;
  uint64_t seed_;
  std::vector<int64_t> order_;
  int64_t cursor_ = 0;
};

// Batches of a Dataset whose elements are (x), (x, y) or (x, y, sample_weight).
class DatasetBatches : public BatchSource {
 public:
  DatasetBatches(const data::Dataset& dataset, int64_t steps_per_epoch, const std::string& where,
                 data::StepsOption option = {});
  int64_t steps() const override { return it_.steps(); }
  void begin_epoch(int) override { it_.begin_epoch(); }
  std::optional<BatchData> next() override;
  bool ran_out() const override { return it_.ran_out(); }

 private:
  data::EpochIterator it_;
  std::string where_;
};

}  // namespace keras
