// The walk from a Keras model to an onnx::Graph: checks every layer has an emitter, then replays
// the functional graph call by call (nested models inlined), folding Conv -> BatchNormalization
// pairs, and names the graph's inputs and outputs after the Keras model's.
#pragma once
#include "keras/export/export.h"
#include "keras/export/onnx_graph.h"

namespace keras::onnx {

// NotImplementedError naming every layer of `model` (nested ones included) whose class has no
// emitter; nothing is built.
void check_exportable(const Model& model);

// The whole graph in memory. Throws as export_model does (nothing is written here).
Graph build_graph(const Model& model, const ExportOptions& options);

}  // namespace keras::onnx
