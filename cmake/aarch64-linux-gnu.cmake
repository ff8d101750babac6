# Cross-compiling for Linux on ARM64 (the preset aarch64, docs/platforms.md): Debian's g++-aarch64-linux-gnu with its
# own C and C++ runtimes (/usr/aarch64-linux-gnu), against Debian's arm64 packages that `scripts/install_deps.sh
# aarch64` unpacks into TINYFORMER_ARM64_ROOT (default /opt/tinyformer-arm64). The tests run under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
if(DEFINED ENV{TINYFORMER_ARM64_ROOT})
  set(tinyformer_arm64_root "$ENV{TINYFORMER_ARM64_ROOT}")
else()
  set(tinyformer_arm64_root /opt/tinyformer-arm64)
endif()
if(NOT EXISTS "${tinyformer_arm64_root}/packages")
  message(FATAL_ERROR "no arm64 packages in ${tinyformer_arm64_root}: run `bash scripts/install_deps.sh aarch64` first")
endif()
# Packages, libraries and headers from the arm64 tree (and the cross runtimes) only, never the host's; programs
# (pkg-config, qemu) from the host.
set(CMAKE_FIND_ROOT_PATH "${tinyformer_arm64_root}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (SentencePiece) reads the arm64 tree's .pc files, whose paths start at /usr.
set(ENV{PKG_CONFIG_LIBDIR}
    "${tinyformer_arm64_root}/usr/lib/aarch64-linux-gnu/pkgconfig:${tinyformer_arm64_root}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${tinyformer_arm64_root}")
# What the compiler and linker would find in /usr on an arm64 machine: stb (linked by name), <cblas.h>, and the
# libraries that the arm64 libraries need in turn (OpenBLAS's libgfortran).
set(tinyformer_arm64_lib "${tinyformer_arm64_root}/usr/lib/aarch64-linux-gnu")
set(CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES "${tinyformer_arm64_root}/usr/include"
                                           "${tinyformer_arm64_root}/usr/include/aarch64-linux-gnu/openblas-pthread")
set(CMAKE_C_STANDARD_INCLUDE_DIRECTORIES ${CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES})
foreach(kind IN ITEMS EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT
      "-L${tinyformer_arm64_lib} -Wl,-rpath-link,${tinyformer_arm64_lib}:${tinyformer_arm64_lib}/openblas-pthread")
endforeach()
# The arm64 python3's headers (install_deps.sh aarch64 unpacks them), for the Python module: without an interpreter
# to ask (the host's cannot say the target's), FindPython needs their directory.
file(GLOB tinyformer_arm64_python "${tinyformer_arm64_root}/usr/include/python3.*/Python.h")
if(tinyformer_arm64_python)
  list(GET tinyformer_arm64_python 0 tinyformer_arm64_python)
  get_filename_component(tinyformer_arm64_python "${tinyformer_arm64_python}" DIRECTORY)
  set(Python_INCLUDE_DIR "${tinyformer_arm64_python}" CACHE PATH "The arm64 python3's headers")
endif()
# The tests, and whatever else CMake runs of the build, run under qemu-aarch64: the cross runtimes as the root of the
# ELF interpreter and the C++ library (-L), the arm64 tree's libraries on the guest's library path (-E).
find_program(TINYFORMER_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${TINYFORMER_QEMU_AARCH64}" -L /usr/aarch64-linux-gnu -E
    "LD_LIBRARY_PATH=${tinyformer_arm64_lib}:${tinyformer_arm64_lib}/openblas-pthread")
