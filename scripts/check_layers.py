#!/usr/bin/env python3
"""No include runs upward: checks that each folder of lib/tinyformer/ includes only its own layer and the layers
listed before it in docs/architecture.md, and that the library includes nothing of apps/, tests/, python/ or
examples/ (which sit above it). The Python bindings (python/src) sit above the library too: they include its public
headers (tinyformer/..., not the internal ones of TINYFORMER_INTERNAL_HEADER_REGEX in lib/CMakeLists.txt, which is
read from there) and their own files, never apps/ or tests/.

Usage: check_layers.py [ROOT]       check the tree at ROOT (default: this repository); exit 1 naming each violation
       check_layers.py --self-test  feed the check generated trees (every pair of layers, both directions, and
                                    includes of the layers above the library) and require exactly the violations
                                    put in; exit 1 if the check misses one or reports a false one

The order is read from docs/architecture.md, not repeated here: a new folder under lib/tinyformer/ must be placed in
its list before it passes. Runs in well under a second (CTest: "layers: ...").
"""
import itertools
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
LAYOUT_ENTRY = re.compile(r"^  ([a-z_]+)/\s")
SOURCE_SUFFIXES = {".cpp", ".hpp", ".h", ".cc"}
UMBRELLA = "tinyformer/tinyformer.hpp"  # includes every layer; only users and the layers above lib may include it


def layer_order(listing_text):
    """The folders of lib/tinyformer/ in the order of docs/architecture.md's list (lower layers first)."""
    lines = listing_text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("lib/tinyformer/"))
    except StopIteration:
        raise SystemExit("check_layers: docs/architecture.md has no line starting with 'lib/tinyformer/'")
    order = []
    for line in lines[start + 1:]:
        if not line.startswith(" "):  # the next top-level entry (apps/) ends the library's layers
            break
        match = LAYOUT_ENTRY.match(line)
        if match:
            order.append(match.group(1))
    if not order:
        raise SystemExit("check_layers: docs/architecture.md lists no layer under lib/tinyformer/")
    return order


def violations(order, files):
    """files: {path relative to the root: text}. Returns one message per include that runs upward."""
    rank = {name: i for i, name in enumerate(order)}
    found = []
    folders = {p.split("/")[2] for p in files if p.startswith("lib/tinyformer/") and p.count("/") >= 3}
    for folder in sorted(folders - set(order)):
        found.append(f"lib/tinyformer/{folder}/: not in docs/architecture.md's list; place it among the layers "
                     f"({' < '.join(order)})")
    for path, text in sorted(files.items()):
        parts = path.split("/")
        if parts[0] != "lib" or len(parts) < 3 or parts[1] != "tinyformer":
            continue
        layer = parts[2] if len(parts) >= 4 else None  # None: lib/tinyformer/tinyformer.hpp, the umbrella
        if layer is not None and layer not in rank:
            continue  # reported above
        for number, line in enumerate(text.splitlines(), 1):
            match = INCLUDE.match(line)
            if not match:
                continue
            quote, target = match.groups()
            where = f"{path}:{number}"
            if target.startswith("tinyformer/"):
                if layer is None:
                    continue
                if target == UMBRELLA:
                    found.append(f"{where}: {layer}/ includes {target}, which includes every layer")
                    continue
                other = target.split("/")[1]
                if other in rank and rank[other] > rank[layer]:
                    found.append(f"{where}: {layer}/ includes {target}, but {other}/ is a higher layer "
                                 f"(after {layer}/ in docs/architecture.md: {' < '.join(order)})")
            elif quote == '"':
                # A quoted include that is not tinyformer/...: only a file next to this one is allowed.
                sibling = "/".join(parts[:-1] + [target])
                if sibling not in files:
                    found.append(f"{where}: the library includes \"{target}\", which is not a file of its own "
                                 "(lib/ includes only tinyformer/... headers, never apps/, tests/, python/ or "
                                 "examples/)")
    return found


def internal_headers(cmake_text):
    """The regex of the library's internal headers, from lib/CMakeLists.txt's TINYFORMER_INTERNAL_HEADER_REGEX."""
    match = re.search(r'set\(TINYFORMER_INTERNAL_HEADER_REGEX\s+"([^"]+)"', cmake_text)
    if not match:
        raise SystemExit("check_layers: lib/CMakeLists.txt sets no TINYFORMER_INTERNAL_HEADER_REGEX")
    return re.compile(match.group(1).replace("\\\\", "\\"))


def binding_violations(files, internal):
    """Includes of python/src/ that are not the library's public headers or the bindings' own files."""
    found = []
    for path, text in sorted(files.items()):
        if not path.startswith("python/src/"):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            match = INCLUDE.match(line)
            if not match or match.group(1) != '"':
                continue
            target = match.group(2)
            where = f"{path}:{number}"
            if internal.match(target):
                found.append(f"{where}: the bindings include {target}, an internal header of the library; use its "
                             "public headers (tinyformer/ops/ops.hpp, ...)")
            elif not target.startswith("tinyformer/") and f"python/src/{target}" not in files:
                found.append(f"{where}: the bindings include \"{target}\", which is neither a public header of the "
                             "library (tinyformer/...) nor a file of python/src/")
    return found


