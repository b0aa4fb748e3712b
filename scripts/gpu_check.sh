#!/usr/bin/env bash
# Runs ON the GPU machine lent by the device tool, from the project root, after
# `bash ../shared/gpu/stage.sh` here filled .gpu/ (carry [".gpu"]): builds the CUDA build's
# library, GPU tests and benchmark (.gpu/build.sh: sm_90, /tmp/build), runs the GPU tests,
# then times our side and PyTorch's on the same card. Logs and results go to $OUT.
#
#   STEPS="build test bench" bash scripts/gpu_check.sh
#   BENCH="mlp cnn" TORCH_COMPILE=1 bash scripts/gpu_check.sh
# STEPS: any of build, test, bench (default all three). BENCH: workloads (mlp cnn resnet resnet50).
# TORCH_COMPILE=1 adds torch.compile(mode="reduce-overhead") rows (slow to warm up).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=/tmp/build
STEPS=${STEPS:-build test bench}
gpu_tests=$(cd tests && ls backend/test_cuda*.cpp backend/test_nccl.cpp backend/test_simulated_device.cpp \
            keras/test_placement*.cpp 2>/dev/null | sed 's/\.cpp$//; s#/#_#g; s/^/test_/')
rc=0
if [[ $STEPS == *build* ]]; then
  WHAT=build TARGETS="--target keras benchmark gpu_op_bench fashion_mnist_cnn $gpu_tests" bash .gpu/build.sh || exit $?
fi
if [[ $STEPS == *test* ]]; then
  (cd $B && ctest -j8 --timeout 300 -R '^(Cuda|Simulated|Placement|Gpu|Nccl)|/Cuda|Cuda[A-Z]' >$OUT/ctest_gpu.log 2>&1)
  rc=$?
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\(SEGFAULT\)|\(Subprocess aborted\)" $OUT/ctest_gpu.log | head -60
  # The first lines of each failure, for the reply's tail.
  grep -B2 -A12 -E "^\[  FAILED  \]|Failure$" $B/Testing/Temporary/LastTest.log 2>/dev/null | grep -vE '^\[ *(RUN|OK) ' | head -120 >$OUT/failures.txt
fi
if [[ $STEPS == *bench* ]]; then
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/x86_64-linux-gnu/hdf5/serial:/tmp/fbsel${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  timeout 120 $B/apps/gpu_op_bench >$OUT/ops_ours.jsonl 2>>$OUT/bench_err.log
  timeout 120 python3 apps/gpu_op_bench/gpu_op_bench.py >$OUT/ops_torch.jsonl 2>>$OUT/bench_err.log
  python3 - $OUT/ops_ours.jsonl $OUT/ops_torch.jsonl <<'PY' | tee $OUT/ops_compare.md
import json, sys
load = lambda p: {r["op"]: r for r in map(json.loads, filter(str.strip, open(p)))}
ours, torch = load(sys.argv[1]), load(sys.argv[2])
print("| op | ours ms | PyTorch ms | PyTorch / ours |\n|---|---|---|---|")
for op, r in ours.items():
    t = torch.get(op, {}).get("ms")
    ms = r.get("ms")
    print(f"| {op} | {ms if ms is not None else r.get('error')} | {t} | {t / ms:.2f} |" if ms and t else f"| {op} | {ms or r.get('error')} | {t} | n/a |")
PY
  : >$OUT/ours.jsonl
  for w in ${BENCH:-mlp cnn resnet resnet50}; do
    batch=128; [ $w = resnet50 ] && batch=64
    for mode in train infer; do
      timeout 120 $B/apps/benchmark --workload $w --device cuda:0 --batch $batch --mode $mode --repeats 3 \
        --warmup 10 --min-time 1 >>$OUT/ours.jsonl 2>>$OUT/bench_err.log || echo "ours $w $mode failed: $(tail -2 $OUT/bench_err.log)"
    done
  done
  ws=$(echo ${BENCH:-mlp cnn resnet resnet50} | tr ' ' ',')
  timeout 300 python3 .gpu/bench/torch_gpu.py --workloads $ws --batches 128 --bf16 off >$OUT/torch_eager.jsonl 2>>$OUT/bench_err.log
  files="$OUT/torch_eager.jsonl"
  if [ "${TORCH_COMPILE:-0}" = 1 ]; then
    timeout 400 python3 .gpu/bench/torch_gpu.py --workloads $ws --batches 128 --bf16 off --compile reduce-overhead \
      >$OUT/torch_compiled.jsonl 2>>$OUT/bench_err.log
    files="$files $OUT/torch_compiled.jsonl"
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >$OUT/gpu.txt
  python3 apps/benchmark/gpu_compare.py $OUT/ours.jsonl $files | tee $OUT/gpu_compare.md
fi
exit $rc
