#!/usr/bin/env python3
"""Names every #include "..." that goes against the layer table.

Usage: check_layers.py [--root DIR] [--table FILE]

The table (tools/layers/layers.txt) lists the layers lowest first, each with
its folders and the layers its files may include. Every C++ file under a
layer's folder is read; an include is resolved against the including file's
folder first, then the root, and the layer of the included file must be the
file's own or one of those listed. A C++ file under engine/ or ops/ that no
layer holds is an error too, so a new folder cannot slip past the check.
Exits 0 when the tree holds to the table, 1 (after listing each violation)
when it does not, 2 when the table itself is malformed.
"""

import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".h", ".cc", ".cu", ".cuh", ".c")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Folders whose C++ files must each belong to some layer.
GOVERNED_ROOTS = ("engine", "ops")


class TableError(Exception):
    pass


def parse_table(path):
    """Returns [(name, [folders], set(allowed) or None for '*')] in table order."""
    layers = []
    with open(path, encoding="utf-8") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if "->" not in line:
                raise TableError(f"{path}:{lineno}: expected 'layer folders -> layers', got {raw.strip()!r}")
            left, right = line.split("->", 1)
            words = left.split()
            if len(words) < 2:
                raise TableError(f"{path}:{lineno}: a layer needs a name and at least one folder")
            name, folders = words[0], [w.rstrip("/") for w in words[1:]]
            deps = right.split()
            allowed = None if deps == ["*"] else set(deps)
            layers.append((name, folders, allowed))
    names = [n for n, _, _ in layers]
    seen = set()
    for name, _, allowed in layers:
        if name in seen:
            raise TableError(f"{path}: layer {name!r} is listed twice")
        for dep in allowed or ():
            if dep not in seen:
                what = "itself" if dep == name else (
                    f"{dep!r}, which comes later" if dep in names else f"unknown layer {dep!r}")
                raise TableError(f"{path}: layer {name!r} may not include {what}")
        seen.add(name)
    return layers


def layer_of(relpath, folder_to_layer):
    """The layer whose folder is the longest prefix of relpath, or None."""
    best, best_len = None, -1
    for folder, layer in folder_to_layer.items():
        if (relpath == folder or relpath.startswith(folder + "/")) and len(folder) > best_len:
            best, best_len = layer, len(folder)
    return best


def source_files(root, top):
    base = os.path.join(root, top)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames.sort()
        for fn in sorted(filenames):
            if fn.endswith(SOURCE_SUFFIXES):
                yield os.path.relpath(os.path.join(dirpath, fn), root).replace(os.sep, "/")


def resolve(root, including, target):
    local = os.path.normpath(os.path.join(os.path.dirname(including), target))
    if os.path.isfile(os.path.join(root, local)):
        return local.replace(os.sep, "/")
    if os.path.isfile(os.path.join(root, target)):
        return os.path.normpath(target).replace(os.sep, "/")
    return None  # not in the tree (a generated or system header)


def check(root, layers):
    folder_to_layer = {folder: name for name, folders, _ in layers for folder in folders}
    allowed = {name: deps for name, _, deps in layers}
    problems = []
    tops = sorted({f.split("/", 1)[0] for _, folders, _ in layers for f in folders} | set(GOVERNED_ROOTS))
    files = sorted({f for top in tops for f in source_files(root, top)})
    for path in files:
        layer = layer_of(path, folder_to_layer)
        if layer is None:
            if path.split("/", 1)[0] in GOVERNED_ROOTS:
                problems.append(f"{path}: in no layer of the table (add its folder to a layer)")
            continue
        deps = allowed[layer]
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for lineno, text in enumerate(f, 1):
                m = INCLUDE.match(text)
                if not m:
                    continue
                target = resolve(root, path, m.group(1))
                if target is None:
                    continue
                to = layer_of(target, folder_to_layer)
                if to is None or to == layer or deps is None or to in deps:
                    continue
                problems.append(f'{path}:{lineno}: includes "{m.group(1)}": layer {layer} may not '
                                f"include layer {to} (it may include: {' '.join(sorted(deps)) or 'nothing'})")
    return files, problems


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--table", default=None)
    args = ap.parse_args(argv)
    table = args.table or os.path.join(args.root, "tools", "layers", "layers.txt")
    try:
        layers = parse_table(table)
    except (TableError, OSError) as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    files, problems = check(args.root, layers)
    for p in problems:
        print(p)
    stray = sum(1 for p in problems if "in no layer" in p)
    wrong = len(problems) - stray
    print(f"check_layers: {len(files)} files, {len(layers)} layers, "
          f"{wrong} wrong-way include{'s' if wrong != 1 else ''}, "
          f"{stray} file{'s' if stray != 1 else ''} in no layer")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
