#!/usr/bin/env bash
# Runs ON the GPU machine lent by the device tool, from the project root, after
# `bash ../shared/gpu/stage.sh` here filled .gpu/ (carry [".gpu"]): builds the CUDA build's
# library, GPU tests and benchmark (.gpu/build.sh: sm_90, /tmp/build), runs the GPU tests,
# then times our side and PyTorch's on the same card. Logs and results go to $OUT.
#
#   STEPS="build test bench" bash scripts/gpu_check.sh
#   BENCH="mlp cnn" TORCH_COMPILE=1 bash scripts/gpu_check.sh
# STEPS: any of build, test, bench (default all three). BENCH: workloads (mlp cnn resnet resnet50).
# HARNESS=1 adds the layer harness programs: their check (h) runs every layer on cuda:0 against
# the CPU (about 21 more programs to build and run).
# TORCH_COMPILE=1 adds torch.compile(mode="reduce-overhead") rows (slow to warm up).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=/tmp/build
STEPS=${STEPS:-build test bench}
gpu_tests=$(cd tests && ls backend/test_cuda*.cpp backend/test_nccl.cpp backend/test_simulated_device.cpp \
            keras/test_placement*.cpp keras/test_device_training.cpp 2>/dev/null | sed 's/\.cpp$//; s#/#_#g; s/^/test_/')
if [ "${HARNESS:-0}" = 1 ]; then
  gpu_tests="$gpu_tests $(cd tests && grep -rl 'support/layer_harness.h' layers | sed 's/\.cpp$//; s#/#_#g; s/^/test_/')"
fi
rc=0
# The staged oneDNN/HDF5 and fallbacks (unpacked by .gpu/build.sh) for the programs run below.
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/x86_64-linux-gnu/hdf5/serial:/tmp/fbsel${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [[ $STEPS == *build* ]]; then
  WHAT=build TARGETS="--target keras benchmark gpu_op_bench fashion_mnist_cnn $gpu_tests" bash .gpu/build.sh || exit $?
fi
if [[ $STEPS == *test* ]]; then
  # Each test program once (ctest starts one process per test case, and each pays the CUDA
  # context's ~1.5 s: 1,095 cases took 196 s on 12 processes that way).
  # At most 8 files come back from the device: one summary, one log with every program's output.
  : >$OUT/tests_gpu.txt; : >$OUT/tests_gpu_full.log
  for t in $gpu_tests; do
    [ -x $B/tests/$t ] || { echo "$t: not built" | tee -a $OUT/tests_gpu.txt; rc=1; continue; }
    (cd $B/tests && KERAS_DEVICE=cpu timeout 300 ./$t --gtest_brief=1 >/tmp/t.log 2>&1) || rc=1
    { echo "==== $t"; cat /tmp/t.log; } >>$OUT/tests_gpu_full.log
    echo "$t: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]' /tmp/t.log | grep -E 'tests?[,.]' | tr '\n' ' ')" | tee -a $OUT/tests_gpu.txt
  done
  grep -B3 -A10 -E "Failure$|^\[  FAILED  \]" $OUT/tests_gpu_full.log | head -80
fi
if [[ $STEPS == *bench* ]]; then
  # Raw rows in /tmp/bench, the tables in $OUT/results.md, errors in $OUT/bench_err.log.
  R=/tmp/bench; mkdir -p $R
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>$OUT/results.md
  timeout 120 $B/apps/gpu_op_bench >$R/ops_ours.jsonl 2>>$OUT/bench_err.log
  timeout 120 python3 apps/gpu_op_bench/gpu_op_bench.py >$R/ops_torch.jsonl 2>>$OUT/bench_err.log
  python3 - $R/ops_ours.jsonl $R/ops_torch.jsonl <<'PY' | tee -a $OUT/results.md
import json, sys
load = lambda p: {r["op"]: r for r in map(json.loads, filter(str.strip, open(p)))}
ours, torch = load(sys.argv[1]), load(sys.argv[2])
print("| op | ours ms | PyTorch ms | PyTorch / ours |\n|---|---|---|---|")
for op, r in ours.items():
    t = torch.get(op, {}).get("ms")
    ms = r.get("ms")
    print(f"| {op} | {ms if ms is not None else r.get('error')} | {t} | {t / ms:.2f} |" if ms and t else f"| {op} | {ms or r.get('error')} | {t} | n/a |")
PY
  : >$R/ours.jsonl
  for w in ${BENCH:-mlp cnn resnet resnet50}; do
    batch=128; [ $w = resnet50 ] && batch=64
    for mode in train infer; do
      timeout 120 $B/apps/benchmark --workload $w --device cuda:0 --batch $batch --mode $mode --repeats ${REPEATS:-3} \
        --warmup 10 --min-time ${MIN_TIME:-1} >>$R/ours.jsonl 2>>$OUT/bench_err.log || echo "ours $w $mode failed: $(tail -2 $OUT/bench_err.log)"
    done
  done
  ws=$(echo ${BENCH:-mlp cnn resnet resnet50} | tr ' ' ',')
  timeout 300 python3 .gpu/bench/torch_gpu.py --workloads $ws --batches 128 --bf16 off >$R/torch_eager.jsonl 2>>$OUT/bench_err.log
  files="$R/torch_eager.jsonl"
  if [ "${TORCH_COMPILE:-0}" = 1 ]; then
    timeout 400 python3 .gpu/bench/torch_gpu.py --workloads $ws --batches 128 --bf16 off --compile reduce-overhead \
      >$R/torch_compiled.jsonl 2>>$OUT/bench_err.log
    files="$files $R/torch_compiled.jsonl"
  fi
  python3 apps/benchmark/gpu_compare.py $R/ours.jsonl $files | tee -a $OUT/results.md
  cat $R/*.jsonl >$OUT/bench_raw.jsonl
fi
exit $rc
