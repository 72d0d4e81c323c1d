"""Compute build-policy vectors with PyPTO's own code.

usage: python3 pypto_vectors.py PYPTO_PYTHON_DIR SPEC.json

PYPTO_PYTHON_DIR holds pypto/_identity.py and pypto/jit/_build_identity.py
(a PyPTO checkout's python/ directory). The packages' __init__ modules are
not run (they load the native extension): stand-in packages point at the
directories and only the two modules are imported. SPEC lists "files"
(paths), "trees" (paths) and "reported" ([epoch or null, value] pairs, the
value in the JSON form of the record, see decode below). The answer on
standard output is the same object with the results filled in.
"""

import json
import os
import sys
import types


def stand_in(name, path):
    module = types.ModuleType(name)
    module.__path__ = [path]
    sys.modules[name] = module


def decode(value):
    # {"t": [...]} is a tuple, {"b": hex} bytes; lists, strings, numbers,
    # booleans and null are themselves.
    if isinstance(value, dict) and set(value) == {"t"}:
        return tuple(decode(v) for v in value["t"])
    if isinstance(value, dict) and set(value) == {"b"}:
        return bytes.fromhex(value["b"])
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def main():
    base, spec_path = sys.argv[1], sys.argv[2]
    stand_in("pypto", os.path.join(base, "pypto"))
    stand_in("pypto.jit", os.path.join(base, "pypto", "jit"))
    from pathlib import Path

    from pypto.jit import _build_identity as identity

    with open(spec_path) as stream:
        spec = json.load(stream)
    out = {"files": {}, "trees": {}, "reported": []}
    for path in spec.get("files", []):
        out["files"][path] = list(identity.native_build_id(Path(path)))
    for path in spec.get("trees", []):
        try:
            out["trees"][path] = identity.python_sources(Path(path))
        except (OSError, ValueError) as exc:
            out["trees"][path] = {"error": str(exc)}
    for epoch, value in spec.get("reported", []):
        if epoch is None:
            os.environ.pop("PYPTO_CACHE_EPOCH", None)
        else:
            os.environ["PYPTO_CACHE_EPOCH"] = epoch
        out["reported"].append([epoch, value, identity._reported(decode(value)).reported_version])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
