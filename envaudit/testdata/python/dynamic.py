"""Reads whose variable the scanner cannot know, and bulk reads."""

import os


def by_name(name):
    return os.getenv(name)  # want "dynamic read in by_name"


def by_subscript(name):
    return os.environ[name]  # want "dynamic read in by_subscript"


def by_expression(prefix):
    return os.getenv(prefix + "_HOME")  # want "dynamic read in by_expression"


def by_fstring(x):
    # An f-string without a placeholder is a constant, as in Python.
    a = os.getenv(f"PY_FSTRING")  # want "PY_FSTRING"
    return os.getenv(f"PY_{x}")  # want "dynamic read in by_fstring"


def bulk():
    snapshot = dict(os.environ)  # want "dynamic read in bulk"
    names = list(os.environ)  # want "dynamic read in bulk"
    for name in os.environ:  # want "dynamic read in bulk"
        print(name)
    copy = os.environ.copy()  # want "dynamic read in bulk"
    items = os.environ.items()  # want "dynamic read in bulk"
    present = "PY_MEMBER" in os.environ  # want "PY_MEMBER"
    absent = "PY_NOT_MEMBER" not in os.environ  # want "PY_NOT_MEMBER"
    asked = os.environ.__contains__("PY_CONTAINS")  # want "PY_CONTAINS"
    unknown = name in os.environ  # want "dynamic read in bulk"
    run(env=os.environ)  # want "dynamic read in bulk"
    return snapshot, names, copy, items, present, absent, asked, unknown


def no_arguments():
    return os.getenv()  # want "dynamic read in no_arguments"


def starred(args):
    return os.getenv(*args)  # want "dynamic read in starred"


def two_keys():
    return os.environ["A", "B"]  # want "dynamic read in two_keys"


os.environ.update({"PY_UPDATED": "1"})  # want "dynamic read in <module>"
print(os.environ)  # want "dynamic read in <module>"


class Holder:
    value = os.getenv(Holder.__name__)  # want "dynamic read in <module>"


class Keeper:
    def __init__(self):
        self.env = os.environ  # want "dynamic read in __init__"
        cache["env"] = os.environ  # want "dynamic read in __init__"
        first, second = os.environ, None  # want "dynamic read in __init__"
        alias = os.environ
        alias_too = other = os.environ
        self.mixed = plain = os.environ  # want "dynamic read in __init__"
        (walrus := os.environ)  # want "dynamic read in __init__"


def passed_readers(names):
    values = list(map(os.getenv, names))  # want "dynamic read in passed_readers"
    lookup = {"get": os.environ.get}  # want "dynamic read in passed_readers"
    callback(os.getenvb)  # want "dynamic read in passed_readers"
    keys = os.environ.keys  # an alias: its call is the read
    return values, lookup, keys()  # want "dynamic read in passed_readers"
