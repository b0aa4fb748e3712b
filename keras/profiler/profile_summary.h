// The per-layer table of a profile, as Model::summary prints parameters: for each layer path the
// kernel time of its ops, forward and backward (a gradient op counts for the layer whose forward
// op it differentiates), the share of all op time, and FLOP/s where its ops' FLOPs are known
// (conv, matmul, dense). Below it: the steps, the data waits, the callbacks and peak memory.
//
//   keras::profiler::start("logs"); model.fit(...); keras::profiler::stop();
//   keras::profiler::print_summary();
#pragma once
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "keras/profiler/profiler.h"

namespace keras::profiler {

struct LayerProfile {
  std::string path;        // "sequential/conv2d"; "(outside layers)" for ops run by no layer (loss, optimizer)
  std::string class_name;  // "" when no eager call of it was seen
  int64_t calls = 0;       // eager calls (layer events)
  int64_t ops = 0;         // op runs attributed to it
  double forward_seconds = 0;
  double backward_seconds = 0;
  double flops = 0;          // of the ops whose FLOPs are known
  double flops_seconds = 0;  // kernel time of those ops
  double seconds() const { return forward_seconds + backward_seconds; }
  // FLOP/s over the ops with known FLOPs; 0 when none.
  double flops_per_second() const { return flops_seconds > 0 ? flops / flops_seconds : 0; }
};

// One row per layer path seen in the trace, most time first.
std::vector<LayerProfile> layer_profile(const Trace& trace);

// The table and its footer, for `trace` (default: the last stopped profile; StateError if none).
// `max_rows` > 0 keeps the slowest rows only.
std::string summary(const Trace& trace, size_t max_rows = 0);
std::string summary(size_t max_rows = 0);
void print_summary(std::ostream& os = std::cout, size_t max_rows = 0);

}  // namespace keras::profiler
