#!/usr/bin/env python3
"""The ONNX Runtime side of `benchmark --against onnxruntime`: times inference of an ONNX file
(our export of the workload's model) on the CPU with --threads intra-op threads, measured as the
other sides measure (bench_timing.measure over a pool of 8 random batches), and prints one JSON
line {"side": "onnxruntime", "infer": {...}, "environment": {...}}."""
import argparse
import json
import os
import platform
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_timing import measure  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--min-time", dest="min_time", type=float, default=2.0)
    a = p.parse_args()

    options = ort.SessionOptions()
    options.intra_op_num_threads = a.threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(a.model, options, providers=["CPUExecutionProvider"])
    inputs = session.get_inputs()
    rng = np.random.default_rng(0)
    pool = []
    for _ in range(8):
        feeds = {}
        for i in inputs:
            shape = [a.batch] + [int(d) for d in i.shape[1:]]
            feeds[i.name] = rng.standard_normal(shape).astype(np.float32)
        pool.append((feeds,))

    def step(feeds):
        session.run(None, feeds)

    result = {
        "side": "onnxruntime",
        "batch": a.batch,
        "threads": a.threads,
        "infer": measure(step, pool, a.batch, a),
        "environment": {"framework": "onnxruntime", "onnxruntime": ort.__version__, "numpy": np.__version__,
                        "python": platform.python_version()},
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
