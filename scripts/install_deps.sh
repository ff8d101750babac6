#!/usr/bin/env bash
# Installs the Debian bookworm packages tinyformer needs, only those that are missing (idempotent, fast
# when everything is there). Run as root. Usage: install_deps.sh [build|test]
set -euo pipefail
want="${1:-build}"
# libopenmpi-dev and openmpi-bin: data-parallel training under mpirun (the build works without them: one process);
# libxsmm-dev: the JIT kernels for float products (tensor/gemm_xsmm.cpp); ccache: scripts/build.sh compiles through it;
# python3-dev, pybind11-dev, python3-numpy and python3-yaml: the Python module (python/, TINYFORMER_PYTHON);
# libsentencepiece-dev: the bpe and unigram tokenizers of text data (data/subword.cpp), python3-sentencepiece: the same
# vocabularies read by scripts/vocabulary.py; fortunes: the English corpus of configs/fortunes_*.yaml
# (scripts/fortunes_corpus.sh)
packages=(cmake g++ make ccache pkg-config libxtensor-dev libxtensor-blas-dev xtl-dev libxsimd-dev libopenblas-dev
          libfmt-dev catch2 libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libstb-dev libopenmpi-dev openmpi-bin
          libxsmm-dev python3-dev pybind11-dev python3-numpy python3-yaml libsentencepiece-dev python3-sentencepiece
          fortunes)
if [ "$want" = test ]; then
  # the PyTorch parity test, the report's browser check, clang for the sanitizer build and libFuzzer, pgrep (MPI tests),
  # clang-format for scripts/check_style.sh, clang-tidy for scripts/check_tidy.sh; pytest, and nbconvert, ipykernel
  # and matplotlib to run the notebooks; qemu-user for scripts/qemu_portable.sh (the portable build on a CPU without AVX)
  packages+=(python3 python3-numpy python3-torch chromium clang libclang-rt-14-dev util-linux procps clang-format
             clang-tidy python3-pytest python3-nbconvert python3-ipykernel python3-matplotlib qemu-user)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
