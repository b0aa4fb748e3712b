#!/usr/bin/env python3
"""PyTorch side of `benchmark --policy mixed_bfloat16`: the small workloads of
shared/bench/torch_models.py (mlp, cnn, resnet) under torch.autocast("cpu", dtype=torch.bfloat16),
PyTorch's counterpart of Keras's mixed_bfloat16 policy (float32 parameters and optimizer state,
bfloat16 convolutions and matmuls).

Same steps, pools, timing and output contract as torch_bench.py (ONE JSON line with "flops",
"train" and/or "infer"); only the forward pass (and the loss) runs under autocast. Where the CPU
has no AVX512-BF16 or AMX, oneDNN emulates bfloat16 for PyTorch as for us: the figures then say
nothing about bfloat16 hardware, and the JSON line's "cpu_bf16" is false.

Usage: python3 torch_autocast_bench.py --bench-dir DIR --workload mlp|cnn|resnet
         [--mode train|infer|both] [--memory-format nchw|channels_last] [--threads 2]
         [--repeats 5] [--warmup 10] [--min-time 2.0] [--peak-gflops X]
"""
import argparse
import json
import sys

import torch
from torch import nn

from bench_timing import environment, measure


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", required=True, help="shared/bench (torch_models.py)")
    ap.add_argument("--workload", required=True, choices=["mlp", "cnn", "resnet"])
    ap.add_argument("--mode", default="both", choices=["train", "infer", "both"])
    ap.add_argument("--memory-format", default="nchw", choices=["nchw", "channels_last"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=2.0)
    ap.add_argument("--peak-gflops", type=float, default=None)
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


def cpu_has_bf16():
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def main():
    a = parse()
    sys.path.insert(0, a.bench_dir)
    import torch_models as tm

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    build, in_shape, batch, make_opt = tm.WORKLOADS[a.workload]
    model = build()
    flops = tm.flops_info(model, in_shape)
    cl = a.memory_format == "channels_last"
    if cl:
        model = model.to(memory_format=torch.channels_last)
    g = torch.Generator().manual_seed(1234)
    pool = [(torch.randn((batch,) + tuple(in_shape), generator=g), torch.randint(0, 10, (batch,), generator=g))
            for _ in range(8)]
    if cl:
        pool = [(x.contiguous(memory_format=torch.channels_last), y) for x, y in pool]
    autocast = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    out = {"bench": "workload", "workload": a.workload, "policy": "mixed_bfloat16", "memory_format": a.memory_format,
           "batch": batch, "flops": flops, "cpu_bf16": cpu_has_bf16()}

    if a.mode in ("train", "both"):
        opt = make_opt(model.parameters())
        loss_fn = nn.CrossEntropyLoss()
        model.train()

        def train_step(x, y):
            opt.zero_grad(set_to_none=True)
            with autocast():
                loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        out["train"] = measure(train_step, pool, batch, a)
        out["train_gflops"] = round(out["train"]["samples_per_s_median"] * flops["train_flops_per_sample"] / 1e9, 2)

    if a.mode in ("infer", "both"):
        model.eval()

        def infer_step(x, y):
            with torch.inference_mode(), autocast():
                model(x)

        out["infer"] = measure(infer_step, pool, batch, a)
        out["infer_gflops"] = round(out["infer"]["samples_per_s_median"] * flops["fwd_flops_per_sample"] / 1e9, 2)

    if a.peak_gflops:
        out["measured_peak_gflops"] = a.peak_gflops
    out["env"] = environment()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
