// ConvLSTMCell (the cell of ConvLSTM1D / 2D / 3D) over a sequence of images, in standard ONNX
// ops: ONNX has no convolutional recurrent operator, so a Scan (scan_recurrence.h) runs a body
// that is the cell's step written out, channels-first as ONNX's Conv wants:
//   z = Conv(x_t, W, B; the layer's strides, padding, dilation) + Conv(h, R; stride 1, "same")
//   i, f, c~, o = Split(z, 4 on the channel axis)          (Keras's gate order)
//   c' = ra(f) * c + ra(i) * act(c~);  h' = ra(o) * act(c')
// with ra the recurrent_activation and act the activation. Keras's kernels (k..., in, 4F) become
// ONNX's (4F, in, k...). Masked steps keep the states (Where), as every Keras RNN.
#pragma once
#include <string>

#include "keras/export/recurrent_op.h"

namespace keras::onnx {

// Appends `cell` (a ConvLSTMCell) run over `run`: run.x is (T, N, C, spatial...) time-major and
// channels-first, run.mask (T, N, 1) or "", run.initial (N, F, out spatial...) per state (h, c)
// or empty for zeros. `step` is one step's input shape, channels-first with the batch axis
// ((-1, C, spatial...); spatial extents may be -1, known at run time only). The result is
// channels-first too: sequence (T, N, F, out spatial...). NotImplementedError naming `where` (the
// layer's Layer::where()) for an activation without an ONNX mapping.
SequenceResult emit_conv_lstm_sequence(Graph& g, const Layer& cell, const SequenceRun& run, const Shape& step,
                                       const std::string& hint, const std::string& where);

}  // namespace keras::onnx
