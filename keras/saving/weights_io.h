// Options and report shared by the weight readers (weights_h5.h for Keras 3 `.weights.h5`,
// legacy_weights.h for Keras 2 `.h5`).
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace keras {

struct LoadWeightsOptions {
  // Match layers by name instead of by structure (Keras 3 tree) or position (legacy .h5).
  bool by_name = false;
  // Skip entries whose weight count or shapes differ (reported) instead of failing.
  bool skip_mismatch = false;
  // Saved layer name -> model layer name, applied before matching; needs by_name.
  std::map<std::string, std::string> name_map;
  // Every weight of the model must get a value and every weight entry of the file must be used,
  // else IOError listing what is left over, raised before anything changes (as PyTorch's
  // load_state_dict(strict=True)). Optimizer state counts where the load restores it (a compiled
  // model from a Keras 3 .weights.h5): then every variable of the built optimizer must be matched
  // too. Resuming from a backup wants this; Keras's own load is not strict.
  bool strict = false;
};

// What a load did. Entries are file paths ("/layers/dense/vars", "/model_weights/dense");
// weights are model variable paths ("dense/kernel").
struct LoadReport {
  std::vector<std::string> loaded;                            // model weights assigned
  std::vector<std::pair<std::string, std::string>> skipped;  // (file entry, reason)
  std::vector<std::string> missing;                           // model weights left unchanged
  // A short human-readable summary, one line per skipped entry and missing weight.
  std::string str() const;
};

}  // namespace keras
