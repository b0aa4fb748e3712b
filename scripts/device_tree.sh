#!/usr/bin/env bash
# The device tool carries the whole working tree, .gpu/ included, and refuses more than 64 MiB:
# the tracked files alone are about 48 MiB, 40 of them keras.applications fixtures, and .gpu/ is
# 21 MiB (51 with --data). The GPU run reads only the tiny_* models' files, their inputs and
# outputs; `hide` moves every other file of tests/data/keras/applications/ to /tmp/device_hold
# before a device call, `restore` moves them back after it (`git checkout -- tests/data` also
# restores them). `size` prints what would travel.
#
#   bash scripts/device_tree.sh hide && <device run> ; bash scripts/device_tree.sh restore
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
apps=tests/data/keras/applications
hold=/tmp/device_hold
case ${1:-size} in
  hide)
    mkdir -p $hold
    for f in $apps/*; do
      n=$(basename "$f")
      [[ $n == tiny_* && $n =~ (\.keras|\.k3\.h5|\.k2\.h5|\.input0\.npy|\.output0\.npy)$ ]] || mv "$f" $hold/
    done;;
  restore)
    [ -d $hold ] && { mv $hold/* $apps/ 2>/dev/null || true; rmdir $hold; };;
  size) ;;
  *) echo "device_tree.sh: expected hide, restore or size, got '$1'" >&2; exit 2;;
esac
{ git ls-files -z | xargs -0 stat -c %s 2>/dev/null || true; [ -d .gpu ] && find .gpu -type f -exec stat -c %s {} +; } |
  awk '{s += $1} END {printf "device_tree.sh: %.1f MiB would travel (limit 64)\n", s / 1048576}'
