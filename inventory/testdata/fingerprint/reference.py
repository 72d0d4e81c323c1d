"""A second, independent implementation of the content fingerprint records
of docs/design.md ("Content fingerprints"), written plainly with the Python
standard library, for TestFingerprintReference to compare against.

usage: reference.py [--python-only] PATH...
prints the hex digest of ("content", [root, ...]) for PATHs as roots.
"""

import hashlib
import json
import os
import pathlib
import stat
import struct
import sys


def tag(v):
    if v is None:
        return ["none"]
    if isinstance(v, bool):
        return ["bool", v]
    if isinstance(v, int):
        return ["int", str(v)]
    if isinstance(v, float):
        return ["float64", struct.pack(">d", v).hex()]
    if isinstance(v, str):
        return ["str", v.encode("utf-8", "surrogatepass").hex()]
    if isinstance(v, bytes):
        return ["bytes", v.hex()]
    if isinstance(v, list):
        return ["list", [tag(x) for x in v]]
    if isinstance(v, tuple):
        return ["tuple", [tag(x) for x in v]]
    if isinstance(v, dict):
        return ["dict", [[tag(k), tag(v[k])] for k in sorted(v)]]
    raise TypeError(type(v))


def encode(v):
    return json.dumps(["pypto.identity", 1, tag(v)], separators=(",", ":"), ensure_ascii=True).encode("ascii")


def file_entry(rel, resolved):
    with open(resolved, "rb") as f:
        data = f.read()
    return ("file", rel, resolved, len(data), hashlib.sha256(data).hexdigest())


def walk(resolved, rel, python_only, entries):
    if not python_only:
        entries.append(("directory", rel, resolved))
    for name in sorted(os.listdir(resolved)):
        if name in (".git", "__pycache__"):
            continue
        child = os.path.realpath(os.path.join(resolved, name), strict=True)
        crel = name if rel == "" else rel + "/" + name
        mode = os.stat(child).st_mode
        if stat.S_ISDIR(mode):
            walk(child, crel, python_only, entries)
        elif stat.S_ISREG(mode):
            suffix = pathlib.PurePath(name).suffix
            if suffix in (".pyc", ".pyo") or python_only and suffix != ".py":
                continue
            entries.append(file_entry(crel, child))
        else:
            raise OSError("not a regular file or directory: " + crel)


def fingerprint(paths, python_only):
    roots = []
    for p in paths:
        path = str(pathlib.Path(p).absolute())
        resolved = os.path.realpath(path, strict=True)
        entries = []
        if os.path.isdir(resolved):
            walk(resolved, "", python_only, entries)
        else:
            entries.append(file_entry("", resolved))
        roots.append((path, python_only, entries))
    return hashlib.sha256(encode(("content", roots))).hexdigest()


if __name__ == "__main__":
    args = sys.argv[1:]
    python_only = "--python-only" in args
    paths = [a for a in args if a != "--python-only"]
    print(fingerprint(paths, python_only))
