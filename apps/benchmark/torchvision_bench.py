#!/usr/bin/env python3
"""PyTorch side of the ImageNet-size workloads of apps/benchmark (torchvision's networks).

shared/bench/torch_bench.py defines the small workloads (mlp, cnn, resnet); this script adds the
torchvision ones under the same output contract, so that `benchmark` reads either alike. It
prints ONE JSON line:
  {"bench": "workload", "workload": ..., "network": ..., "memory_format": ..., "batch": ...,
   "flops": {"params", "macs_per_sample", "fwd_flops_per_sample", "train_flops_per_sample"},
   "train": {"samples_per_s_median", "samples_per_s_min", "samples_per_s_max", "cv",
             "repeats", "steps_per_repeat", "all"},      (when training is timed)
   "infer": {...same...},                                 (when inference is timed)
   "train_gflops", "infer_gflops", "env": {...}}

Workloads (apps/benchmark/workloads.cpp builds the same on our side):
  mobilenet_v2     torchvision mobilenet_v2 (width 1.0), 224x224x3, batch 32, inference
  mobilenet_v2_b1  the same, batch 1
  resnet50         torchvision resnet50, 224x224x3, batch 16, training, SGD 0.01 momentum 0.9
All have 1000 classes; the loss is cross-entropy on logits.

Timing as torch_bench.py: W untimed warm-up steps, then R repeats of S steps each, S such that a
repeat lasts at least --min-time seconds; samples/s per repeat, median/min/max over the repeats.
A training step is zero_grad + forward + loss + backward + optimizer step (model.train()); an
inference step is the forward pass under torch.inference_mode() after model.eval(). Inputs and
labels come from a pool of 8 batches built before timing.

Usage: python3 torchvision_bench.py --workload W [--mode train|infer|both]
         [--memory-format nchw|channels_last] [--threads 2] [--repeats 5] [--warmup 10]
         [--min-time 2.0] [--peak-gflops X] [--seed 0]
"""
import argparse
import json

import torch
import torchvision

from bench_timing import environment, measure

# name -> (torchvision constructor, batch, phases timed by default)
WORKLOADS = {
    "mobilenet_v2": ("mobilenet_v2", 32, "infer"),
    "mobilenet_v2_b1": ("mobilenet_v2", 1, "infer"),
    "resnet50": ("resnet50", 16, "train"),
}
INPUT_SHAPE = (3, 224, 224)
CLASSES = 1000


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    ap.add_argument("--mode", default=None, choices=["train", "infer", "both"],
                    help="default: the workload's (see above)")
    ap.add_argument("--memory-format", default="channels_last", choices=["nchw", "channels_last"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per timed repeat")
    ap.add_argument("--peak-gflops", type=float, default=None, help="measured FMA peak, for the fraction")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args()


def multiply_accumulates(model):
    """MACs of one sample through the Conv2d and Linear layers (grouped convolutions included)."""
    total = [0]

    def count(module, inputs, output):
        if isinstance(module, torch.nn.Conv2d):
            kh, kw = module.kernel_size
            total[0] += output.numel() * (module.in_channels // module.groups) * kh * kw
        else:
            total[0] += output.numel() * module.in_features

    hooks = [m.register_forward_hook(count) for m in model.modules()
             if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]
    training = model.training
    model.eval()
    with torch.no_grad():
        model(torch.zeros((1,) + INPUT_SHAPE))
    model.train(training)
    for h in hooks:
        h.remove()
    return total[0]


def batches(batch, channels_last, n=8):
    g = torch.Generator().manual_seed(1234)
    pool = []
    for _ in range(n):
        x = torch.randn((batch,) + INPUT_SHAPE, generator=g)
        if channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        pool.append((x, torch.randint(0, CLASSES, (batch,), generator=g)))
    return pool


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    network, batch, default_mode = WORKLOADS[a.workload]
    mode = a.mode or default_mode
    channels_last = a.memory_format == "channels_last"

    model = getattr(torchvision.models, network)(num_classes=CLASSES)
    macs = multiply_accumulates(model)
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    out = {"bench": "workload", "workload": a.workload, "network": "torchvision." + network,
           "memory_format": a.memory_format, "batch": batch, "mode": mode,
           "flops": {"params": sum(p.numel() for p in model.parameters()), "macs_per_sample": macs,
                     "fwd_flops_per_sample": 2 * macs, "train_flops_per_sample": 6 * macs}}
    if a.peak_gflops:
        out["measured_peak_gflops"] = a.peak_gflops

    if mode in ("train", "both"):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        model.train()

        def train_step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        out["train"] = measure(train_step, batches(batch, channels_last), batch, a)
        out["train_gflops"] = round(out["train"]["samples_per_s_median"] * 6 * macs / 1e9, 2)

    if mode in ("infer", "both"):
        model.eval()

        def infer_step(x, y):
            with torch.inference_mode():
                model(x)

        out["infer"] = measure(infer_step, batches(batch, channels_last), batch, a)
        out["infer_gflops"] = round(out["infer"]["samples_per_s_median"] * 2 * macs / 1e9, 2)

    if a.peak_gflops:
        for phase in ("train", "infer"):
            if phase + "_gflops" in out:
                out["frac_measured_peak_" + phase] = round(out[phase + "_gflops"] / a.peak_gflops, 4)
    out["env"] = environment(torchvision=torchvision.__version__)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
