"""A stand-in for the PyPTO frontend package, used by ptojit's examples.

It holds no compiler: ptojit only fingerprints it as the "pypto" component.
"""

__version__ = "0.0.0+fixture"
