#include "keras/export/onnx_graph.h"

#include "backend/errors.h"

namespace keras::onnx {

Attr attr(const std::string& name, int64_t value) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Int;
  a.i = value;
  return a;
}
Attr attr(const std::string& name, int value) { return attr(name, static_cast<int64_t>(value)); }
Attr attr(const std::string& name, double value) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Float;
  a.f = static_cast<float>(value);
  return a;
}
Attr attr(const std::string& name, const std::string& value) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::String;
  a.s = value;
  return a;
}
Attr attr(const std::string& name, const char* value) { return attr(name, std::string(value)); }
Attr attr(const std::string& name, const std::vector<int64_t>& values) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Ints;
  a.ints = values;
  return a;
}
Attr attr_floats(const std::string& name, const std::vector<float>& values) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Floats;
  a.floats = values;
  return a;
}

Attr attr_strings(const std::string& name, const std::vector<std::string>& values) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Strings;
  a.strings = values;
  return a;
}
Attr attr_graph(const std::string& name, std::shared_ptr<const Graph> graph) {
  Attr a;
  a.name = name;
  a.kind = Attr::Kind::Graph;
  a.graph = std::move(graph);
  return a;
}

std::shared_ptr<Graph> Graph::subgraph() const {
  auto g = std::make_shared<Graph>(opset_);
  g->names_ = names_;
  return g;
}

std::string Graph::unique(const std::string& base) {
  if (names_->taken.insert(base).second) return base;
  int& k = names_->next_suffix[base];
  for (;;) {
    std::string candidate = base + "_" + std::to_string(++k);
    if (names_->taken.insert(candidate).second) return candidate;
  }
}

void Graph::reserve(const std::string& name) {
  if (!names_->taken.insert(name).second)
    fail<ValueError>("ONNX export", "unique input and output names", "'" + name + "' twice",
                     "Give the model's inputs and output layers distinct names.");
}

std::string Graph::add(const std::string& op_type, const std::vector<std::string>& inputs, std::vector<Attr> attrs,
                       const std::string& hint) {
  std::string out = unique(hint);
  add_named(op_type, inputs, std::move(attrs), out);
  return out;
}

std::vector<std::string> Graph::add_multi(const std::string& op_type, const std::vector<std::string>& inputs,
                                          std::vector<Attr> attrs, const std::string& hint, int n) {
  Node node;
  node.op_type = op_type;
  node.inputs = inputs;
  node.attrs = std::move(attrs);
  for (int k = 0; k < n; ++k) node.outputs.push_back(unique(hint + "_" + std::to_string(k)));
  node.name = node.outputs[0];
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

void Graph::add_named(const std::string& op_type, const std::vector<std::string>& inputs, std::vector<Attr> attrs,
                      const std::string& output) {
  Node n;
  n.op_type = op_type;
  n.name = output;  // node names only need to be unique, and the output's name is
  n.inputs = inputs;
  n.outputs = {output};
  n.attrs = std::move(attrs);
  nodes_.push_back(std::move(n));
}

std::string Graph::constant(const std::string& hint, const HostTensor& t) {
  Initializer init;
  init.name = unique(hint);
  init.dims = t.shape;
  init.dtype = DType::float32;
  init.floats = t.data;
  initializers_.push_back(std::move(init));
  return initializers_.back().name;
}

std::string Graph::constant_ints(const std::string& hint, const std::vector<int64_t>& values) {
  Initializer init;
  init.name = unique(hint);
  init.dims = {static_cast<int64_t>(values.size())};
  init.dtype = DType::int64;
  init.ints = values;
  initializers_.push_back(std::move(init));
  return initializers_.back().name;
}

std::string Graph::constant_scalar(const std::string& hint, float value) { return constant(hint, HostTensor{{}, {value}}); }

std::string Graph::weight(const std::string& key, const std::string& hint, const std::function<HostTensor()>& make) {
  auto it = weights_.find(key);
  if (it != weights_.end()) return it->second;
  std::string name = constant(hint, make());
  weights_.emplace(key, name);
  return name;
}

int64_t Graph::onnx_axis(const Value& v, int64_t axis) {
  const int64_t rank = v.rank();
  const int64_t a = normalize_axis(axis, rank, "ONNX export axis");
  if (!v.channels_first || a == 0) return a;
  return a == rank - 1 ? 1 : a + 1;
}

std::string Graph::transpose_cached(const std::string& name, const std::vector<int64_t>& perm, const char* suffix) {
  std::string key = name + "|";
  for (int64_t p : perm) key += std::to_string(p) + ",";
  auto it = transposed_.find(key);
  if (it != transposed_.end()) return it->second;
  std::string out = add("Transpose", {name}, {attr("perm", perm)}, name + suffix);
  transposed_.emplace(key, out);
  return out;
}

std::string Graph::as_keras(const Value& v) {
  if (!v.channels_first) return v.name;
  std::vector<int64_t> perm{0};  // channels-first -> channels-last
  for (int64_t a = 2; a < v.rank(); ++a) perm.push_back(a);
  perm.push_back(1);
  return transpose_cached(v.name, perm, "_nhwc");
}

std::string Graph::as_channels_first(const Value& v) {
  if (v.channels_first) return v.name;
  if (v.rank() < 3) fail<ValueError>("ONNX export", "a tensor of rank >= 3 to make channels-first", shape_str(v.shape));
  std::vector<int64_t> perm{0, v.rank() - 1};
  for (int64_t a = 1; a < v.rank() - 1; ++a) perm.push_back(a);
  return transpose_cached(v.name, perm, "_nchw");
}

std::string Graph::reduce(const std::string& op_type, const std::string& x, const std::vector<int64_t>& axes,
                          bool keepdims, const std::string& hint) {
  // ReduceSum takes its axes as an input since opset 13, the others since opset 18.
  if (op_type == "ReduceSum" || opset_ >= 18)
    return add(op_type, {x, constant_ints(hint + "_axes", axes)}, {attr("keepdims", keepdims ? 1 : 0)}, hint);
  return add(op_type, {x}, {attr("axes", axes), attr("keepdims", keepdims ? 1 : 0)}, hint);
}

}  // namespace keras::onnx
