#!/usr/bin/python3
"""What a precompiled header of the heavy third-party headers would save: compiles each given source with its own
command from a compile database, once as it is and once with the precompiled header, and prints the CPU seconds
(user + sys) of each, and of building the header once. CPU time, not wall time: the machine may be shared.

Usage: measure_pch.py BUILD_DIR SOURCE...
  BUILD_DIR holds compile_commands.json (cmake --preset release -B build-tidy -DCMAKE_EXPORT_COMPILE_COMMANDS=ON, or
  --preset sanitize for clang). The header is built with the first source's flags; sources under tests/ get Catch2's
  header in it as well, so give library and test sources in separate calls.
Example: measure_pch.py build-tidy lib/tinyformer/ops/softmax.cpp lib/tinyformer/nn/gpt.cpp
"""
import json
import os
import pathlib
import resource
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The headers that most sources of lib/ include (standard, xtensor, xsimd, fmt, nlohmann_json); Catch2 for tests/.
HEADERS = ["algorithm", "cmath", "functional", "map", "memory", "optional", "stdexcept", "string", "vector",
           "fmt/format.h", "nlohmann/json.hpp", "xsimd/xsimd.hpp", "xtensor/xarray.hpp", "xtensor/xbuilder.hpp",
           "xtensor/xmath.hpp", "xtensor/xnoalias.hpp", "xtensor/xview.hpp"]
TEST_HEADERS = ["catch2/catch.hpp"]


def command(database, source):
    """The compile command of `source` without its -o and -c arguments, and its directory."""
    entry = database.get(str((ROOT / source).resolve()))
    if entry is None:
        sys.exit(f"measure_pch: {source} is not in the compile database")
    args = shlex.split(entry["command"]) if "command" in entry else list(entry["arguments"])
    for flag in ("-o", "-c"):
        i = args.index(flag)
        del args[i:i + 2]
    return entry["directory"], args


def cpu_seconds(directory, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(args, cwd=directory, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"measure_pch: failed: {' '.join(args)}\n{done.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    build = pathlib.Path(sys.argv[1])
    sources = sys.argv[2:]
    database = {str((pathlib.Path(e["directory"]) / e["file"]).resolve()): e
                for e in json.loads((build / "compile_commands.json").read_text())}
    work = pathlib.Path(tempfile.mkdtemp(prefix="measure_pch."))
    headers = HEADERS + (TEST_HEADERS if sources[0].startswith("tests/") else [])
    header = work / "pch.hpp"
    header.write_text("".join(f"#include <{h}>\n" for h in headers))
    directory, args = command(database, sources[0])
    clang = "clang" in os.path.basename(args[0])
    pch = work / ("pch.hpp.pch" if clang else "pch.hpp.gch")
    built = cpu_seconds(directory, args + ["-x", "c++-header", str(header), "-o", str(pch)])
    print(f"precompiled header ({len(headers)} headers, {pch.stat().st_size >> 20} MB): {built:.1f} CPU s")
    use = ["-include-pch", str(pch)] if clang else ["-include", str(header), "-Winvalid-pch"]
    total = [0.0, 0.0]
    for source in sources:
        directory, args = command(database, source)
        out = ["-c", str(ROOT / source), "-o", str(work / "out.o")]
        plain = cpu_seconds(directory, args + out)
        with_pch = cpu_seconds(directory, args + use + out)
        total[0] += plain
        total[1] += with_pch
        print(f"{source}: {plain:.1f} CPU s, with the header {with_pch:.1f} ({100 * (with_pch / plain - 1):+.0f}%)")
    print(f"all {len(sources)}: {total[0]:.1f} -> {total[1]:.1f} CPU s ({100 * (total[1] / total[0] - 1):+.0f}%), "
          f"plus {built:.1f} s once for the header")
    for f in work.iterdir():
        f.unlink()
    work.rmdir()


if __name__ == "__main__":
    main()
