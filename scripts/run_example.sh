#!/usr/bin/env bash
# Installs what is missing, builds, and trains the example MLP on Fashion-MNIST (apps/
# fashion_mnist_mlp). Arguments go to the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
example=build/apps/fashion_mnist_mlp
if [[ ! -x $example ]]; then
  echo "run_example.sh: expected the example program $example, got none (is apps/fashion_mnist_mlp/ present and KERAS_BUILD_APPS on?)" >&2
  exit 1
fi
exec "$example" "$@"
