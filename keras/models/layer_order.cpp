#include "keras/models/layer_order.h"

#include <algorithm>
#include <map>
#include <set>

namespace keras::detail {

std::vector<size_t> keras_input_order(const LayerNode& node) {
  const auto& keywords = node.args.keywords;
  const size_t positional = node.inputs.size() - std::min(keywords.size(), node.inputs.size());
  std::vector<size_t> order(node.inputs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(positional), order.end(),
                   [&](size_t a, size_t b) { return keywords[a - positional] < keywords[b - positional]; });
  return order;
}

std::vector<LayerPtr> keras_layer_order(const std::vector<KerasTensor>& inputs, const std::vector<KerasTensor>& outputs) {
  std::map<const Layer*, int> first_seen;                // traversal index of each layer
  std::map<const Layer*, LayerPtr> handle;
  std::map<const LayerNode*, const Layer*> layer_of;
  std::vector<const LayerNode*> post_order;              // inputs first, as Keras's nodes_in_decreasing_depth
  std::set<const LayerNode*> finished;

  // Depth-first walk: a layer is numbered when its node is entered, a node listed when left.
  struct Frame {
    const KerasTensor* t;
    std::vector<size_t> order;  // the node's inputs as Keras flattens its arguments
    size_t next = 0;
  };
  std::vector<Frame> stack;
  auto enter = [&](const KerasTensor& t) {
    if (finished.count(t.node.get())) return;
    first_seen.emplace(t.layer.get(), static_cast<int>(first_seen.size()));
    handle.emplace(t.layer.get(), t.layer);
    layer_of[t.node.get()] = t.layer.get();
    stack.push_back({&t, keras_input_order(*t.node)});
  };
  for (const auto& out : outputs) {
    enter(out);
    while (!stack.empty()) {
      Frame& f = stack.back();
      const LayerNode& node = *f.t->node;
      if (f.next < node.inputs.size()) {
        enter(node.inputs[f.order[f.next++]]);  // may reallocate: `f` is not used after this
        continue;
      }
      // A node reached twice before it is finished is still entered once: Keras marks it
      // finished on leaving, and a node cannot be its own ancestor in an acyclic graph.
      if (finished.insert(&node).second) post_order.push_back(&node);
      stack.pop_back();
    }
  }

  // Depths, walking from the outputs back to the inputs.
  std::map<const LayerNode*, int> node_depth;
  std::map<const Layer*, int> layer_depth;
  std::vector<const Layer*> depth_insertion;  // Keras's dict order, for ties of unused inputs
  for (auto it = post_order.rbegin(); it != post_order.rend(); ++it) {
    const LayerNode* node = *it;
    const Layer* layer = layer_of.at(node);
    int depth = node_depth.emplace(node, 0).first->second;
    auto [at, fresh] = layer_depth.emplace(layer, depth);
    if (fresh) depth_insertion.push_back(layer);
    depth = std::max(depth, at->second);  // a shared layer keeps the deepest of its calls
    at->second = depth;
    node_depth[node] = depth;
    for (const auto& in : node->inputs) {
      int& d = node_depth[in.node.get()];
      d = std::max(d, depth + 1);
    }
  }
  // Inputs the outputs do not use still belong to the model.
  for (const auto& in : inputs)
    if (!layer_depth.count(in.layer.get())) {
      layer_depth[in.layer.get()] = 0;
      first_seen[in.layer.get()] = -1;
      handle.emplace(in.layer.get(), in.layer);
      depth_insertion.push_back(in.layer.get());
    }

  std::vector<const Layer*> order = depth_insertion;
  std::stable_sort(order.begin(), order.end(), [&](const Layer* a, const Layer* b) {
    const int da = layer_depth.at(a), db = layer_depth.at(b);
    return da != db ? da > db : first_seen.at(a) < first_seen.at(b);
  });
  std::vector<LayerPtr> out;
  out.reserve(order.size());
  for (const Layer* l : order) out.push_back(handle.at(l));
  return out;
}

}  // namespace keras::detail
