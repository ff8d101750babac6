#!/usr/bin/python3
"""The compile matrix: the library compiled for x86-64 CPUs other than this one, warnings as errors.

A warning that only one CPU's instruction set brings out (GCC 12's "'__Y' is used uninitialized" inside the AVX-512
intrinsics on a Sapphire Rapids, issue 47) fails here, on any x86-64 host, as it would fail the dev build on that CPU.
Each of the library's translation units is compiled with the flags of the real build (-O3 and -O1 where the build uses
them, -Wall -Wextra -Werror, the defines, include paths and GCC 12's forced header), read from compile_commands.json
of a configure-only tree (build-matrix/gcc, build-matrix/clang), with -march=native replaced by each target's -march.
Compile only (-c into a throwaway object: GCC's uninitialized warnings come from its optimiser, which -fsyntax-only
skips), through ccache when it is installed, so an unchanged source costs nothing the second time.

Usage: scripts/check_matrix.py [--compiler gcc|clang]... [--target MARCH]... [--ci] [--under DIR]...
                               [--containing TEXT]... [--verbose] [-j N]
Prints one line per compiler and target: translation units, warnings (0, or it fails with the first diagnostics) and
CPU seconds (user + sys of the compilers); then the totals and the wall time. x86-64 only: elsewhere it says so and exits 0.
"""
import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# GCC 12.2 knows no znver4: x86-64-v4 stands for Zen 4's AVX-512. Neither does clang 14 (clang 16 added it).
GCC_TARGETS = ["x86-64-v2", "x86-64-v3", "x86-64-v4", "haswell", "skylake-avx512", "icelake-server", "sapphirerapids",
               "znver3"]
CLANG_TARGETS = ["x86-64-v4", "skylake-avx512", "icelake-server", "sapphirerapids"]
COMPILERS = {"gcc": ("g++", GCC_TARGETS), "clang": ("clang++", CLANG_TARGETS)}
# What CI compiles (--ci): each instruction set once per compiler, AVX-512 at both ends (x86-64-v4's and Sapphire
# Rapids'), and AMD's tuning; haswell, skylake-avx512 and icelake-server add only another -mtune or a subset of a kept
# target's instructions. 7 builds instead of 12 (the 12 took 635 CPU s of the suite's, 2 Dec on the Emerald Rapids).
CI_TARGETS = {"gcc": ["x86-64-v2", "x86-64-v3", "x86-64-v4", "sapphirerapids", "znver3"],
              "clang": ["x86-64-v4", "sapphirerapids"]}


def configure(compiler, cxx, unity=True):
    """A configure-only tree of the library as the release build compiles it (unity=False: source by source); returns
    its compile commands."""
    tree = ROOT / "build-matrix" / (compiler + ("" if unity else "-sources"))
    (tree / "CMakeCache.txt").unlink(missing_ok=True)  # configured afresh: the flags of a new build, nothing cached
    subprocess.run(["cmake", "-S", str(ROOT), "-B", str(tree), "-DCMAKE_BUILD_TYPE=Release",
                    f"-DTINYFORMER_UNITY={'ON' if unity else 'OFF'}",
                    f"-DCMAKE_CXX_COMPILER={cxx}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON", "-DTINYFORMER_WERROR=ON",
                    "-DTINYFORMER_TESTS=OFF", "-DTINYFORMER_APP=OFF", "-DTINYFORMER_INSTALL=OFF",
                    "-DTINYFORMER_PYTHON=OFF"], check=True, stdout=subprocess.DEVNULL)
    entries = json.loads((tree / "compile_commands.json").read_text())
    # Not the three generated sources that return embedded text (lib/CMakeLists.txt): made at build time, no SIMD code
    return [e for e in entries if "/embedded/" not in e["file"]]


def command_for(entry, march, obj, launcher):
    """The build's command for entry with -march=MARCH and its object at obj."""
    args = shlex.split(entry["command"])
    if "-march=native" not in args:
        sys.exit(f"check_matrix: no -march=native in the command of {entry['file']}: the build's flags changed")
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-c"):
            skip = True
        else:
            out.append(f"-march={march}" if a == "-march=native" else a)
    return launcher + out + ["-c", entry["file"], "-o", str(obj)]


