"""ptojit.record against the shared vectors and the Go encoder."""

from __future__ import annotations

import json
import math
import os
import random
import struct
import subprocess
import unittest
from pathlib import Path

from ptojit import record

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "inventory" / "testdata" / "identity-records.jsonl"


def f64(hex16: str) -> float:
    return struct.unpack(">d", bytes.fromhex(hex16))[0]


# The values of the named vectors, written as Python values.
NAMED = {
    "none": None,
    "true": True,
    "false": False,
    "int one": 1,
    "int zero": 0,
    "int negative": -42,
    "int 2**200": 2**200,
    "int -(2**64)": -(2**64),
    "float one": 1.0,
    "float zero": 0.0,
    "float negative zero": -0.0,
    "float nan payload 1": f64("7ff8000000000001"),
    "float inf": math.inf,
    "float 0.1": 0.1,
    "str empty": "",
    "str ascii": "rows",
    "str e-acute": "\u00e9",
    "str non-BMP": "\U0001F600",
    "str explicit surrogate pair": "\ud83d\ude00",
    "str lone high surrogate": "\ud800",
    "str NUL": "\x00",
    "bytes empty": b"",
    "bytes": b"\x00\x01\xff",
    "list empty": [],
    "tuple empty": (),
    "list of int": [1, 2],
    "tuple of int": (1, 2),
    "dict empty": {},
    "dict rows/cols": {"rows": 32, "cols": 64},
}


