#!/usr/bin/env bash
# Configures and builds the project (Release) into build/. Extra arguments go to the configure
# step, e.g. bash scripts/build.sh -DKERAS_NATIVE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j"$(nproc)"
