"""Compute build-policy vectors with PyPTO's own code.

usage: python3 pypto_vectors.py PYPTO_PYTHON_DIR SPEC.json

PYPTO_PYTHON_DIR holds pypto/_identity.py and pypto/jit/_build_identity.py
(a PyPTO checkout's python/ directory). The packages' __init__ modules are
not run (they load the native extension): stand-in packages point at the
directories and only the two modules are imported. SPEC lists "files"
(paths), "trees" (paths) and "reported" ([epoch or null, value] pairs, the
value in the JSON form of the record, see decode below), and "records":
cases of PyPTO's record builders run on files, each {"name", "kind", ...}:

  ptoas     {"launcher", "answer"}: _ptoas_identity(launcher), the
            interpreter's probe answered by "answer" when it is given
  compiler  {"invoked", "env"}: _compiler_identity(invoked), env set
  cann      {"ccec", "linker"}: the CANN entries of _local_builds' device list

With "relocate": [root, stand-in], root is replaced by the stand-in in
every string of a record and of an error before the digest, so that the
answers name no directory of the machine that computed them. A case's
answer is {"name", "digest", "record"} (_reported's digest, the epoch
unset, and the record in the JSON form) or {"name", "error"}, with
"os_error" when the error is a failed file operation. The answer on standard output is the same object with
the results filled in.
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


def relocate(value, old, new):
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, tuple):
        return tuple(relocate(v, old, new) for v in value)
    if isinstance(value, list):
        return [relocate(v, old, new) for v in value]
    return value


def encode(value):
    if isinstance(value, tuple):
        return {"t": [encode(v) for v in value]}
    if isinstance(value, bytes):
        return {"b": value.hex()}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


def record(identity, toolchain, case):
    from pathlib import Path

    kind = case["kind"]
    if kind == "ptoas":
        answer = case.get("answer")
        real_run = toolchain._run

        def run(command):
            if answer is not None and command[1:3] == ["-c", identity._PTOAS_PROBE]:
                return repr(answer)
            return real_run(command)

        toolchain._run = run
        try:
            return identity._ptoas_identity(case["launcher"])
        finally:
            toolchain._run = real_run
    if kind == "compiler":
        saved = dict(os.environ)
        os.environ.update(case.get("env", {}))
        try:
            return identity._compiler_identity(case["invoked"])
        finally:
            os.environ.clear()
            os.environ.update(saved)
    if kind == "cann":
        # _local_builds' lines for a CANN platform after the orchestration
        # compiler: ccec by its installation's stated build, the linker by
        # its evidence.
        ccec = Path(case["ccec"]).resolve(strict=True)
        names = tuple(p.name for p in ccec.parents[:3])
        version = toolchain._cann_install_version(ccec.parents[3]) if names == ("bin", "bisheng_compiler", "tools") else ""
        if not version:
            raise ValueError(f"CANN installation build version is unavailable: {ccec}")
        linker = Path(case["linker"]).resolve(strict=True)
        return [(str(ccec), version), (str(linker), identity.native_build_id(linker))]
    raise ValueError("unknown record kind " + kind)


def records(identity, spec):
    from pypto.jit import _toolchain as toolchain

    old, new = spec.get("relocate", ["\0", "\0"])
    os.environ.pop("PYPTO_CACHE_EPOCH", None)
    out = []
    for case in spec.get("records", []):
        try:
            value = relocate(record(identity, toolchain, case), old, new)
        except (OSError, ValueError) as exc:
            # A ValueError's message is PyPTO's reason; an OSError's is
            # the platform's wording of a failed file operation.
            answer = {"name": case["name"], "error": str(exc).replace(old, new)}
            if isinstance(exc, OSError):
                answer["os_error"] = True
            out.append(answer)
            continue
        digest = identity._reported(value).reported_version
        out.append({"name": case["name"], "digest": digest, "record": encode(value)})
    return out


def main():
    base, spec_path = sys.argv[1], sys.argv[2]
    stand_in("pypto", os.path.join(base, "pypto"))
    stand_in("pypto.jit", os.path.join(base, "pypto", "jit"))
    # _toolchain imports the ptoas locator, which the records never call.
    stand_in("pypto.backend", os.path.join(base, "pypto", "backend"))
    locate = types.ModuleType("pypto.backend._ptoas_locate")
    locate.find_ptoas_binary = locate.check_ptoas_version = None
    sys.modules["pypto.backend._ptoas_locate"] = locate
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
    if spec.get("records"):
        out["records"] = records(identity, spec)
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
