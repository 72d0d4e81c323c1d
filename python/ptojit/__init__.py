"""ptojit for Python frontends.

``ptojit.record`` encodes identity records byte-identically to
``pypto._identity`` schema 1. The package uses the standard library only.
"""

from . import record

__all__ = ["record"]
