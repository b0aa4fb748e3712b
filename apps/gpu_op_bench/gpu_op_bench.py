#!/usr/bin/env python3
"""PyTorch's side of apps/gpu_op_bench: the same ops on the same shapes (channels_last for the
convolution and pooling), timed the same way (median of 5 runs of the mean time per call, the
device synchronised around each run). One JSON line per op: {"op", "ms"}."""
import json
import time

import torch
import torch.nn.functional as F


def median_ms(op):
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    op()
    torch.cuda.synchronize()
    once = time.perf_counter() - t0
    calls = max(1, min(2000, int(0.05 / max(once, 1e-6))))
    runs = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            op()
        torch.cuda.synchronize()
        runs.append((time.perf_counter() - t) * 1e3 / calls)
    return sorted(runs)[2]


def main():
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False  # float32 convolutions as ours (no TF32)
    d = "cuda"
    r = lambda *s: torch.randn(*s, device=d)
    a, b = r(64 << 20), r(64 << 20)
    m, m2 = r(8192, 8192), r(8192, 8192)
    xd, wd, bd = r(128, 784), r(256, 784), r(256)
    cl = torch.channels_last
    xc = r(128, 64, 32, 32).contiguous(memory_format=cl)
    wc = r(64, 64, 3, 3).contiguous(memory_format=cl)
    bc = r(64)
    logits = r(4096, 1000)

    def conv_train():
        x = xc.detach().requires_grad_()
        w = wc.detach().requires_grad_()
        F.conv2d(x, w, padding=1).sum().backward()

    rows = [
        ("add_64M", lambda: a + b),
        ("relu_64M", lambda: torch.relu(a)),
        ("sum_all_64M", lambda: a.sum()),
        ("max_all_64M", lambda: a.max()),
        ("sum_axis0_8192sq", lambda: m.sum(0)),
        ("sum_axis1_8192sq", lambda: m.sum(1)),
        ("matmul_8192_fp32", lambda: m @ m2),
        ("dense_128x784x256_relu", lambda: torch.relu(F.linear(xd, wd, bd))),
        ("conv3x3_128x32x32x64", lambda: torch.relu(F.conv2d(xc, wc, bc, padding=1))),
        ("conv3x3_128x32x32x64_train", conv_train),
        ("max_pool2x2_128x32x32x64", lambda: F.max_pool2d(xc, 2)),
        ("softmax_4096x1000", lambda: torch.softmax(logits, -1)),
    ]
    for name, op in rows:
        print(json.dumps({"op": name, "ms": round(median_ms(op), 4)}), flush=True)
    torch.backends.cuda.matmul.allow_tf32 = True
    print(json.dumps({"op": "matmul_8192_tf32", "ms": round(median_ms(lambda: m @ m2), 4)}), flush=True)


if __name__ == "__main__":
    main()