def read_vectors() -> list[dict]:
    with open(VECTORS, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class TestVectors(unittest.TestCase):
    def test_named_values(self) -> None:
        seen = set()
        for vec in read_vectors():
            name = vec["name"]
            if name not in NAMED:
                continue
            seen.add(name)
            with self.subTest(name=name):
                v = NAMED[name]
                self.assertEqual(record.encode(v), vec["wire"].encode())
                self.assertEqual(record.digest(v), vec["digest"])
        self.assertEqual(seen, set(NAMED), "vectors missing from the file")

    def test_every_vector(self) -> None:
        # Every vector read back by decode encodes to its wire bytes and
        # digest; the plain JSON ones read by from_json too.
        vecs = read_vectors()
        self.assertGreaterEqual(len(vecs), 30)
        for vec in vecs:
            with self.subTest(name=vec["name"], json=vec.get("json")):
                wire = vec["wire"].encode()
                v = record.decode(wire)
                self.assertEqual(record.encode(v), wire)
                self.assertEqual(record.digest(v), vec["digest"])
                if "json" in vec:
                    self.assertEqual(record.encode(record.from_json(vec["json"])), wire)
                self.assertEqual(record.encode(record.from_json(record.to_json(v))), wire)


class TestErrors(unittest.TestCase):
    def test_refused(self) -> None:
        class MyInt(int):
            pass

        cyc: list = []
        cyc.append(cyc)
        d: dict = {}
        d["d"] = [d]
        for v, exc in [
            (set(), TypeError),
            (bytearray(b"x"), TypeError),
            (MyInt(1), TypeError),
            ({1: 2}, TypeError),
            ({"a": object()}, TypeError),
            (cyc, ValueError),
            (d, ValueError),
        ]:
            with self.subTest(v=type(v).__name__):
                with self.assertRaises(exc):
                    record.encode(v)
                with self.assertRaises(exc):
                    record.to_json(v)

    def test_shared_not_cycle(self) -> None:
        x = [1]
        self.assertEqual(record.encode([x, x, (x,)]), record.encode([[1], [1], ([1],)]))

    def test_decode_refuses_non_canonical(self) -> None:
        for bad in [
            '["pypto.identity", 1,["none"]]',
            '["pypto.identity",2,["none"]]',
            '["pypto.identity",1,["int","007"]]',
            '["pypto.identity",1,["int","-0"]]',
            '["pypto.identity",1,["bytes","0A"]]',
            '["pypto.identity",1,["float64","3ff0"]]',
            '["pypto.identity",1,["dict",[[["str","62"],["none"]],[["str","61"],["none"]]]]]',
            '["pypto.identity",1,["set",[]]]',
            '["pypto.identity",1,["str","ff"]]',
        ]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                record.decode(bad)

    def test_from_json_refuses(self) -> None:
        for bad in [
            '{"$set": [1]}',
            '{"a": 1, "$tuple": []}',
            '{"$tuple": [], "a": 1}',
            '{"$bytes": "abc"}',
            '{"$bytes": "a b"}',
            '{"$float": "3ff0"}',
            '{"$str": "ff"}',
            '{"$dict": [["a", 1], ["a", 2]]}',
            '{"$dict": [[1, 2]]}',
        ]:
            with self.subTest(bad=bad), self.assertRaises(ValueError):
                record.from_json(bad)

    def test_tagged_json(self) -> None:
        v = record.from_json('{"$$k": {"$tuple": [{"$bytes": "00FF"}, {"$float": "7ff8000000000001"}]}, "$$$": []}')
        self.assertEqual(record.encode(v), record.encode({"$k": (b"\x00\xff", f64("7ff8000000000001")), "$$": []}))


# --- random values ---------------------------------------------------------


def random_str(r: random.Random) -> str:
    cps = []
    for _ in range(r.randrange(6)):
        k = r.randrange(5)
        if k == 0:
            cps.append(r.randrange(0x80))
        elif k == 1:
            cps.append(0xD800 + r.randrange(0x800))  # lone surrogates
        elif k == 2:  # a high surrogate directly followed by a low one
            cps += [0xD800 + r.randrange(0x400), 0xDC00 + r.randrange(0x400)]
        elif k == 3:
            cps.append(r.randrange(0x10000))
        else:
            cps.append(r.randrange(0x110000))
    s = "".join(map(chr, cps))
    if r.randrange(8) == 0:
        s = "$" * r.randrange(1, 3) + s
    return s


def random_float(r: random.Random) -> float:
    k = r.randrange(5)
    if k == 0:  # NaN with a payload, either sign, quiet or signalling
        bits = (r.randrange(2) << 63) | (0x7FF << 52) | r.randrange(1, 1 << 52)
    elif k == 1:
        return r.choice([0.0, -0.0, math.inf, -math.inf, 0.1, 1e16, 1e-5, 5e-324])
    elif k == 2:
        return r.uniform(-1e6, 1e6)
    else:
        bits = r.getrandbits(64)
    return struct.unpack(">d", struct.pack(">Q", bits))[0]


def random_value(r: random.Random, depth: int):
    k = r.randrange(11 if depth > 0 else 7)
    if k == 0:
        return None
    if k == 1:
        return r.random() < 0.5
    if k == 2:
        return r.choice([r.randrange(-1000, 1000), r.getrandbits(64) - (1 << 63), -(r.getrandbits(300)), r.getrandbits(300)])
    if k == 3:
        return random_float(r)
    if k == 4:
        return random_str(r)
    if k == 5:
        return r.randbytes(r.randrange(6))
    if k == 6:
        return ""
    if k in (7, 8):
        items = [random_value(r, depth - 1) for _ in range(r.randrange(5))]
        return items if r.random() < 0.5 else tuple(items)
    return {random_str(r): random_value(r, depth - 1) for _ in range(r.randrange(5))}


def ptojit_binary() -> str | None:
    return os.environ.get("PTOJIT_BIN")


class TestDifferential(unittest.TestCase):
    """10,000 random values: Python's encoder against the Go encoder."""

    N = 10_000

    def test_against_go(self) -> None:
        exe = ptojit_binary()
        if not exe:
            self.skipTest("PTOJIT_BIN names no ptojit binary (the Go test TestPython sets it)")
        r = random.Random(16)
        values = [random_value(r, 4) for _ in range(self.N)]
        wires = [record.encode(v) for v in values]
        jsons = [record.to_json(v) for v in values]
        kinds = {type(x).__name__ for v in values for x in (v if isinstance(v, (list, tuple)) else [v])}
        self.assertTrue({"tuple", "bytes", "float", "str", "dict"} <= kinds, kinds)
        self.assertTrue(any(b'["float64","7ff' in w and b'["float64","7ff0000000000000"]' not in w for w in wires))
        self.assertTrue(any(b'"eda' in w for w in wires), "no lone surrogates")

        def run(args: list[str], lines: list[str]) -> list[str]:
            p = subprocess.run([exe, "record", *args, "--lines"], input="\n".join(lines) + "\n",
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = p.stdout.split("\n")
            self.assertEqual(out[-1], "")
            return out[:-1]

        go_wires = run(["encode"], jsons)  # Go reads Python's JSON form
        go_jsons = run(["decode"], [w.decode() for w in wires])  # Go prints Python's wire bytes
        self.assertEqual(len(go_wires), self.N)
        for i, v in enumerate(values):
            w = wires[i].decode()
            if go_wires[i] != w:
                self.fail(f"value {i}: {v!r}\n python {w}\n     go {go_wires[i]}\n   json {jsons[i]}")
            if go_jsons[i] != jsons[i]:
                self.fail(f"value {i}: {v!r}\n python to_json {jsons[i]}\n     go decode  {go_jsons[i]}")
            self.assertEqual(record.encode(record.from_json(jsons[i])), wires[i], jsons[i])
            self.assertEqual(record.encode(record.decode(wires[i])), wires[i])

        digests = run(["digest", "--wire"], [w.decode() for w in wires])
        self.assertEqual(digests, [record.digest(v) for v in values])


if __name__ == "__main__":
    unittest.main()
