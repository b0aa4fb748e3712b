#!/usr/bin/env python3
"""Dumps a TensorBoard log directory as JSON using the real tensorboard package's readers.

    read_events.py LOG_DIR  ->  {"runs": {RUN: {...}}} on stdout

Per run (a subdirectory holding event files):
  files:        [{"name", "file_version", "events"}] read record by record with TensorBoard's
                event file loader (it checks every CRC; a bad record raises DataLossError),
  scalars:      {tag: {"plugin", "data_class", "events": [[step, value], ...]}} through the
                plugin event accumulator that the TensorBoard server uses (legacy values migrated),
  histograms:   {tag: [{"step", "min", "max", "num", "sum", "sum_squares", "bucket_limit",
                "bucket"}]} through the legacy event accumulator,
  histogram_buckets: {tag: [{"step", "plugin", "buckets": [[left, right, count], ...]}]} as the
                histograms plugin sees them after migration.
Exits 77 (with a message on stderr) when tensorboard cannot be imported, so a caller can skip.
"""
import json
import os
import sys

try:
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.backend.event_processing import event_file_loader
    from tensorboard.backend.event_processing import plugin_event_accumulator as pea
    from tensorboard.util import tensor_util
except Exception as exc:  # ImportError, or a broken install
    print(f"tensorboard is not importable: {exc!r}", file=sys.stderr)
    sys.exit(77)


def read_files(run_dir):
    files = []
    for name in sorted(os.listdir(run_dir)):
        if "tfevents" not in name:
            continue
        loader = event_file_loader.EventFileLoader(os.path.join(run_dir, name))
        events = list(loader.Load())
        version = events[0].file_version if events else None
        files.append({"name": name, "file_version": version, "events": len(events)})
    return files


def read_run(run_dir):
    run = {"files": read_files(run_dir), "scalars": {}, "histograms": {}, "histogram_buckets": {}}

    acc = pea.EventAccumulator(run_dir, size_guidance={pea.TENSORS: 0})
    acc.Reload()
    for tag in acc.Tags()["tensors"]:
        meta = acc.SummaryMetadata(tag)
        plugin = meta.plugin_data.plugin_name
        if plugin == "scalars":
            run["scalars"][tag] = {
                "plugin": plugin,
                "data_class": int(meta.data_class),
                "events": [[e.step, float(tensor_util.make_ndarray(e.tensor_proto))] for e in acc.Tensors(tag)],
            }
        elif plugin == "histograms":
            run["histogram_buckets"][tag] = [
                {"step": e.step, "plugin": plugin, "buckets": tensor_util.make_ndarray(e.tensor_proto).tolist()}
                for e in acc.Tensors(tag)
            ]

    legacy = ea.EventAccumulator(run_dir, size_guidance={ea.HISTOGRAMS: 0})
    legacy.Reload()
    for tag in legacy.Tags()["histograms"]:
        out = []
        for e in legacy.Histograms(tag):
            h = e.histogram_value
            out.append({"step": e.step, "min": h.min, "max": h.max, "num": h.num, "sum": h.sum,
                        "sum_squares": h.sum_squares, "bucket_limit": list(h.bucket_limit),
                        "bucket": list(h.bucket)})
        run["histograms"][tag] = out
    return run


def main():
    if len(sys.argv) != 2:
        print("usage: read_events.py LOG_DIR", file=sys.stderr)
        return 2
    log_dir = sys.argv[1]
    runs = {}
    for name in sorted(os.listdir(log_dir)):
        path = os.path.join(log_dir, name)
        if os.path.isdir(path):
            runs[name] = read_run(path)
    json.dump({"runs": runs}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
