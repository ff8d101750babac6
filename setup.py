"""Builds the tinyformer Python package with the project's CMake: `pip install --no-build-isolation --no-index .`
from the repository's root (Debian's setuptools and wheel; the C++ packages of scripts/install_deps.sh build).

The extension tinyformer._core is the target tinyformer_python of a Release build of this tree: the library
compiled for this CPU (-march=native), as the quickstart's build; TINYFORMER_CMAKE_ARGS adds CMake options. The
CMake build directory is build-pip-<python ABI> under the source tree, so a second install compiles only what
changed (and ccache, when installed, serves objects other builds made). TINYFORMER_BUILD_DIR chooses another; one
configured already (build/ of scripts/build.sh) is built as it is and its module copied. The version is the
project's, read from CMakeLists.txt's project() line.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        match = re.search(r"project\(\s*tinyformer\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not match:
        sys.exit("setup.py: CMakeLists.txt has no project(tinyformer VERSION x.y.z) line")
    return match.group(1)


class CMakeBuild(build_ext):
    """Configures and builds the project's CMake target tinyformer_python, then copies the module and its stub."""

    def build_extension(self, ext):
        if shutil.which("cmake") is None:
            sys.exit("setup.py: cmake is not installed (scripts/install_deps.sh installs the build's packages)")
        tag = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
        build_dir = os.environ.get("TINYFORMER_BUILD_DIR") or os.path.join(ROOT, f"build-pip-{tag}")
        configure = ["cmake", "-S", ROOT, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DTINYFORMER_TESTS=OFF",
                     "-DTINYFORMER_APP=OFF", "-DTINYFORMER_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"]
        if shutil.which("ccache"):
            configure.append("-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
        configure += shlex.split(os.environ.get("TINYFORMER_CMAKE_ARGS", ""))
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 1)
        if not (os.environ.get("TINYFORMER_BUILD_DIR") and os.path.exists(os.path.join(build_dir, "CMakeCache.txt"))):
            subprocess.run(configure, check=True)  # a build dir given and configured already is used as it is
        subprocess.run(["cmake", "--build", build_dir, "--target", "tinyformer_python", "-j", jobs], check=True)
        built = os.path.join(build_dir, "python", "tinyformer")
        module = [f for f in os.listdir(built) if f.startswith("_core.") and f.endswith(".so")]
        if len(module) != 1:
            sys.exit(f"setup.py: expected one _core*.so in {built}, found {module}")
        if sysconfig.get_config_var("EXT_SUFFIX") and not module[0].endswith(sysconfig.get_config_var("EXT_SUFFIX")):
            sys.exit(f"setup.py: {build_dir} built {module[0]} for another Python than {sys.executable}; choose "
                     f"another TINYFORMER_BUILD_DIR")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, module[0]), target)
        stub = os.path.join(built, "_core.pyi")
        if os.path.exists(stub):
            shutil.copyfile(stub, os.path.join(os.path.dirname(target), "_core.pyi"))


# setuptools' own files go beside the CMake build, not into build/ (the CMake presets' directory).
setup(version=project_version(), ext_modules=[Extension("tinyformer._core", sources=[])],
      cmdclass={"build_ext": CMakeBuild},
      options={"build": {"build_base": os.path.join("build-pip", "setuptools")},
               "egg_info": {"egg_base": os.path.join("build-pip")}})
