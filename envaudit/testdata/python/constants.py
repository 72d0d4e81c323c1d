"""Module and class constants, and everything that makes them ambiguous."""

import os

NAME = "PY_CONSTANT"
ANNOTATED: str = "PY_ANNOTATED_CONSTANT"
BYTES = b"PY_BYTES_CONSTANT"
NOT_ASCII = b"PY_\xff"
JOINED = "PY_" "JOINED_CONSTANT"
COPIED = NAME
FIRST = SECOND = "PY_CHAINED_CONSTANT"

os.getenv(NAME)  # want "PY_CONSTANT"
os.getenv(ANNOTATED)  # want "PY_ANNOTATED_CONSTANT"
os.getenvb(BYTES)  # want "PY_BYTES_CONSTANT"
os.environ.get(BYTES)  # want "PY_BYTES_CONSTANT"
os.getenvb(NOT_ASCII)  # want "dynamic read in <module>"
os.getenv(JOINED)  # want "PY_JOINED_CONSTANT"
os.getenv(COPIED)  # want "PY_CONSTANT"
os.getenv(SECOND)  # want "PY_CHAINED_CONSTANT"
os.environ[NAME]  # want "PY_CONSTANT"


def uses_module_constant():
    return os.getenv(NAME)  # want "PY_CONSTANT"


# Assigned twice: ambiguous.
TWICE = "PY_TWICE_A"
TWICE = "PY_TWICE_B"
os.getenv(TWICE)  # want "dynamic read in <module>"

# A later assignment cannot relabel an earlier read.
LATER = "PY_LATER_A"
os.getenv(LATER)  # want "dynamic read in <module>"
LATER = "PY_LATER_B"

# Control-flow writes.
IF_WRITE = "PY_IF_A"
if enabled:
    IF_WRITE = "PY_IF_B"
os.getenv(IF_WRITE)  # want "dynamic read in <module>"

ONLY_IN_IF = None
if enabled:
    CONDITIONAL = "PY_CONDITIONAL"
os.getenv(CONDITIONAL)  # want "dynamic read in <module>"

FOR_WRITE = "PY_FOR_A"
for FOR_WRITE in names:
    pass
os.getenv(FOR_WRITE)  # want "dynamic read in <module>"

TRY_WRITE = "PY_TRY_A"
try:
    TRY_WRITE = "PY_TRY_B"
except RuntimeError:
    pass
os.getenv(TRY_WRITE)  # want "dynamic read in <module>"

WITH_WRITE = "PY_WITH_A"
with context():
    WITH_WRITE = "PY_WITH_B"
os.getenv(WITH_WRITE)  # want "dynamic read in <module>"

AUGMENTED = "PY_AUGMENTED"
AUGMENTED += "_NEW"
os.getenv(AUGMENTED)  # want "dynamic read in <module>"

WALRUS = "PY_WALRUS"
if (WALRUS := compute()):
    pass
os.getenv(WALRUS)  # want "dynamic read in <module>"

# Declared global anywhere: another function may write it.
GLOBAL = "PY_GLOBAL"


def change(name):
    global GLOBAL
    GLOBAL = name


os.getenv(GLOBAL)  # want "dynamic read in <module>"


# Shadowing in functions.
def parameter(NAME):
    return os.getenv(NAME)  # want "dynamic read in parameter"


def local(name):
    NAME = name
    return os.getenv(NAME)  # want "dynamic read in local"


def outer(NAME):
    def inner():
        return os.getenv(NAME)  # want "dynamic read in inner"

    return inner


def local_import():
    from elsewhere import NAME
    return os.getenv(NAME)  # want "dynamic read in local_import"


def unrelated_local():
    other = "x"
    return os.getenv(NAME)  # want "PY_CONSTANT"


class Config:
    KEY = "PY_CLASS_CONSTANT"
    value = os.getenv(KEY)  # want "PY_CLASS_CONSTANT"
    module = os.getenv(NAME)  # want "PY_CONSTANT"

    def method(self):
        # Methods do not see class constants.
        return os.getenv(KEY)  # want "dynamic read in method"


class Twice:
    KEY = "PY_CLASS_A"
    KEY = "PY_CLASS_B"
    value = os.getenv(KEY)  # want "dynamic read in <module>"


lookup = lambda NAME: os.getenv(NAME)  # want "dynamic read in <module>"
