#!/usr/bin/env python3
"""Timing and environment report shared by the Python sides of apps/benchmark
(torchvision_bench.py, sequence_bench.py, onnxruntime_bench.py): the same measurement as
shared/bench/torch_bench.py. torch is imported only by environment(), so the ONNX Runtime side
runs where torch is not installed."""
import math
import os
import platform
import statistics
import time


def measure(step, pool, batch, a):
    start = time.perf_counter()
    for i in range(a.warmup):
        step(*pool[i % len(pool)])
    per_step = (time.perf_counter() - start) / max(a.warmup, 1)
    steps = max(5, math.ceil(a.min_time / max(per_step, 1e-6)))
    rates, k = [], 0
    for _ in range(a.repeats):
        t = time.perf_counter()
        for _ in range(steps):
            step(*pool[k % len(pool)])
            k += 1
        rates.append(steps * batch / (time.perf_counter() - t))
    return {
        "samples_per_s_median": round(statistics.median(rates), 2),
        "samples_per_s_min": round(min(rates), 2),
        "samples_per_s_max": round(max(rates), 2),
        "cv": round(statistics.pstdev(rates) / statistics.fmean(rates), 4),
        "repeats": a.repeats,
        "steps_per_repeat": steps,
        "all": [round(r, 2) for r in rates],
    }


def environment(**versions):
    """What the numbers depend on: versions (torch's, plus `versions`), threads, the math libraries
    mapped into the process, and the environment variables of the tuned configs."""
    import torch

    mapped = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if any(k in path for k in ("blas", "dnnl", "gomp", "malloc")):
                mapped.add(os.path.basename(path))
    return {
        "framework": "pytorch",
        "torch": torch.__version__,
        **versions,
        "python": platform.python_version(),
        "threads": torch.get_num_threads(),
        "libraries": sorted(mapped),
        "env": {k: os.environ[k] for k in ("BASELINE_CONFIG", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
                                           "OPENBLAS_CORETYPE", "GLIBC_TUNABLES", "LD_LIBRARY_PATH")
                if k in os.environ},
    }
