#!/usr/bin/env bash
# The device tool carries the whole working tree, .gpu/ included, and refuses more than 64 MiB:
# the tracked files alone are about 48 MiB, 40 of them keras.applications fixtures, and .gpu/ is
# 21 MiB (51 with stage.sh --data). The GPU run reads only the tiny_* models' files, inputs and
# outputs; `hide` moves every other file of tests/data/keras/applications/ to /tmp/device_hold
# before a device call, `restore` moves them back after it. While they are away, the CPU tests
# that read them fail: run neither the suite nor such tests between the two. `size` prints what
# would travel (tracked and untracked files that git does not ignore, and .gpu/).
#
#   bash scripts/device_tree.sh hide && <device run> ; bash scripts/device_tree.sh restore
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
apps=tests/data/keras/applications
hold=/tmp/device_hold
case ${1:-size} in
  hide)
    if [ -n "$(ls -A $hold 2>/dev/null)" ]; then
      echo "device_tree.sh: expected an empty $hold, got files in it. Run restore first (or, if the tree" \
           "was restored with git, remove $hold)." >&2
      exit 1
    fi
    mkdir -p $hold
    for f in $apps/*; do
      n=$(basename "$f")
      [[ $n == tiny_* && $n =~ (\.keras|\.k3\.h5|\.k2\.h5|\.input[0-9]+\.npy|\.output[0-9]+\.npy)$ ]] || mv "$f" $hold/
    done;;
  restore)
    if [ -d $hold ]; then
      for f in $hold/*; do [ -e "$f" ] && mv -n "$f" $apps/; done
      rmdir $hold 2>/dev/null || echo "device_tree.sh: $hold kept: its files already exist in $apps" >&2
    fi;;
  size) ;;
  *) echo "device_tree.sh: expected hide, restore or size, got '$1'" >&2; exit 2;;
esac
{
  git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c %s 2>/dev/null || true
  if [ -d .gpu ]; then find .gpu -type f -exec stat -c %s {} +; fi
} | awk '{s += $1} END {printf "device_tree.sh: %.1f MiB would travel (limit 64)\n", s / 1048576}'
