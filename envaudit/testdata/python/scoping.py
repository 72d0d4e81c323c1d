"""Aliases are lexically scoped."""

import os as platform


def compiler():
    import os as local_os
    return local_os.getenv("PY_FUNCTION_IMPORT")  # want "PY_FUNCTION_IMPORT"


def unrelated():
    # The import in compiler() does not leak here.
    return local_os.getenv("PY_LEAKED")


def outer():
    read = platform.getenv

    def inner():
        return read("PY_CLOSURE")  # want "PY_CLOSURE"

    return inner


def parameter(platform):
    # A parameter rebinds the name: it is not os here.
    return platform.getenv("PY_PARAMETER_SHADOW")


def rebound():
    platform = load_configuration()
    return platform.getenv("PY_LOCAL_SHADOW")


def for_target():
    for platform in modules:
        platform.getenv("PY_FOR_SHADOW")


def with_target():
    with opened() as platform:
        platform.getenv("PY_WITH_SHADOW")


def except_target():
    try:
        pass
    except Exception as platform:
        platform.getenv("PY_EXCEPT_SHADOW")


def nested_def():
    def platform():
        pass

    platform.getenv("PY_DEF_SHADOW")


def rebound_to_os():
    # Rebound, but to os again: still a read.
    import os as platform
    return platform.getenv("PY_REBOUND_TO_OS")  # want "PY_REBOUND_TO_OS"


class Settings:
    env = platform.environ
    home = env.get("PY_CLASS_ALIAS")  # want "PY_CLASS_ALIAS"

    def method(self):
        # Methods see module bindings, not class bindings: env is not
        # the class attribute here.
        return env.get("PY_METHOD_SEES_CLASS")

    def method_module(self):
        return platform.getenv("PY_METHOD_SEES_MODULE")  # want "PY_METHOD_SEES_MODULE"


lookup = lambda: platform.getenv("PY_LAMBDA")  # want "PY_LAMBDA"
shadow = lambda platform: platform.getenv("PY_LAMBDA_SHADOW")