def compile_one(cmd, cwd, log):
    """Runs cmd, its output into log; returns (status, CPU seconds)."""
    with open(log, "wb") as f:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_utime + usage.ru_stime


def diagnostics(text):
    return [line for line in text.splitlines() if ": warning: " in line or ": error: " in line]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compiler", action="append", choices=sorted(COMPILERS))
    parser.add_argument("--target", action="append", help="a -march value (default: the compiler's list)")
    parser.add_argument("--ci", action="store_true", help="CI's targets (CI_TARGETS) instead of every compiler's list")
    parser.add_argument("--containing", metavar="TEXT", action="append",
                        help="only the translation units whose text (a unity batch's list of sources) holds TEXT; "
                             "repeated: any of them")
    parser.add_argument("--under", metavar="DIR", action="append",
                        help="only the library's sources under lib/tinyformer/DIR, each compiled alone (no unity "
                             "batches); repeated: any of them")
    parser.add_argument("--verbose", action="store_true", help="each translation unit's CPU time")
    parser.add_argument("-j", type=int, default=os.cpu_count())
    opts = parser.parse_args()
    if platform.machine() != "x86_64":
        print(f"compile matrix: x86-64 only, skipped on {platform.machine()}")
        return 0
    launcher = ["ccache"] if shutil.which("ccache") else []
    os.environ.setdefault("CCACHE_BASEDIR", str(ROOT))  # clones share the cache, as in scripts/build.sh
    start, total_cpu, total_units, failed = time.monotonic(), 0.0, 0, []
    with tempfile.TemporaryDirectory(prefix="tinyformer-matrix-") as scratch, ThreadPoolExecutor(opts.j) as pool:
        builds = []  # every build's compiles are queued first, so that the cores stay busy across builds
        for compiler in opts.compiler or ["gcc", "clang"]:
            cxx, targets = COMPILERS[compiler]
            entries = configure(compiler, cxx, unity=not opts.under)
            if opts.under:
                dirs = [f"/lib/tinyformer/{d.strip('/')}/" for d in opts.under]
                entries = [e for e in entries if any(d in e["file"] for d in dirs)]
            if opts.containing:
                entries = [e for e in entries if any(t in Path(e["file"]).read_text() for t in opts.containing)]
            for march in opts.target or (CI_TARGETS[compiler] if opts.ci else targets):
                jobs = []
                for i, e in enumerate(entries):
                    base = Path(scratch) / f"{compiler}-{march}-{i}"
                    cmd = command_for(e, march, base.with_suffix(".o"), launcher)
                    jobs.append((e["file"], base.with_suffix(".log"),
                                 pool.submit(compile_one, cmd, e["directory"], base.with_suffix(".log"))))
                builds.append((f"{compiler} -march={march}", jobs))
        for build, jobs in builds:
            cpu, warnings, errors = 0.0, 0, []
            for source, log, job in jobs:
                status, seconds = job.result()
                cpu += seconds
                if opts.verbose:
                    print(f"  {source}: {seconds:.1f} CPU s", flush=True)
                text = log.read_text(errors="replace")
                found = diagnostics(text)
                warnings += len(found)
                if status != 0 or found:
                    errors.append((source, status, text))
            total_cpu += cpu
            total_units += len(jobs)
            print(f"compile matrix: {build}: {len(jobs)} translation units, {warnings} warnings, {cpu:.0f} CPU s",
                  flush=True)
            for source, status, text in errors:
                failed.append(build)
                print(f"  {source}: exit status {status}", flush=True)
                print("\n".join("    " + line for line in text.splitlines()[:40]), flush=True)
    verdict = "FAIL in " + ", ".join(sorted(set(failed))) if failed else "no warning"
    print(f"compile matrix: {len(builds)} builds, {total_units} compiles, {verdict}, {total_cpu:.0f} CPU s, "
          f"{time.monotonic() - start:.0f} s on {opts.j} cores")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
