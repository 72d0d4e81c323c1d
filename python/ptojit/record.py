"""Identity records: pypto._identity schema 1, without PyPTO.

``encode(value)`` returns the canonical encoding of a value, byte for byte
what ``pypto._identity`` (schema 1) writes, and ``digest(value)`` the
lowercase hex SHA-256 of it, so a frontend can build the ``options`` and
``extra_fingerprint`` records of a build request (as ``options_wire``) and
compute the digests ptojit computes.

The encoding is compact ASCII JSON of ``["pypto.identity", 1, T(value)]``:

=================  ==================================================
value              T(value)
=================  ==================================================
None               ``["none"]``
bool               ``["bool", true]``
int                ``["int", "<decimal>"]``
float              ``["float64", "<16 hex digits of the big-endian bits>"]``
str                ``["str", "<hex of the UTF-8 bytes, surrogatepass>"]``
bytes              ``["bytes", "<hex>"]``
list / tuple       ``["list", [...]]`` / ``["tuple", [...]]``
dict (str keys)    ``["dict", [[T(k), T(v)], ...]]``, keys in code-point order
=================  ==================================================

Only these exact types are accepted (a subclass such as an ``IntEnum`` or
a named tuple is refused rather than guessed at); other types and
non-string dict keys raise TypeError, a container that contains itself
raises ValueError.

``to_json`` and ``from_json`` convert between values and the JSON form that
``ptojit record encode`` reads and ``ptojit record decode`` prints: plain
JSON, with ``{"$tuple": [...]}``, ``{"$bytes": "<hex>"}``, ``{"$float":
"<16 hex digits>"}`` (NaN and infinities), ``{"$str": "<hex>"}`` and
``{"$dict": [[key, value], ...]}`` for what plain JSON cannot say, and a
dict key starting with ``$`` written with one more ``$``. ``decode`` reads
an encoded record back, accepting only the exact canonical bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import struct
from typing import Any

__all__ = ["SCHEMA", "encode", "digest", "decode", "to_json", "from_json"]

SCHEMA = 1

_PREFIX = '["pypto.identity",1,'


def encode(value: Any) -> bytes:
    """Return the canonical encoding of value (ASCII bytes)."""
    out: list[str] = [_PREFIX]
    _encode(value, out, set())
    out.append("]")
    return "".join(out).encode("ascii")


def digest(value: Any) -> str:
    """Return the lowercase hex SHA-256 of encode(value)."""
    return hashlib.sha256(encode(value)).hexdigest()


def _str_hex(s: str) -> str:
    return s.encode("utf-8", "surrogatepass").hex()


def _encode(v: Any, out: list[str], open_: set[int]) -> None:
    t = type(v)
    if v is None:
        out.append('["none"]')
    elif t is bool:
        out.append('["bool",true]' if v else '["bool",false]')
    elif t is int:
        out.append('["int","')
        out.append(str(v))
        out.append('"]')
    elif t is float:
        out.append('["float64","')
        out.append(struct.pack(">d", v).hex())
        out.append('"]')
    elif t is str:
        out.append('["str","')
        out.append(_str_hex(v))
        out.append('"]')
    elif t is bytes:
        out.append('["bytes","')
        out.append(v.hex())
        out.append('"]')
    elif t is list or t is tuple:
        if id(v) in open_:
            raise ValueError("cycle: a container contains itself")
        out.append('["list",[' if t is list else '["tuple",[')
        if v:
            open_.add(id(v))
            for i, x in enumerate(v):
                if i:
                    out.append(",")
                _encode(x, out, open_)
            open_.discard(id(v))
        out.append("]]")
    elif t is dict:
        if id(v) in open_:
            raise ValueError("cycle: a container contains itself")
        out.append('["dict",[')
        if v:
            for k in v:
                if type(k) is not str:
                    raise TypeError(f"dict key {k!r} is a {type(k).__name__}, not a str")
            open_.add(id(v))
            for i, k in enumerate(sorted(v)):  # str order is code-point order
                if i:
                    out.append(",")
                out.append('[["str","')
                out.append(_str_hex(k))
                out.append('"],')
                _encode(v[k], out, open_)
                out.append("]")
            open_.discard(id(v))
        out.append("]]")
    else:
        raise TypeError(f"a {t.__module__}.{t.__qualname__} is not an identity record value")


_TAGS = {"none", "bool", "int", "float64", "str", "bytes", "list", "tuple", "dict"}


def decode(data: bytes | str) -> Any:
    """Read an encoded record; anything but the exact canonical bytes is a
    ValueError."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    try:
        doc = json.loads(data)
        if not (isinstance(doc, list) and len(doc) == 3 and doc[0] == "pypto.identity" and type(doc[1]) is int):
            raise ValueError("not an identity record")
        if doc[1] != SCHEMA:
            raise ValueError(f"schema {doc[1]}, want {SCHEMA}")
        value = _untag(doc[2])
    except (ValueError, TypeError, KeyError, IndexError, UnicodeDecodeError, RecursionError) as e:
        raise ValueError(f"invalid identity record: {e}") from None
    if encode(value) != data:
        raise ValueError("invalid identity record: not the canonical encoding")
    return value


