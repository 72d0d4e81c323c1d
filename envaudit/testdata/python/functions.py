"""The function a read belongs to."""

import os


def plain():
    return os.getenv("PY_PLAIN")  # want "PY_PLAIN"


async def asynchronous():
    return os.getenv("PY_ASYNC")  # want "PY_ASYNC"


def outer():
    def inner(name):
        return os.getenv(name)  # want "dynamic read in inner"

    return lambda name: os.getenv(name)  # want "dynamic read in outer"


class Owner:
    def method(self, name):
        return os.environ[name]  # want "dynamic read in method"

    @staticmethod
    def decorated(name):
        return os.getenv(name)  # want "dynamic read in decorated"


def defaults(value=os.getenv("PY_DEFAULT_ARGUMENT")):  # want "PY_DEFAULT_ARGUMENT"
    return value


top = [os.getenv(n) for n in names]  # want "dynamic read in <module>"
