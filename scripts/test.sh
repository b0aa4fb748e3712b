#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite. This is what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j2 --timeout "${KERAS_TEST_TIMEOUT:-600}"
