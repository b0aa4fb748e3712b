// Exporting a model for deployment without this library: ONNX files that ONNX Runtime (or any
// ONNX runtime) runs, as Keras's model.export(path, format="onnx").
//
//   keras::export_model(model, "model.onnx", {.opset = 17, .dynamic_batch = true});
//
// What is written: the model's inference computation. Dropout, noise and augmentation layers are
// gone; BatchNormalization uses its moving statistics, folded into the convolution before it
// where that convolution's output feeds nothing else; nested models are inlined and a shared
// layer's weights are stored once. Inputs and outputs keep the Keras model's layout (NHWC) and
// names (the InputLayers' and the output layers' names); convolutions run channels-first inside,
// with transposes only where a layout change is needed. A stateful recurrent layer's states are
// extra graph inputs and outputs, fed from one run to the next (keras/export/stateful.h says how;
// the file's doc_string too). Weights are initializers, in an external
// "<path>.data" file (ONNX external data) when they are too large for one protobuf message.
//
// Errors: a layer without an ONNX mapping is a NotImplementedError naming every such layer and
// its class; options a mapping cannot express (e.g. Resizing with crop_to_aspect_ratio) are one
// naming the layer. Both are raised before anything is written, and a failed write leaves no
// file behind (the files are written through a temporary file and renamed). Without the ONNX
// schema at build time (Debian's libonnx-dev), export raises NotImplementedError saying so.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace keras {

class Model;

struct ExportOptions {
  std::string format = "onnx";  // the only format so far
  int opset = 17;               // ONNX opset of the default domain, 17 to 21
  // The batch axis as a symbolic dimension "batch" (any batch size runs); false fixes it to
  // batch_size.
  bool dynamic_batch = true;
  int64_t batch_size = 1;
  // Weights above this many bytes in total go to "<path>.data" (protobuf messages stop at 2 GiB);
  // 0 puts every tensor of 1 KiB or more there.
  int64_t external_data_threshold = int64_t{1} << 31;
};

// Writes `model` (a built Sequential or functional Model) to `path` as `options` says.
// ValueError for a bad option or an unbuilt model, NotImplementedError as above, IOError when the
// file cannot be written.
void export_model(const Model& model, const std::string& path, const ExportOptions& options = {});

// Whether this build can write ONNX files (it was built with the ONNX schema).
bool onnx_export_available();

// The Keras layer classes export_model maps to ONNX, sorted.
std::vector<std::string> onnx_exportable_classes();

}  // namespace keras
