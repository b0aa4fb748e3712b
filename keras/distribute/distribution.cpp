#include "keras/distribute/distribution.h"

#include <mutex>

namespace keras::distribution {
namespace {

std::mutex g_mutex;
std::shared_ptr<const DataParallel> g_current;

void install(std::shared_ptr<const DataParallel> next) {
  std::lock_guard lock(g_mutex);
  g_current = std::move(next);
  collectives::set_training_group(g_current ? &g_current->communicator() : nullptr);
}

}  // namespace

DataParallel::DataParallel(DataParallelOptions options) : options_(std::move(options)) {
  if (options_.bucket_bytes <= 0 || options_.first_bucket_bytes <= 0)
    fail<ValueError>("DataParallel", "bucket_bytes > 0 and first_bucket_bytes > 0",
                     std::to_string(options_.bucket_bytes) + " and " + std::to_string(options_.first_bucket_bytes));
}

collectives::Communicator& DataParallel::communicator() const {
  return options_.communicator ? *options_.communicator : collectives::world();
}

std::unique_ptr<DataParallel::Scope> DataParallel::scope() const {
  auto previous = distribution();
  install(std::make_shared<const DataParallel>(*this));
  return std::unique_ptr<Scope>(new Scope(std::move(previous)));
}

DataParallel::Scope::~Scope() { install(std::move(previous_)); }

std::shared_ptr<const DataParallel> distribution() {
  std::lock_guard lock(g_mutex);
  return g_current;
}

void set_distribution(std::shared_ptr<const DataParallel> distribution) { install(std::move(distribution)); }

int initialize() { return collectives::world().size(); }
int num_processes() { return collectives::world().size(); }
int process_id() { return collectives::world().rank(); }

std::pair<int64_t, int64_t> shard_range(int64_t rows, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size)
    fail<ValueError>("shard_range", "0 <= rank < size", "rank " + std::to_string(rank) + " of " + std::to_string(size));
  const int64_t base = rows / size, extra = rows % size;
  const int64_t first = rank * base + std::min<int64_t>(rank, extra);
  return {first, first + base + (rank < extra ? 1 : 0)};
}

}  // namespace keras::distribution
