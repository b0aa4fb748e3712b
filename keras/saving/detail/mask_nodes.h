// Internal: the masks Keras 3 records in a Functional config, written by serialize_model.
//
// Keras 3 hands a layer its input's mask only through the node's `mask` kwarg, a
// __keras_tensor__ of the operation that computed the mask: Embedding(mask_zero) records
// NotEqual(ids, 0), Masking NotEqual(x, mask_value) then Any(axis=-1), a merge layer LogicalOr of
// its inputs' masks, Concatenate OnesLike / ExpandDims, ZerosLike, LogicalOr per input, then
// Concatenate and Any (in keras/src/layers/layer.py __call__ steps 6 and 8, and each layer's
// compute_mask). Those operations are entries of the config's layer list like any other, written
// only when a recorded mask uses them. A layer that passes its mask on (Keras's default
// compute_mask) gives its output the same mask tensor. Without the kwarg a reloaded model runs
// that layer unmasked (GlobalAveragePooling1D then averages the padding too).
//
// A nested model's output mask is written as null, which is what Keras 3 writes: the outputs of a
// nested Functional carry no symbolic mask in Keras 3, and at run time Keras hands the layer after
// it the mask the inner graph computed (Layer.__call__ fills a null mask kwarg from the input), so
// the reloaded model still runs masked (fixture nested_masked, test_sequence_fixtures.cpp).
// Attention's (Keras: ConvertToTensor of the query's) is written as the query's mask itself. model_from_config ignores recorded masks
// either way (masks propagate by themselves here).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "layers/layer.h"

namespace keras::detail {

using json = nlohmann::json;

class MaskNodes {
 public:
  // `keras_tensor` writes the __keras_tensor__ of a layer output; `taken` holds the names of the
  // model's layers (operation names avoid them).
  MaskNodes(std::function<json(const KerasTensor&)> keras_tensor, std::set<std::string> taken);

  // The __keras_tensor__ of the mask Keras 3 attaches to `t`, or null; marks the operations it
  // uses as written.
  json mask_of(const KerasTensor& t);

  // The operation entries (Keras 3 form, with name and inbound_nodes) the masks returned so far
  // use, each after the layer whose call computed it: {layer, entries in creation order}.
  std::map<const Layer*, std::vector<json>> entries() const;

 private:
  struct Operation {
    json entry;             // without inbound_nodes' mask references resolved: complete
    std::vector<int> uses;  // operations its arguments reference
    const Layer* after;
    Shape shape;            // of its output, the mask
    bool used = false;
  };
  using Key = std::tuple<const Layer*, int, int>;  // layer, node index, tensor index
  // Index into ops_ of t's mask; -1: none.
  int compute(const KerasTensor& t);
  // Concatenate's mask from its inputs' (`in`, -1 where none): the operations Keras records.
  int concatenate(const LayerNode& node, const std::vector<int>& in, int axis, const Layer* after);
  int add(const std::string& class_name, const std::string& module, json config, json args,
          std::vector<int> uses, const Layer* after, Shape shape);
  json tensor_of(int op) const;
  void mark_used(int op);

  std::function<json(const KerasTensor&)> keras_tensor_;
  std::set<std::string> taken_;
  std::map<Key, int> memo_;
  std::vector<Operation> ops_;
};

}  // namespace keras::detail
