#!/usr/bin/env python3
"""PyTorch side of the LSTM comparison (apps/rnn_op_benchmark is ours): nn.LSTM, 2 layers.

Workload: x (batch 64, 50 steps, 128 inputs), nn.LSTM(128, 256, num_layers=2, batch_first=True),
loss = mean of the last layer's last output squared (the same as apps/rnn_op_benchmark).
Two phases are timed:
  fwd_bwd  forward + backward (gradients of every parameter), like-for-like with ours
  train    zero_grad + forward + backward + Adam(1e-3) step
W untimed warm-up steps, then R repeats of at least --min-time seconds each; samples/s per
repeat, median/min/max. Prints ONE JSON line.

Usage: python3 lstm_torch.py [--batch 64] [--time 50] [--input 128] [--units 256] [--layers 2]
                             [--threads 2] [--repeats 5] [--warmup 3] [--min-time 2]
"""
import argparse
import json
import platform
import statistics
import time

import torch


def timed(step, batch, repeats, warmup, min_time):
    for _ in range(warmup):
        step()
    rates = []
    for _ in range(repeats):
        t0, steps = time.perf_counter(), 0
        while True:
            step()
            steps += 1
            dt = time.perf_counter() - t0
            if dt >= min_time:
                break
        rates.append(steps * batch / dt)
    return dict(samples_per_s_median=statistics.median(rates), samples_per_s_min=min(rates),
                samples_per_s_max=max(rates), all=rates)


def main():
    p = argparse.ArgumentParser()
    for name, default in [("batch", 64), ("time", 50), ("input", 128), ("units", 256), ("layers", 2),
                          ("threads", 2), ("repeats", 5), ("warmup", 3)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--min-time", type=float, default=2.0)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = torch.nn.LSTM(a.input, a.units, num_layers=a.layers, batch_first=True)
    model.train()
    x = torch.randn(a.batch, a.time, a.input)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def loss_of():
        out, _ = model(x)
        return out[:, -1].pow(2).mean()

    def fwd_bwd():
        model.zero_grad(set_to_none=True)
        loss_of().backward()

    def train():
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()

    result = dict(bench="lstm_torch", torch=torch.__version__, threads=torch.get_num_threads(),
                  mkldnn=torch.backends.mkldnn.is_available(), batch=a.batch, time=a.time, input=a.input,
                  units=a.units, layers=a.layers,
                  fwd_bwd=timed(fwd_bwd, a.batch, a.repeats, a.warmup, a.min_time),
                  train=timed(train, a.batch, a.repeats, a.warmup, a.min_time),
                  env=dict(python=platform.python_version(), machine=platform.machine()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
