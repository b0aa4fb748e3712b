#!/usr/bin/env python3
"""Puts our GPU rows (benchmark --device cuda, one JSON line per run) beside PyTorch's
(torch_gpu.py, eager and --compile reduce-overhead) measured on the same card in the same job.

Usage: gpu_compare.py OURS.jsonl TORCH.jsonl [TORCH_COMPILED.jsonl ...]
Prints a Markdown table: samples/s of ours and of each PyTorch mode, the ratio to the best
PyTorch row, and peak GPU memory (ours: the caching allocator's peak bytes in use; PyTorch:
torch.cuda.max_memory_allocated). Float32 rows only (we have no half types yet). Ours in TF32 (our
default, as Keras's) and ours with --tf32 off (exact float32) get rows of their own, against the same
PyTorch rows. PyTorch's defaults use TF32 in cuDNN's convolutions only, ours in matmuls too: the
convnets' rows compare either way, mlp's like for like with --tf32 off only.
"""
import json
import sys


def rows(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ours = {}
    for r in rows(sys.argv[1]):
        for mode in ("train", "infer"):
            if mode in r:
                key = (r["workload"], r["batch"], mode + (" (ours TF32)" if r.get("tf32") else " (ours float32)"))
                ours[key] = (r[mode]["samples_per_s_median"], r.get("peak_gpu_mib"))
    torch = {}
    env = []
    for path in sys.argv[2:]:
        for r in rows(path):
            if "workload" not in r:
                env.append(r)
                continue
            if r["bf16"]:
                continue
            torch.setdefault((r["workload"], r["batch"], r["mode"]), {})[r["compile"]] = (
                r["samples_per_s"], r["peak_gpu_mib"])
    print("| workload | batch | mode | ours samples/s | PyTorch eager | PyTorch compiled | ours / best | "
          "ours peak MiB | PyTorch peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for key in sorted(ours):
        mine, mine_mib = ours[key]
        t = torch.get((key[0], key[1], key[2].split()[0]), {})
        eager = t.get("eager", (None, None))
        comp = next((v for k, v in t.items() if k != "eager"), (None, None))
        best = max([v[0] for v in (eager, comp) if v[0]] or [0])
        ratio = f"{mine / best:.2f}" if best else "n/a"
        peak = min([v[1] for v in (eager, comp) if v[1]] or [0])
        fmt = lambda v: f"{v:,.0f}" if v else "n/a"
        print(f"| {key[0]} | {key[1]} | {key[2]} | {fmt(mine)} | {fmt(eager[0])} | {fmt(comp[0])} | {ratio} | "
              f"{fmt(mine_mib)} | {fmt(peak)} |")
    for e in env:
        print(f"\nPyTorch environment: {json.dumps(e)}")


if __name__ == "__main__":
    main()
