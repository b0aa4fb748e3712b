#!/usr/bin/env python3
"""PyTorch side of the sequence workloads of apps/benchmark (nn.LSTM, nn.TransformerEncoder).

Same output contract as torchvision_bench.py: ONE JSON line with "flops" (macs_per_sample counted
analytically: the matrix products of the recurrent gates, the attention projections, scores and
feed-forward layers, and the classifier), "train" / "infer" timings and "env".

Workloads (apps/benchmark/workloads.cpp builds the same on our side; inputs are float features,
labels uniform in [0, 10), loss cross-entropy on logits, Adam 1e-3):
  lstm         batch 64, 50 steps x 128 features -> LSTM 256 (sequences) -> LSTM 256 (last state)
               -> Linear 10
  transformer  batch 32, 128 tokens x d_model 128 -> 4 post-norm encoder layers (4 heads, feed-
               forward 512 relu, dropout 0) -> mean over tokens -> Linear 10

Usage: python3 sequence_bench.py --workload lstm|transformer [--mode train|infer|both]
         [--threads 2] [--repeats 5] [--warmup 10] [--min-time 2.0] [--peak-gflops X] [--seed 0]
"""
import argparse
import json

import torch

from bench_timing import environment, measure

CLASSES = 10
LSTM = {"batch": 64, "steps": 50, "features": 128, "units": 256}
TRANSFORMER = {"batch": 32, "tokens": 128, "d_model": 128, "heads": 4, "ff": 512, "layers": 4}


class LstmClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(LSTM["features"], LSTM["units"], num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(LSTM["units"], CLASSES)

    def forward(self, x):
        _, (h, _) = self.lstm(x)
        return self.head(h[-1])


class TransformerClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        t = TRANSFORMER
        layer = torch.nn.TransformerEncoderLayer(t["d_model"], t["heads"], dim_feedforward=t["ff"], dropout=0.0,
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, t["layers"], enable_nested_tensor=False)
        self.head = torch.nn.Linear(t["d_model"], CLASSES)

    def forward(self, x):
        return self.head(self.encoder(x).mean(dim=1))


def lstm_macs():
    s, f, u = LSTM["steps"], LSTM["features"], LSTM["units"]
    return s * 4 * u * (f + u) + s * 4 * u * (u + u) + u * CLASSES


def transformer_macs():
    t = TRANSFORMER
    n, d = t["tokens"], t["d_model"]
    per_token = 4 * d * d + 2 * d * t["ff"] + 2 * n * d  # projections, feed-forward, scores and values
    return t["layers"] * n * per_token + d * CLASSES


WORKLOADS = {
    "lstm": (LstmClassifier, LSTM["batch"], (LSTM["steps"], LSTM["features"]), lstm_macs),
    "transformer": (TransformerClassifier, TRANSFORMER["batch"], (TRANSFORMER["tokens"], TRANSFORMER["d_model"]),
                    transformer_macs),
}


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", required=True, choices=sorted(WORKLOADS))
    ap.add_argument("--mode", default="train", choices=["train", "infer", "both"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-time", type=float, default=2.0, help="seconds per timed repeat")
    ap.add_argument("--peak-gflops", type=float, default=None, help="measured FMA peak, for the fraction")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--memory-format", default=None, help="accepted for the driver; unused")
    return ap.parse_args()


def batches(batch, shape, n=8):
    g = torch.Generator().manual_seed(1234)
    return [(torch.randn((batch,) + shape, generator=g), torch.randint(0, CLASSES, (batch,), generator=g))
            for _ in range(n)]


def main():
    a = parse()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    make, batch, shape, macs_fn = WORKLOADS[a.workload]
    model = make()
    macs = macs_fn()
    out = {"bench": "workload", "workload": a.workload, "network": "torch." + make.__name__, "batch": batch,
           "mode": a.mode,
           "flops": {"params": sum(p.numel() for p in model.parameters()), "macs_per_sample": macs,
                     "fwd_flops_per_sample": 2 * macs, "train_flops_per_sample": 6 * macs}}
    pool = batches(batch, shape)
    if a.mode in ("train", "both"):
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
        loss_fn = torch.nn.CrossEntropyLoss()
        model.train()

        def train_step(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            optimizer.step()

        out["train"] = measure(train_step, pool, batch, a)
        out["train_gflops"] = round(out["train"]["samples_per_s_median"] * 6 * macs / 1e9, 2)
    if a.mode in ("infer", "both"):
        model.eval()

        def infer_step(x, y):
            with torch.inference_mode():
                model(x)

        out["infer"] = measure(infer_step, pool, batch, a)
        out["infer_gflops"] = round(out["infer"]["samples_per_s_median"] * 2 * macs / 1e9, 2)
    if a.peak_gflops:
        out["measured_peak_gflops"] = a.peak_gflops
        for phase in ("train", "infer"):
            if phase + "_gflops" in out:
                out["frac_measured_peak_" + phase] = round(out[phase + "_gflops"] / a.peak_gflops, 4)
    out["env"] = environment()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