def read_tree(root):
    files = {}
    for folder in ("lib", "python/src"):
        for path in (root / folder).rglob("*"):
            if path.suffix in SOURCE_SUFFIXES and path.is_file():
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def check(root):
    order = layer_order((root / "docs" / "architecture.md").read_text(encoding="utf-8"))
    files = read_tree(root)
    internal = internal_headers((root / "lib" / "CMakeLists.txt").read_text(encoding="utf-8"))
    found = violations(order, files) + binding_violations(files, internal)
    for message in found:
        print(message)
    if found:
        print(f"FAIL: {len(found)} include(s) run upward or outside the library's layers")
        return 1
    print(f"PASS: {len(files)} files of lib/ and python/src/ include only their own layer and those before it: "
          f"{' < '.join(order)}")
    return 0


def self_test():
    """Generated cases: for every ordered pair of layers, one file of the first including a header of the second.
    Upward pairs must be reported (once, naming the file and line), downward and same-layer ones must not."""
    order = ["tensor", "autograd", "ops", "config", "nn", "train"]
    listing = "x\n```\nlib/tinyformer/   layers\n" + "".join(f"  {name}/   the {name} layer\n" for name in order)
    listing += "apps/   above\n```\n"
    failures = 0
    cases = 0
    if layer_order(listing) != order:
        print(f"self-test: layer_order read {layer_order(listing)} from the list, expected {order}")
        failures += 1
    base = {f"lib/tinyformer/{name}/{name}.hpp": "#pragma once\n" for name in order}
    for lower, upper in itertools.product(order, order):
        forms = ('#include "tinyformer/{}/{}.hpp"', "#include <tinyformer/{}/{}.hpp>",
                 '  #  include "tinyformer/{}/{}.hpp"')
        for form in forms:
            cases += 1
            files = dict(base)
            path = f"lib/tinyformer/{lower}/probe.cpp"
            files[path] = "// probe\n#include <vector>\n" + form.format(upper, upper) + "\n"
            found = violations(order, files)
            upward = order.index(upper) > order.index(lower)
            expected = [f"{path}:3:"] if upward else []
            got = [m.split(" ")[0] for m in found]
            if got != expected:
                print(f"self-test: {lower}/ including {upper}/ ({form}): expected {expected}, got {found}")
                failures += 1
    extra = [("lib/tinyformer/nn/probe.cpp", '#include "bench.hpp"\n', True),  # a header of apps/
             ("lib/tinyformer/nn/probe.cpp", '#include "../../../tests/support/helpers.hpp"\n', True),
             ("lib/tinyformer/ops/probe.cpp", '#include "tinyformer/tinyformer.hpp"\n', True),
             ("lib/tinyformer/ops/probe.cpp", '#include "tensor.hpp"\n', True),  # not next to it
             ("lib/tinyformer/ops/probe.cpp", '#include "ops.hpp"\n', False),  # lib/tinyformer/ops/ops.hpp
             ("lib/tinyformer/tinyformer.hpp", '#include "tinyformer/train/train.hpp"\n', False),
             ("lib/tinyformer/extra/probe.cpp", "#include <vector>\n", True)]  # a folder the list does not place
    base["lib/tinyformer/ops/ops.hpp"] = "#pragma once\n"
    for path, text, bad in extra:
        cases += 1
        files = dict(base)
        files[path] = text
        found = violations(order, files)
        if bool(found) != bad or len(found) > 1:
            print(f"self-test: {path} with {text.strip()!r}: expected {'one violation' if bad else 'none'}, "
                  f"got {found}")
            failures += 1
    bindings = [('#include "tinyformer/ops/ops.hpp"\n', False), ('#include "tensor.hpp"\n', False),
                ("#include <pybind11/pybind11.h>\n", False), ('#include "tinyformer/ops/kernels/rows.hpp"\n', True),
                ('#include "tinyformer/train/run.hpp"\n', True), ('#include "tinyformer/train/trainer.hpp"\n', False),
                ('#include "bench.hpp"\n', True), ('#include "support/helpers.hpp"\n', True)]
    for text, bad in bindings:
        cases += 1
        files = dict(base)
        files["python/src/tensor.hpp"] = "#pragma once\n"
        files["python/src/probe.cpp"] = text
        internal = internal_headers('set(TINYFORMER_INTERNAL_HEADER_REGEX\n'
                                    '    "^tinyformer/(ops/kernels/.*|train/run\\\\.hpp)$")')
        found = violations(order, files) + binding_violations(files, internal)
        if bool(found) != bad or len(found) > 1:
            print(f"self-test: python/src/probe.cpp with {text.strip()!r}: expected {'one violation' if bad else 'none'}"
                  f", got {found}")
            failures += 1
    if failures:
        print(f"FAIL: the layer check got {failures} of {cases} generated cases wrong")
        return 1
    print(f"PASS: the layer check reports exactly the upward includes in {cases} generated cases")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
    sys.exit(check(root))
