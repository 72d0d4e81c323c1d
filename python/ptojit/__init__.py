"""ptojit for Python frontends (standard library only, Python 3.10+).

``ptojit.build(request)`` and ``ptojit.Client`` send build requests to the
ptojit daemon over its Unix socket (``ptojit.client``); ``ptojit.record``
encodes identity records byte-identically to ``pypto._identity`` schema 1.
"""

from . import record
from .client import (
    BuildError,
    Client,
    DaemonError,
    DaemonNotAnswering,
    DaemonSecurityError,
    PtojitError,
    build,
)

__all__ = [
    "record",
    "Client",
    "build",
    "PtojitError",
    "BuildError",
    "DaemonError",
    "DaemonSecurityError",
    "DaemonNotAnswering",
]