def _untag(t: Any) -> Any:
    if not (isinstance(t, list) and t and t[0] in _TAGS):
        raise ValueError(f"not a tagged value: {t!r:.60}")
    tag = t[0]
    if tag == "none":
        return None
    arg = t[1]
    if tag == "bool":
        if type(arg) is not bool:
            raise ValueError("bool value is not true or false")
        return arg
    if tag == "int":
        return int(arg)
    if tag == "float64":
        if len(arg) != 16:
            raise ValueError("float64 is not 16 hex digits")
        return struct.unpack(">d", bytes.fromhex(arg))[0]
    if tag == "str":
        return bytes.fromhex(arg).decode("utf-8", "surrogatepass")
    if tag == "bytes":
        return bytes.fromhex(arg)
    if tag == "list":
        return [_untag(x) for x in arg]
    if tag == "tuple":
        return tuple(_untag(x) for x in arg)
    out = {}
    for k, v in arg:
        k = _untag(k)
        if type(k) is not str:
            raise ValueError("dict key is not a str")
        out[k] = _untag(v)
    return out


_JOINING = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*\Z")


def to_json(value: Any) -> str:
    """Return the JSON form of value that ``ptojit record encode`` and
    from_json read back as the same record: plain JSON where it says the
    same thing, tags where it cannot, on one line. It equals what
    ``ptojit record decode`` prints for the same record."""
    encode(value)  # the same errors as encode, and no cycles below
    out: list[str] = []
    _to_json(value, out)
    return "".join(out)


def _to_json(v: Any, out: list[str]) -> None:
    t = type(v)
    if v is None:
        out.append("null")
    elif t is bool:
        out.append("true" if v else "false")
    elif t is int:
        out.append(str(v))
    elif t is float:
        if math.isfinite(v):
            out.append(repr(v))
        else:
            out.append('{"$float": "' + struct.pack(">d", v).hex() + '"}')
    elif t is str:
        if _JOINING.search(v):
            out.append('{"$str": "' + _str_hex(v) + '"}')
        else:
            out.append(json.dumps(v))
    elif t is bytes:
        out.append('{"$bytes": "' + v.hex() + '"}')
    elif t is list or t is tuple:
        if t is tuple:
            out.append('{"$tuple": ')
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", ")
            _to_json(x, out)
        out.append("]")
        if t is tuple:
            out.append("}")
    else:  # dict
        keys = sorted(v)
        if any(_JOINING.search(k) for k in keys):
            out.append('{"$dict": [')
            for i, k in enumerate(keys):
                if i:
                    out.append(", ")
                out.append("[")
                _to_json(k, out)
                out.append(", ")
                _to_json(v[k], out)
                out.append("]")
            out.append("]}")
            return
        out.append("{")
        for i, k in enumerate(keys):
            if i:
                out.append(", ")
            out.append(json.dumps("$" + k if k.startswith("$") else k))
            out.append(": ")
            _to_json(v[k], out)
        out.append("}")


def _hex(tag: str, h: Any) -> bytes:
    if type(h) is not str or not _HEX.match(h):
        raise ValueError(f"{tag}: want a string of an even number of hex digits, got {h!r:.60}")
    return bytes.fromhex(h)


class _Tagged:
    """The value of a tagged object, until its parent sees it."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _pairs_hook(pairs: list[tuple[str, Any]]) -> Any:
    if pairs and pairs[0][0].startswith("$") and not pairs[0][0].startswith("$$"):
        tag, arg = pairs[0]
        if len(pairs) != 1:
            raise ValueError(f"{tag!r} must be its object's only key (write a dict key that starts with '$' as '$$...')")
        if tag == "$tuple":
            if type(arg) is not list:
                raise ValueError('"$tuple" wants an array')
            return _Tagged(tuple(_plain(x) for x in arg))
        if tag == "$bytes":
            return _Tagged(_hex(tag, arg))
        if tag == "$float":
            b = _hex(tag, arg)
            if len(b) != 8:
                raise ValueError('"$float" wants 16 hex digits')
            return _Tagged(struct.unpack(">d", b)[0])
        if tag == "$str":
            return _Tagged(_hex(tag, arg).decode("utf-8", "surrogatepass"))
        if tag == "$dict":
            if type(arg) is not list:
                raise ValueError('"$dict" wants an array of [key, value] pairs')
            d: dict[str, Any] = {}
            for p in arg:
                if type(p) is not list or len(p) != 2:
                    raise ValueError('"$dict" wants [key, value] pairs')
                k = _plain(p[0])
                if type(k) is not str:
                    raise ValueError('"$dict" key is not a str')
                if k in d:
                    raise ValueError(f'"$dict" has the key {k!r} twice')
                d[k] = _plain(p[1])
            return _Tagged(d)
        raise ValueError(f"unknown tag {tag!r} (write a dict key that starts with '$' as '$$...')")
    out = {}
    for k, v in pairs:
        if k.startswith("$"):
            if not k.startswith("$$"):
                raise ValueError(f"key {k!r}: a tag must be its object's only key")
            k = k[1:]
        out[k] = _plain(v)
    return out


def _plain(v: Any) -> Any:
    if type(v) is _Tagged:
        return v.value
    if type(v) is list:
        return [_plain(x) for x in v]
    return v


def from_json(text: str | bytes) -> Any:
    """Read the JSON form (see to_json) as Python's json.loads reads JSON,
    with the tags; a bad tag is a ValueError."""
    return _plain(json.loads(text, object_pairs_hook=_pairs_hook))
