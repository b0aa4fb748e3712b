// The profiler's recording as an XSpace protobuf (<host>.xplane.pb), the format TensorBoard's
// profile plugin (xprof, tensorboard-plugin-profile 2.5 and later) reads: its trace viewer,
// overview and op pages are converted from it. The Chrome trace beside it (trace_file.h) is what
// Perfetto and chrome://tracing open; both hold the same complete events.
//
// One plane "/host:CPU" with a line per thread (id = the OS thread id, named as the thread), an
// event per recorded op, layer call, step, phase, data wait and callback hook (offsets in
// picoseconds from the line's timestamp, the profile's start in Unix nanoseconds), and string or
// integer stats as the Chrome trace's args: layer, phase, forward_op, input_shapes, dtype,
// bytes_allocated, flops (ops); path, class (layers); mode, epoch, step (steps); category. The encoding is the protobuf wire format of
// tsl/profiler/protobuf/xplane.proto, written by hand (the library has no protobuf dependency).
#pragma once
#include <string>

#include "keras/profiler/profiler.h"

namespace keras::profiler {

std::string xspace_bytes(const Trace& trace);

}  // namespace keras::profiler
