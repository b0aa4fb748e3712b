// export_model: the graph built in memory (model_graph.h), then written as an ONNX ModelProto
// through the official schema (Debian's libonnx-dev: onnx/onnx_pb.h and libonnx_proto), only
// here, so that the rest of the exporter builds without it.
#include <filesystem>

#include "backend/errors.h"
#include "keras/export/emitter.h"
#include "keras/export/export.h"
#include "keras/export/model_graph.h"
#include "keras/models/model.h"
#include "keras/utils/file_util.h"

#ifdef KERAS_WITH_ONNX
#include <onnx/onnx_pb.h>
#endif

namespace keras {

std::vector<std::string> onnx_exportable_classes() {
  std::vector<std::string> out;
  for (const auto& k : onnx::exportable_classes())
    if (k != onnx::kOpLayerKey) out.push_back(k);
  return out;
}

#ifdef KERAS_WITH_ONNX

bool onnx_export_available() { return true; }

namespace {

constexpr int64_t kExternalMinBytes = 1024;  // smaller tensors stay inline, as onnx.save does

int onnx_dtype(DType t) {
  switch (t) {
    case DType::float32: return ::onnx::TensorProto::FLOAT;
    case DType::float64: return ::onnx::TensorProto::DOUBLE;
    case DType::int32: return ::onnx::TensorProto::INT32;
    case DType::int64: return ::onnx::TensorProto::INT64;
    case DType::boolean: return ::onnx::TensorProto::BOOL;
  }
  return ::onnx::TensorProto::UNDEFINED;
}

// ONNX's IR version for an opset (onnx/helper.py VERSION_TABLE).
int64_t ir_version(int opset) { return opset <= 18 ? 8 : opset <= 20 ? 9 : 10; }

void fill_value_info(::onnx::ValueInfoProto& v, const onnx::ValueInfo& info, const ExportOptions& o) {
  v.set_name(info.name);
  if (!info.doc.empty()) v.set_doc_string(info.doc);
  auto* tensor = v.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx_dtype(info.dtype));
  auto* shape = tensor->mutable_shape();
  for (size_t a = 0; a < info.shape.size(); ++a) {
    auto* d = shape->add_dim();
    if (a == 0 && o.dynamic_batch) d->set_dim_param("batch");
    else if (a == 0) d->set_dim_value(o.batch_size);
    else if (info.shape[a] >= 0) d->set_dim_value(info.shape[a]);
  }
}

void fill_subgraph(::onnx::GraphProto& graph, const onnx::Graph& g, const ExportOptions& o);

void fill_node(::onnx::NodeProto& n, const onnx::Node& node, const ExportOptions& o) {
  n.set_op_type(node.op_type);
  n.set_name(node.name);
  for (const auto& i : node.inputs) n.add_input(i);
  for (const auto& o : node.outputs) n.add_output(o);
  for (const auto& a : node.attrs) {
    auto* p = n.add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case onnx::Attr::Kind::Int: p->set_type(::onnx::AttributeProto::INT); p->set_i(a.i); break;
      case onnx::Attr::Kind::Float: p->set_type(::onnx::AttributeProto::FLOAT); p->set_f(a.f); break;
      case onnx::Attr::Kind::String: p->set_type(::onnx::AttributeProto::STRING); p->set_s(a.s); break;
      case onnx::Attr::Kind::Ints:
        p->set_type(::onnx::AttributeProto::INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
      case onnx::Attr::Kind::Floats:
        p->set_type(::onnx::AttributeProto::FLOATS);
        for (float v : a.floats) p->add_floats(v);
        break;
      case onnx::Attr::Kind::Strings:
        p->set_type(::onnx::AttributeProto::STRINGS);
        for (const auto& v : a.strings) p->add_strings(v);
        break;
      case onnx::Attr::Kind::Graph:
        p->set_type(::onnx::AttributeProto::GRAPH);
        fill_subgraph(*p->mutable_g(), *a.graph, o);
        break;
    }
  }
}

// Little-endian bytes of an initializer (the machines this builds for are little-endian).
std::string raw_bytes(const onnx::Initializer& init) {
  const char* p = init.dtype == DType::int64 ? reinterpret_cast<const char*>(init.ints.data())
                                             : reinterpret_cast<const char*>(init.floats.data());
  return std::string(p, init.nbytes());
}

// A control-flow body: its own inputs, outputs, nodes and (small, inline) constants.
void fill_subgraph(::onnx::GraphProto& graph, const onnx::Graph& g, const ExportOptions& o) {
  graph.set_name(g.outputs().empty() ? "body" : g.outputs()[0].name + "_body");
  for (const auto& v : g.inputs()) fill_value_info(*graph.add_input(), v, o);
  for (const auto& v : g.outputs()) fill_value_info(*graph.add_output(), v, o);
  for (const auto& n : g.nodes()) fill_node(*graph.add_node(), n, o);
  for (const auto& init : g.initializers()) {
    auto* t = graph.add_initializer();
    t->set_name(init.name);
    for (int64_t d : init.dims) t->add_dims(d);
    t->set_data_type(onnx_dtype(init.dtype));
    t->set_raw_data(raw_bytes(init));
  }
}

}  // namespace

