#!/usr/bin/env bash
# Runs ON the GPU machine lent by the device tool, from the project root, after
# `bash ../shared/gpu/stage.sh` here filled .gpu/ (carry [".gpu"]) and `bash scripts/device_tree.sh hide`
# brought the tree under the tool's 64 MiB (without stage.sh --data; restore it after the call): builds the CUDA build's
# library, GPU tests and benchmark (.gpu/build.sh: sm_90, /tmp/build), times our side and
# PyTorch's on the same card (first, while the card is idle), then runs the GPU tests. Logs and results go to $OUT.
#
#   STEPS="build test bench" bash scripts/gpu_check.sh
#   BENCH="mlp cnn" TORCH_COMPILE=1 bash scripts/gpu_check.sh
# STEPS: any of build, test, bench, profile, fashion (default build test bench; fashion needs
# stage.sh --data). profile: where the host's time goes in ResNet50 and ResNet-20 steps on the GPU
# (benchmark --breakdown --device, with KERAS_CUDA_CONV_HOST_TIMES=1), into $OUT/profile.txt.
# TESTS: test programs instead of the GPU ones; OPS=0 skips the single-op timings. BENCH: workloads (mlp cnn resnet resnet50).
# HARNESS=1 adds the layer harness programs: their check (h) runs every layer on cuda:0 against
# the CPU (about 21 more programs to build and run); HARNESS_CHECKS (default h: the CPU's checks
# ran in CI) picks the harness checks, "abcdefghi" for all.
# TF32_OFF=1 adds rows of ours with --tf32 off (exact float32; TF32 is our default, as Keras's,
# and PyTorch's in cuDNN convolutions, not in its matmuls).
# TORCH_COMPILE=1 adds torch.compile(mode="reduce-overhead") rows (slow to warm up).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
B=/tmp/build
STEPS=${STEPS:-build test bench}
gpu_tests=$(cd tests && ls backend/test_cuda*.cpp backend/test_nccl.cpp backend/test_simulated_device.cpp \
            keras/test_placement*.cpp keras/test_device_training.cpp keras/test_default_gpu_flows.cpp \
            keras/saving/test_keras_files_on_default_gpu.cpp 2>/dev/null | sed 's/\.cpp$//; s#/#_#g; s/^/test_/')
if [ "${HARNESS:-0}" = 1 ]; then
  # First: the longest programs (the RNN harness) should not start last.
  gpu_tests="$(cd tests && { grep -rl 'support/layer_harness.h' layers | sort | grep -E 'rnn_layers|conv_lstm|attention_layers|conv_layers'
    grep -rl 'support/layer_harness.h' layers | sort | grep -vE 'rnn_layers|conv_lstm|attention_layers|conv_layers'; } | sed 's/\.cpp$//; s#/#_#g; s/^/test_/') $gpu_tests"
fi
gpu_tests=${TESTS:-$gpu_tests}
rc=0
# The staged oneDNN/HDF5 and fallbacks (unpacked by .gpu/build.sh) for the programs run below.
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:/tmp/deps/usr/lib/x86_64-linux-gnu/hdf5/serial:/tmp/fbsel${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [[ $STEPS == *build* ]]; then
  WHAT=build TARGETS="--target keras benchmark gpu_op_bench fashion_mnist_cnn $gpu_tests" bash .gpu/build.sh || exit $?
fi
if [[ $STEPS == *bench* ]]; then
  # Raw rows in /tmp/bench, the tables in $OUT/results.md, errors in $OUT/bench_err.log.
  R=/tmp/bench; mkdir -p $R
  t0=$(date +%s)
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; nvcc --version | tail -1
    ls /usr/lib/x86_64-linux-gnu/libcudnn.so.* /usr/lib/x86_64-linux-gnu/libnccl.so.* 2>/dev/null | tr '\n' ' '; echo; } >>$OUT/results.md
  [ "${OPS:-1}" = 1 ] && timeout 120 $B/apps/gpu_op_bench >$R/ops_ours.jsonl 2>>$OUT/bench_err.log
  [ "${OPS:-1}" = 1 ] && timeout 120 python3 apps/gpu_op_bench/gpu_op_bench.py >$R/ops_torch.jsonl 2>>$OUT/bench_err.log
  [ "${OPS:-1}" = 1 ] && python3 - $R/ops_ours.jsonl $R/ops_torch.jsonl <<'PY' | tee -a $OUT/results.md
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
        --warmup 10 --min-time ${MIN_TIME:-1} >>$R/ours.jsonl 2>>$OUT/bench_err.log ||
        { st=$?; rc=1; echo "ours $w $mode failed (exit $st): $(tail -2 $OUT/bench_err.log)" | tee -a $OUT/results.md; }
      if [ "${TF32_OFF:-0}" = 1 ]; then
        timeout 120 $B/apps/benchmark --workload $w --device cuda:0 --batch $batch --mode $mode --tf32 off \
          --repeats ${REPEATS:-3} --warmup 10 --min-time ${MIN_TIME:-1} >>$R/ours.jsonl 2>>$OUT/bench_err.log ||
          { st=$?; rc=1; echo "ours $w $mode --tf32 off failed (exit $st)" | tee -a $OUT/results.md; }
      fi
    done
  done
  # A mixed-precision row of ours where POLICY names one (the CUDA kernels' half types are checked by it).
  if [ -n "${POLICY:-}" ]; then
    timeout 60 $B/apps/benchmark --workload cnn --device cuda:0 --batch 128 --mode train --policy $POLICY --repeats 2 \
      --warmup 5 --min-time 0.5 >>$R/ours_policy.jsonl 2>>$OUT/bench_err.log ||
      { st=$?; rc=1; echo "ours cnn $POLICY failed (exit $st): $(tail -2 $OUT/bench_err.log)" | tee -a $OUT/results.md; }
  fi
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
  echo "gpu_check: bench $(( $(date +%s) - t0 )) s"
