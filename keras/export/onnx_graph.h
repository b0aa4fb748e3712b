// OnnxGraph: an ONNX graph under construction, in plain C++ (no protobuf), so that the layer
// emitters and the model walk build without the ONNX schema and only onnx_writer.cpp needs it.
//
// Layouts: Keras keeps activations channels-last (NHWC); ONNX convolutions and pools want
// channels-first (NCHW). A Value remembers which of the two its ONNX tensor holds, and
// as_keras() / as_channels_first() insert a Transpose only when a consumer needs the other one
// (once per tensor: the result is cached), so a chain of convolutions, pools and elementwise layers
// runs channels-first with no transposes between them, and the graph's inputs and outputs keep
// the user's Keras layout.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backend/dtype.h"
#include "backend/shape.h"

namespace keras::onnx {

class Graph;

// An attribute of a node (the ONNX AttributeProto kinds this exporter writes).
struct Attr {
  enum class Kind { Int, Float, String, Ints, Floats, Strings, Graph };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  float f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<std::string> strings;
  std::shared_ptr<const Graph> graph;  // Kind::Graph: a subgraph (Scan's body)
};
Attr attr(const std::string& name, int64_t value);
Attr attr(const std::string& name, int value);
Attr attr(const std::string& name, double value);
Attr attr(const std::string& name, const std::string& value);
Attr attr(const std::string& name, const char* value);
Attr attr(const std::string& name, const std::vector<int64_t>& values);
Attr attr_floats(const std::string& name, const std::vector<float>& values);
Attr attr_strings(const std::string& name, const std::vector<std::string>& values);
Attr attr_graph(const std::string& name, std::shared_ptr<const Graph> graph);

struct Node {
  std::string op_type, name;
  std::vector<std::string> inputs, outputs;
  std::vector<Attr> attrs;
};

// A constant tensor: float32 weights or int64 shape/axis/index data (one of the two is used).
struct Initializer {
  std::string name;
  Shape dims;
  DType dtype = DType::float32;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  size_t nbytes() const { return dtype == DType::int64 ? ints.size() * 8 : floats.size() * 4; }
};

// A graph input or output: Keras shape (-1 = unknown; axis 0 is the batch).
struct ValueInfo {
  std::string name;
  Shape shape;
  DType dtype = DType::float32;
  std::string doc = {};  // the ONNX doc_string: what a runtime must know to feed or read it
};

// A state that a stateful recurrent layer carries from one run of the graph into the next: graph
// input `input` holds it before the run, graph output `output` after it (keras/export/stateful.h).
struct CarriedState {
  std::string layer;          // the Keras layer
  std::string input, output;  // graph input and output names
  Shape shape;                // the Keras shape of the state (batch -1)
};

// A Keras tensor as the graph holds it.
struct Value {
  std::string name;           // the ONNX tensor
  Shape shape;                // the Keras shape (batch -1), whatever the layout below
  DType dtype = DType::float32;
  bool channels_first = false;  // the ONNX tensor is the Keras tensor with its last axis moved to 1
  // The Keras mask the tensor carries (Embedding mask_zero, Masking, and the layers that pass it
  // on): an ONNX bool tensor of the Keras mask's shape (the tensor's without its last axis:
  // (batch, steps) for sequences), true = a real step; "" when none (keras/export/masks.h).
  std::string mask = {};
  int rank() const { return static_cast<int>(shape.size()); }
};

// A weight prepared for ONNX (permuted, folded), in host memory.
struct HostTensor {
  Shape shape;
  std::vector<float> data;
};

class Graph {
 public:
  explicit Graph(int opset) : opset_(opset), names_(std::make_shared<Names>()) {}
  int opset() const { return opset_; }
  // An empty graph for a control-flow body (Scan): it shares this graph's names, since ONNX wants
  // a subgraph's tensor names distinct from every name of its outer graphs, and may read this
  // graph's tensors (weights) by name.
  std::shared_ptr<Graph> subgraph() const;

  // A tensor name not used yet, from `base` ("conv2d/Conv" -> "conv2d/Conv_1" when taken).
  std::string unique(const std::string& base);
  // Reserves an exact name (graph inputs and outputs); ValueError when it is taken.
  void reserve(const std::string& name);

  // Appends a node with one output named after `hint`; returns the output's name.
  std::string add(const std::string& op_type, const std::vector<std::string>& inputs, std::vector<Attr> attrs,
                  const std::string& hint);
  // A node with `n` outputs named after `hint` (_0, _1, ...).
  std::vector<std::string> add_multi(const std::string& op_type, const std::vector<std::string>& inputs,
                                     std::vector<Attr> attrs, const std::string& hint, int n);
  // The same with an exact output name (reserved by the caller).
  void add_named(const std::string& op_type, const std::vector<std::string>& inputs, std::vector<Attr> attrs,
                 const std::string& output);

  // Float32 / int64 constants as initializers.
  std::string constant(const std::string& hint, const HostTensor& t);
  std::string constant_ints(const std::string& hint, const std::vector<int64_t>& values);
  std::string constant_scalar(const std::string& hint, float value);
  // A weight initializer made once per `key` (a shared layer called twice reuses it).
  std::string weight(const std::string& key, const std::string& hint, const std::function<HostTensor()>& make);

  // The value's tensor in Keras's layout / channels-first (rank >= 3), transposing once if needed.
  std::string as_keras(const Value& v);
  std::string as_channels_first(const Value& v);
  // Which ONNX axis holds Keras axis `axis` (negative counts from the end) of `v`.
  static int64_t onnx_axis(const Value& v, int64_t axis);

  // ReduceMean/ReduceMax/... over `axes` (opset 18 moved axes from an attribute to an input).
  std::string reduce(const std::string& op_type, const std::string& x, const std::vector<int64_t>& axes, bool keepdims,
                     const std::string& hint);

  void add_input(const ValueInfo& v) { inputs_.push_back(v); }
  void add_output(const ValueInfo& v) { outputs_.push_back(v); }
  // Records a carried state (its input is added by the caller; build_graph adds its output after
  // the model's own outputs, so that a model's outputs keep their positions).
  void carry_state(CarriedState s) { carried_.push_back(std::move(s)); }
  const std::vector<CarriedState>& carried_states() const { return carried_; }
  // The model's doc_string and metadata_props (key -> value), for the writer.
  void set_doc(std::string doc) { doc_ = std::move(doc); }
  const std::string& doc() const { return doc_; }
  void set_metadata(const std::string& key, std::string value) { metadata_[key] = std::move(value); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Initializer>& initializers() const { return initializers_; }
  const std::vector<ValueInfo>& inputs() const { return inputs_; }
  const std::vector<ValueInfo>& outputs() const { return outputs_; }

 private:
  std::string transpose_cached(const std::string& name, const std::vector<int64_t>& perm, const char* suffix);
  struct Names {
    std::set<std::string> taken;
    std::map<std::string, int> next_suffix;
  };
  int opset_;
  std::shared_ptr<Names> names_;
  std::vector<Node> nodes_;
  std::vector<Initializer> initializers_;
  std::vector<ValueInfo> inputs_, outputs_;
  std::vector<CarriedState> carried_;
  std::string doc_;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, std::string> weights_;     // key -> initializer
  std::map<std::string, std::string> transposed_;  // name + perm -> transposed name
};

}  // namespace keras::onnx
