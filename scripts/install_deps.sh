#!/usr/bin/env bash
# Installs the Debian bookworm packages tinyformer needs, only those that are missing (idempotent, fast
# when everything is there). Run as root. Usage: install_deps.sh [train|build|test|aarch64]
#   train  what scripts/quickstart.sh needs to build the library and the app and train: compiler, CMake and the
#          libraries the build cannot do without
#   build  (the default) also what the build uses when it finds it: the test suite's libraries, MPI, the Python
#          module, the subword tools' Python side and the English corpus; scripts/build.sh then configures again and
#          builds them
#   test   also the tools the test command runs (scripts/test.sh)
#   aarch64  what the preset aarch64 needs (on x86-64: build for Linux on ARM64, test under qemu-aarch64): the cross
#          compiler, qemu-user, and the arm64 builds of the libraries unpacked into an arm64 tree of their own
#          (docs/platforms.md)
set -euo pipefail
want="${1:-build}"
case "$want" in
  train | build | test | aarch64) ;;
  *) echo "install_deps.sh: unknown set '$want' (train, build, test or aarch64)" >&2; exit 2 ;;
esac
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
apt_install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -o Dpkg::Options::=--force-unsafe-io "$@" >/dev/null
}
if [ "$want" = aarch64 ]; then
  # On an arm64 machine the usual sets are the arm64 packages: nothing to cross.
  if [ "$(uname -m)" = aarch64 ]; then exec bash "$0" build; fi
  # Debian's arm64 -dev packages cannot all be installed beside the amd64 ones (libyaml-cpp-dev and
  # libsentencepiece-dev are not Multi-Arch: same, xtensor's arm64 package wants an arm64 xtl-dev that does not
  # exist): apt downloads them (the arm64 architecture added to dpkg for that) and they are unpacked into a tree of
  # their own, which cmake/aarch64-linux-gnu.cmake searches and qemu-aarch64 loads from. The C and C++ runtimes are
  # the cross compiler's (/usr/aarch64-linux-gnu). Nothing of the host's packages changes.
  root_arm64="${TINYFORMER_ARM64_ROOT:-/opt/tinyformer-arm64}"
  # arm64 builds, then packages of architecture all (headers and CMake files)
  arm64=(libopenblas-dev:arm64 libopenblas-pthread-dev:arm64 libopenblas0-pthread:arm64 libopenblas0:arm64
         libgfortran5:arm64 libfmt-dev:arm64 libfmt9:arm64 libyaml-cpp-dev:arm64 libyaml-cpp0.7:arm64
         libsentencepiece-dev:arm64 libsentencepiece0:arm64 libstb-dev:arm64 libstb0:arm64 libxsimd-dev:arm64
         libxtensor-dev:arm64 libxtensor-blas-dev:arm64 catch2:arm64 xtl-dev nlohmann-json3-dev libcli11-dev
         # the Python module and its tests under qemu (scripts/qemu_fronts.sh): arm64 python3 and NumPy, the libraries
         # their modules load, then pybind11, pytest and Hypothesis (architecture all)
         python3.11-minimal:arm64 libpython3.11-minimal:arm64 libpython3.11-stdlib:arm64 libpython3.11-dev:arm64
         python3-numpy:arm64 python3-yaml:arm64 libyaml-0-2:arm64 libexpat1:arm64 zlib1g:arm64 libffi8:arm64
         libssl3:arm64 libbz2-1.0:arm64 liblzma5:arm64 libuuid1:arm64 libcrypt1:arm64 libtinfo6:arm64
         libncursesw6:arm64 libsqlite3-0:arm64 libreadline8:arm64 libnsl2:arm64 libtirpc3:arm64 libdb5.3:arm64
         libgssapi-krb5-2:arm64 libkrb5-3:arm64 libk5crypto3:arm64 libkrb5support0:arm64 libcom-err2:arm64
         libkeyutils1:arm64 pybind11-dev python3-pytest python3-hypothesis python3-attr python3-iniconfig
         python3-packaging python3-pluggy python3-py python3-sortedcontainers python3-more-itertools
         python3-dateutil python3-six)
  host=(cmake make ccache pkg-config g++-aarch64-linux-gnu qemu-user)
  missing=()
  for p in "${host[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  stamp="$root_arm64/packages"
  if [ ${#missing[@]} -eq 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${arm64[*]}" ]; then exit 0; fi
  dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
  if [ ${#missing[@]} -gt 0 ]; then echo "installing: ${missing[*]}"; apt_install "${missing[@]}"; fi
  echo "unpacking into $root_arm64: ${arm64[*]}"
  debs="$(mktemp -d)"
  chmod a+rwx "$debs"  # apt downloads as its own user _apt
  (cd "$debs" && apt-get download -qq "${arm64[@]}")
  $SUDO rm -rf "$root_arm64"
  for deb in "$debs"/*.deb; do $SUDO dpkg-deb -x "$deb" "$root_arm64"; done
  rm -rf "$debs"
  # What update-alternatives makes on an installed system: OpenBLAS as libopenblas.so (its <cblas.h>:
  # cmake/aarch64-linux-gnu.cmake).
  lib="$root_arm64/usr/lib/aarch64-linux-gnu"
  $SUDO ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
  $SUDO ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
  # and as NumPy's BLAS and LAPACK (libblas.so.3, liblapack.so.3)
  $SUDO ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
  $SUDO ln -sf openblas-pthread/liblapack.so.3 "$lib/liblapack.so.3"
  echo "${arm64[*]}" | $SUDO tee "$stamp" >/dev/null
  exit 0
fi
# libxsmm-dev (x86-64): the JIT kernels for float products (tensor/gemm_xsmm.cpp); libsentencepiece-dev: the bpe and
# unigram tokenizers of text data (data/subword.cpp); ccache: scripts/build.sh compiles through it
packages=(cmake g++ make ccache pkg-config libxtensor-dev xtl-dev libxsimd-dev libopenblas-dev libfmt-dev
          libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libstb-dev libsentencepiece-dev)
x86_64=0
[ "$(uname -m)" = x86_64 ] && x86_64=1
[ $x86_64 -eq 1 ] && packages+=(libxsmm-dev)  # x86 only (on ARM every product runs on OpenBLAS)
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
  # and matplotlib to run the notebooks; hypothesis for the generative tester's Python and C++ front ends
  # (tests/app/fronts.py); locales for localedef and a German locale (a decimal comma) in the config tests
  packages+=(python3 python3-numpy python3-torch chromium clang libclang-rt-14-dev util-linux procps clang-format
             clang-tidy python3-pytest python3-nbconvert python3-ipykernel python3-matplotlib python3-hypothesis
             locales)
  # qemu-user for scripts/qemu_portable.sh (the portable build on a CPU without AVX); on x86-64 only, as the portable
  # build and the compile matrix are (scripts/test.sh installs the set aarch64 for the ARM64 build under qemu)
  [ $x86_64 -eq 1 ] && packages+=(qemu-user)
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
  $SUDO apt-get update -qq
  # --force-unsafe-io: dpkg unpacks without an fsync per file, which halves the install of the train set in a bare
  # bookworm (docs/build.md, "Build cost"). The risk is only that of a power cut during the install, after
  # which the packages unpacked then may need `apt-get install --reinstall`; the ones installed before are untouched
  # unless apt upgrades them as dependencies.
  apt_install "${missing[@]}"
fi