fi
if [[ $STEPS == *test* ]]; then
  # Each test program once, TEST_JOBS at a time (ctest starts one process per test case, and each
  # pays the CUDA context's ~1.5 s: 1,095 cases took 196 s on 12 processes that way).
  # At most 8 files come back from the device: one summary, one log with every program's output.
  t0=$(date +%s); mkdir -p /tmp/tlogs
  : >$OUT/tests_gpu.txt; : >$OUT/tests_gpu_full.log
  # Line-buffered, so that a program stopped by the time limit leaves what it printed; its exit
  # status ends its log (124: the limit).
  run_one() {
    [ -x $B/tests/$1 ] || { echo "$1: not built" >/tmp/tlogs/$1.log; return 1; }
    cd $B/tests && KERAS_DEVICE=cpu KERAS_NUM_THREADS=2 OMP_NUM_THREADS=2 KERAS_HARNESS_CHECKS=${HARNESS_CHECKS:-h} \
      timeout ${TEST_TIMEOUT:-300} stdbuf -oL -eL ./$1 --gtest_brief=1 >/tmp/tlogs/$1.log 2>&1
    echo "exit=$?" >>/tmp/tlogs/$1.log
  }
  export -f run_one; export B
  echo $gpu_tests | tr ' ' '\n' | xargs -P ${TEST_JOBS:-6} -I{} bash -c 'run_one {}'
  bad=0
  for t in $gpu_tests; do
    { echo "==== $t"; cat /tmp/tlogs/$t.log; } >>$OUT/tests_gpu_full.log
    status=$(grep -E '^exit=' /tmp/tlogs/$t.log | tail -1)
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\]|not built' /tmp/tlogs/$t.log | grep -E 'tests?[,.]|not built' | tr '\n' ' ')
    if [ "$status" != exit=0 ]; then
      bad=$((bad + 1))
      [ -n "$status" ] && summary="$summary($status$([ "$status" = exit=124 ] && echo ': stopped by the time limit'))"
    fi
    echo "$t: $summary" >>$OUT/tests_gpu.txt
  done
  [ $bad = 0 ] || rc=1
  grep -v ": \[  PASSED  \] [0-9]* tests\?\. \($\|\[  SKIPPED\)" $OUT/tests_gpu.txt
  echo "gpu_check: $(grep -c . $OUT/tests_gpu.txt) test programs, $bad failed or stopped, $(( $(date +%s) - t0 )) s"
  grep -B3 -A10 -E "Failure$|^\[  FAILED  \]" $OUT/tests_gpu_full.log | head -80
fi
if [[ $STEPS == *profile* ]]; then
  t0=$(date +%s)
  for w in resnet50:16 resnet50:64 resnet:128; do
    for mode in train infer; do
      echo "==== ${w%%:*} batch ${w##*:} $mode" >>$OUT/profile.txt
      KERAS_CUDA_CONV_HOST_TIMES=1 timeout 60 $B/apps/benchmark --workload ${w%%:*} --batch ${w##*:} --mode $mode \
        --breakdown 5 --device cuda:0 >>$OUT/profile.txt 2>&1 || { st=$?; rc=1; echo "(exit $st)" >>$OUT/profile.txt; }
    done
  done
  grep -E "^====|^(forward|backward|optimizer|train_on_batch|predict_on_batch) |^kernels|conv host time" $OUT/profile.txt
  echo "gpu_check: profile $(( $(date +%s) - t0 )) s"
fi
if [[ $STEPS == *fashion* ]]; then
  # The Fashion-MNIST example on the default device (the first GPU), staged by stage.sh --data.
  t0=$(date +%s)
  export KERAS_DATASETS_DIR=/tmp/deps/usr/share/datasets
  (cd $B && timeout ${FASHION_TIMEOUT:-150} apps/fashion_mnist_cnn >/tmp/fashion.log 2>&1); status=$?
  [ $status = 0 ] || rc=1
  { echo "## fashion_mnist_cnn on the GPU"; echo '```'; tail -12 /tmp/fashion.log; echo '```'
    echo "(exit $status, $(( $(date +%s) - t0 )) s)"; } | tee -a $OUT/results.md
fi
exit $rc
