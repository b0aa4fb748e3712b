// The profiler's file: a recording in the Chrome trace event format (the JSON Object Format:
// {"traceEvents": [...], "displayTimeUnit": "ns", ...}), gzip-compressed, at the place where
// TensorBoard's profile plugin lists profile runs: <logdir>/plugins/profile/<run>/<host>.trace.json.gz,
// <run> being the start time as TensorFlow's profiler names it (YYYY_MM_DD_HH_MM_SS, local time).
//
// Events: one complete event ("ph": "X") per op, layer call, step, step phase, data wait and
// callback hook, with ts/dur in microseconds (to the nanosecond) from the profile's start, on
// pid = the process, tid = the OS thread; counter events ("ph": "C") named "memory <device>" with
// current/peak/cached bytes; metadata events ("ph": "M") naming the process and every thread.
#pragma once
#include <string>

#include "keras/profiler/profiler.h"

namespace keras::profiler {

// The JSON document of `trace` (uncompressed).
std::string trace_json(const Trace& trace);
// Writes trace_json, gzip-compressed, under trace.logdir and returns the file's path; writes the
// same events as <host>.xplane.pb beside it (xplane_file.h). A run directory that exists already
// (two profiles within a second) gets a "_2", "_3", ... suffix.
// IOError naming the path when a directory or the file cannot be written.
std::string write_trace(const Trace& trace);

// gethostname(), "localhost" when it fails.
std::string host_name();
// The current local time as YYYY_MM_DD_HH_MM_SS.
std::string run_name_now();
// gzip (RFC 1952) of `bytes`, readable by gzip, Python's gzip module and zlib's gz* functions.
std::string gzip_compress(const std::string& bytes);

}  // namespace keras::profiler