void export_model(const Model& model, const std::string& path, const ExportOptions& options) {
  const onnx::Graph g = onnx::build_graph(model, options);
  ::onnx::ModelProto m;
  m.set_ir_version(ir_version(options.opset));
  m.set_producer_name("keras-cpp");
  m.set_producer_version("0.1.0");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(options.opset);
  auto* graph = m.mutable_graph();
  graph->set_name(model.name());
  if (!g.doc().empty()) {
    m.set_doc_string(g.doc());
    graph->set_doc_string(g.doc());
  }
  for (const auto& [key, value] : g.metadata()) {
    auto* p = m.add_metadata_props();
    p->set_key(key);
    p->set_value(value);
  }
  for (const auto& v : g.inputs()) fill_value_info(*graph->add_input(), v, options);
  for (const auto& v : g.outputs()) fill_value_info(*graph->add_output(), v, options);
  for (const auto& n : g.nodes()) fill_node(*graph->add_node(), n, options);

  int64_t total = 0;
  for (const auto& init : g.initializers()) total += static_cast<int64_t>(init.nbytes());
  const bool external = total > options.external_data_threshold;
  const std::string data_name = std::filesystem::path(path).filename().string() + ".data";
  std::string data;
  for (const auto& init : g.initializers()) {
    auto* t = graph->add_initializer();
    t->set_name(init.name);
    for (int64_t d : init.dims) t->add_dims(d);
    t->set_data_type(onnx_dtype(init.dtype));
    const std::string bytes = raw_bytes(init);
    if (external && static_cast<int64_t>(bytes.size()) >= kExternalMinBytes) {
      t->set_data_location(::onnx::TensorProto::EXTERNAL);
      auto add = [&](const std::string& k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      add("location", data_name);
      add("offset", std::to_string(data.size()));
      add("length", std::to_string(bytes.size()));
      data += bytes;
    } else {
      t->set_raw_data(bytes);
    }
  }
  std::string bytes;
  if (!m.SerializeToString(&bytes))
    fail<IOError>("ONNX export to '" + path + "'", "a model protobuf under 2 GiB", "a serialisation failure",
                  "Lower external_data_threshold so that the weights go to the external data file.");
  if (external) write_file_atomic((std::filesystem::path(path).parent_path() / data_name).string(), data);
  write_file_atomic(path, bytes);
}

#else

bool onnx_export_available() { return false; }

void export_model(const Model& model, const std::string& path, const ExportOptions& options) {
  onnx::build_graph(model, options);  // the model's own errors first
  fail<NotImplementedError>("ONNX export to '" + path + "'", "a library built with the ONNX schema",
                            "a build without it",
                            "Install libonnx-dev and libprotobuf-dev (bash scripts/setup.sh) and rebuild.");
}

#endif

void Model::export_model(const std::string& path) const { keras::export_model(*this, path); }
void Model::export_model(const std::string& path, const ExportOptions& options) const {
  keras::export_model(*this, path, options);
}

}  // namespace keras
