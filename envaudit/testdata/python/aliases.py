"""Aliases of os and its environment functions."""

import os as operating
import os.path
from os import environ as E, getenv
from os import getenvb as read_bytes
from os import environb
from os import getenv as reader_fn

operating.getenv("PY_IMPORT_AS")  # want "PY_IMPORT_AS"
getenv("PY_FROM_IMPORT")  # want "PY_FROM_IMPORT"
E["PY_FROM_IMPORT_AS"]  # want "PY_FROM_IMPORT_AS"
E.get("PY_FROM_IMPORT_AS_GET")  # want "PY_FROM_IMPORT_AS_GET"
read_bytes(b"PY_GETENVB_AS")  # want "PY_GETENVB_AS"
environb[b"PY_ENVIRONB"]  # want "PY_ENVIRONB"
os.getenv("PY_DOTTED_IMPORT")  # want "PY_DOTTED_IMPORT"

read = os.environ.get
read("PY_ASSIGNED_FUNCTION")  # want "PY_ASSIGNED_FUNCTION"
first = second = operating.environ
second.get("PY_CHAIN")  # want "PY_CHAIN"
annotated: object = E
annotated.get("PY_ANNOTATED_ALIAS")  # want "PY_ANNOTATED_ALIAS"
dict(E)  # want "dynamic read in <module>"


def work():
    env = os.environ
    return env.get("PY_LOCAL_ALIAS")  # want "PY_LOCAL_ALIAS"


def work_annotated():
    env: object = os.environ
    return env["PY_LOCAL_ANNOTATED"]  # want "PY_LOCAL_ANNOTATED"


if enabled:
    import os as platform
else:
    import sys as platform
platform.getenv("PY_CONDITIONAL_IMPORT")  # want "PY_CONDITIONAL_IMPORT"

# Not os: no reads.
import sys
sys.getenv("PY_NOT_OS")
from posix import getenv as other
other.environ.get("PY_NOT_OS")
something.environ["PY_NOT_OS"]
config.getenv("PY_NOT_OS")
sorted(names, key=reader_fn)  # want "dynamic read in <module>"
(reader_fn)("PY_PAREN_ALIAS")  # want "PY_PAREN_ALIAS"
