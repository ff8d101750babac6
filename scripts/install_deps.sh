#!/usr/bin/env bash
# Installs the Debian bookworm packages tinyformer needs, only those that are missing (idempotent, fast
# when everything is there). Run as root. Usage: install_deps.sh [train|build|test]
#   train  what scripts/quickstart.sh needs to build the library and the app and train: compiler, CMake and the
#          libraries the build cannot do without
#   build  (the default) also what the build uses when it finds it: the test suite's libraries, MPI, the Python
#          module, the subword tools' Python side and the English corpus; scripts/build.sh then configures again and
#          builds them
#   test   also the tools the test command runs (scripts/test.sh)
set -euo pipefail
want="${1:-build}"
case "$want" in
  train | build | test) ;;
  *) echo "install_deps.sh: unknown set '$want' (train, build or test)" >&2; exit 2 ;;
esac
# libxsmm-dev: the JIT kernels for float products (tensor/gemm_xsmm.cpp); libsentencepiece-dev: the bpe and unigram
# tokenizers of text data (data/subword.cpp); ccache: scripts/build.sh compiles through it
packages=(cmake g++ make ccache pkg-config libxtensor-dev xtl-dev libxsimd-dev libopenblas-dev libfmt-dev
          libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libstb-dev libxsmm-dev libsentencepiece-dev)
if [ "$want" != train ]; then
  # catch2 and libxtensor-blas-dev: the test suite (tests/); libopenmpi-dev and openmpi-bin: data-parallel training
  # under mpirun (without them: one process); python3-dev, pybind11-dev, python3-numpy and python3-yaml: the Python
  # module (python/, TINYFORMER_PYTHON); python3-sentencepiece: tests that encode with a checkpoint's model in Python;
  # fortunes: the English corpus of configs/fortunes_*.yaml (configs/data/fortunes_corpus.sh); python3-venv, python3-pip,
  # python3-setuptools and python3-wheel: `pip install --no-build-isolation --no-index .` into a venv (docs/python.md)
  packages+=(catch2 libxtensor-blas-dev libopenmpi-dev openmpi-bin python3-dev pybind11-dev python3-numpy python3-yaml
             python3-sentencepiece fortunes python3-venv python3-pip python3-setuptools python3-wheel)
fi
if [ "$want" = test ]; then
  # the PyTorch parity test, the report's browser check, clang for the sanitizer build and libFuzzer, pgrep (MPI tests),
  # clang-format for scripts/check_style.sh, clang-tidy for scripts/check_tidy.sh; pytest, and nbconvert, ipykernel
  # and matplotlib to run the notebooks; qemu-user for scripts/qemu_portable.sh (the portable build on a CPU without AVX)
  packages+=(python3 python3-numpy python3-torch chromium clang libclang-rt-14-dev util-linux procps clang-format
             clang-tidy python3-pytest python3-nbconvert python3-ipykernel python3-matplotlib qemu-user)
  # Two small packages that settle a choice in the dependencies above, which apt would otherwise settle with the first
  # name it reads: python3-munkres for matplotlib's fonttools ("python3-scipy | python3-munkres"; SciPy brings Pythran
  # and Boost's 15,500 headers) and dbus-x11 for Chromium's dconf ("default-dbus-session-bus | dbus-session-bus", which
  # dbus-user-session provides and brings systemd with). Nothing here uses SciPy or a session bus. 22 packages and 217
  # MB fewer, 13 s less of install for the SciPy part alone (docs/build.md, "Build cost").
  packages+=(python3-munkres dbus-x11)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  # --force-unsafe-io: dpkg unpacks without an fsync per file, which halves the install of the train set in a bare
  # bookworm (docs/build.md, "Build cost"). The risk is only that of a power cut during the install, after
  # which the packages unpacked then may need `apt-get install --reinstall`; the ones installed before are untouched
  # unless apt upgrades them as dependencies.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-unsafe-io "${missing[@]}" >/dev/null
fi
