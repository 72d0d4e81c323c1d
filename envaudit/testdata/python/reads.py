"""Every way to read one variable through the os module."""

import os

os.getenv("PY_GETENV")  # want "PY_GETENV"
os.getenv("PY_DEFAULT", "fallback")  # want "PY_DEFAULT"
os.getenvb(b"PY_GETENVB")  # want "PY_GETENVB"
os.environ.get("PY_GET")  # want "PY_GET"
os.environ.pop("PY_POP", None)  # want "PY_POP"
os.environ.setdefault("PY_SETDEFAULT", "1")  # want "PY_SETDEFAULT"
os.environb.get(b"PY_ENVIRONB_GET")  # want "PY_ENVIRONB_GET"
os.environb.pop(b"PY_ENVIRONB_POP")  # want "PY_ENVIRONB_POP"
os.environb.setdefault(b"PY_ENVIRONB_SETDEFAULT", b"")  # want "PY_ENVIRONB_SETDEFAULT"
os.environ.get(key="PY_KEYWORD")  # want "PY_KEYWORD"
os.getenv(default="x", key="PY_KEYWORD_LAST")  # want "PY_KEYWORD_LAST"
value = os.environ["PY_SUBSCRIPT"]  # want "PY_SUBSCRIPT"
value = os.environb[b"PY_SUBSCRIPT_BYTES"]  # want "PY_SUBSCRIPT_BYTES"
value = (os.environ)["PY_PARENTHESIZED"]  # want "PY_PARENTHESIZED"
value = os.getenv(("PY_PARENTHESIZED_ARG"))  # want "PY_PARENTHESIZED_ARG"
value = os.getenv("PY_" "CONCATENATED")  # want "PY_CONCATENATED"
value = os.getenv('PY_SINGLE')  # want "PY_SINGLE"
value = os.getenv("""PY_TRIPLE""")  # want "PY_TRIPLE"
value = os.getenv(r"PY_RAW")  # want "PY_RAW"
value = os.getenv("PY_\x45SCAPED")  # want "PY_ESCAPED"
value = os.environ.get(  # want "PY_MULTILINE"
    "PY_MULTILINE",
)

# Writes and prose are not reads.
os.environ["PY_WRITTEN"] = "1"
os.environb[b"PY_WRITTEN_BYTES"] = b"1"
del os.environ["PY_DELETED"]
# os.getenv("PY_COMMENT")
message = 'os.getenv("PY_STRING")'
os.putenv("PY_PUTENV", "1")
