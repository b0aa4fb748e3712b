#!/usr/bin/env bash
# Installs the Debian packages the project needs. Safe to run again: apt is only touched when a
# package is missing, and the package index is refreshed at most once.
#
#   bash scripts/setup.sh           library, tests, examples
#   bash scripts/setup.sh --bench   also the PyTorch side of the benchmarks (large; CI skips it)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

packages=(
  build-essential cmake ccache pkg-config
  libdnnl-dev libhdf5-dev nlohmann-json3-dev zlib1g-dev
  libgtest-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libonnx-dev  # ONNX export: the official schema (onnx_pb.h, libonnx_proto)
  dataset-fashion-mnist libstb-dev python3 python3-venv
  libopenmpi-dev openmpi-bin  # multi-process training (keras::distribution) and its mpirun tests
  locales  # locale sources: the CSV test builds a decimal-comma locale from them
)
bench_packages=(python3-torch python3-torchvision python3-numpy libopenblas0-openmp)

for arg in "$@"; do
  case $arg in
    --bench) packages+=("${bench_packages[@]}") ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (expected --bench or --help)" >&2; exit 2 ;;
  esac
done

installed() {
  [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done

# Some tests check our files with the real readers: tensorboard reads our event files, h5py our
# weights files, onnx (onnx.checker) and onnxruntime our exported models. They are test references only, never runtime dependencies, and live in a virtual
# environment in .venv (tests/support/python.h finds it): never in the system's Python or in
# ~/.local, where pip's NumPy would shadow Debian's and break Debian's PyTorch. Without them
# those tests skip with a message.
install_test_references() {
  local venv="$root/.venv"
  # A half-made environment (no pip) is made again.
  if ! "$venv/bin/python3" -c "import tensorboard, h5py" 2>/dev/null; then
    { "$venv/bin/python3" -m pip --version >/dev/null 2>&1 || /usr/bin/python3 -m venv --clear "$venv"; } &&
      "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check tensorboard h5py ||
      echo "setup.sh: warning: the test references (tensorboard, h5py) are not installed in $venv; their tests will skip"
  fi
  # Each of the others apart, so that a failure leaves the rest in place. TensorBoard's profile
  # plugin (xprof) reads the profiler's traces back; onnxruntime has no wheel for some platforms.
  "$venv/bin/python3" -c "import xprof.profile_plugin" 2>/dev/null ||
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check tensorboard-plugin-profile ||
    echo "setup.sh: warning: tensorboard-plugin-profile is not installed in $venv; the profiler's plugin checks will skip"
  "$venv/bin/python3" -c "import onnx, onnxruntime" 2>/dev/null ||
    "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check onnx onnxruntime ||
    echo "setup.sh: warning: onnx / onnxruntime are not installed in $venv; the ONNX export checks will skip"
}

if ((${#missing[@]} == 0)); then
  echo "setup.sh: all ${#packages[@]} packages present"
  install_test_references
  exit 0
fi

# env inside sudo: sudo's env_reset would drop an exported DEBIAN_FRONTEND.
apt=(env DEBIAN_FRONTEND=noninteractive apt-get)
if ((EUID != 0)); then
  command -v sudo >/dev/null || { echo "setup.sh: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  apt=(sudo "${apt[@]}")
fi
echo "setup.sh: installing ${missing[*]}"
# A fresh container has an empty package index, and a stale one may name versions the mirror
# no longer has: refresh it once, up front when it is empty, otherwise only if install fails.
updated=0
if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
  "${apt[@]}" update
  updated=1
fi
if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
  ((updated)) && exit 1
  "${apt[@]}" update
  "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
fi
install_test_references
