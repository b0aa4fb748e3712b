#!/usr/bin/env bash
# Builds the library and the tests with AddressSanitizer + UndefinedBehaviorSanitizer (leak
# detection on) into build-sanitize/ and runs the whole suite there; any report fails a test, so
# this exits non-zero. Apps and CUDA are left out (CUDA's runtime is not ASan-clean). Takes most of
# an hour on 2 cores the first time; ccache makes reruns cheap. Extra arguments go to ctest,
# e.g. bash scripts/sanitize.sh -R BackupAndRestore.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKERAS_BUILD_APPS=OFF -DKERAS_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined"
cmake --build build-sanitize -j"$(nproc)"
supp="$PWD/scripts/sanitize"
# allocator_may_return_null: a corrupt HDF5 file can make HDF5 ask malloc for ~2^55 bytes; libc
# returns NULL and HDF5 reports the file as bad (what the fuzz tests check), ASan would abort.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:allocator_may_return_null=1:suppressions=$supp/asan.supp"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
ctest --test-dir build-sanitize --output-on-failure -j"$(nproc)" --timeout 1800 -LE install "$@"
