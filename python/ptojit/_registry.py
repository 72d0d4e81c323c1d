"""The variable names of ptojit's environment registry (jit/environment.json).

A build request carries only these variables of the caller's environment. A
test checks that this list equals the registry's; it goes away once the
daemon lists the names itself.
"""

VARIABLES = frozenset((
    "ASCEND_HOME_PATH",
    "CC",
    "COMPILER_PATH",
    "CPATH",
    "CPLUS_INCLUDE_PATH",
    "CXX",
    "C_INCLUDE_PATH",
    "GCC_EXEC_PREFIX",
    "LANG",
    "LC_ALL",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "LIBRARY_PATH",
    "NO_COLOR",
    "PATH",
    "PTOAS_FLAGS",
    "PTOAS_ROOT",
    "PTOJIT_CACHE_DISABLE",
    "PTO_ISA_ROOT",
    "PYPTO_BACKEND_FLAGS",
    "PYPTO_CACHE_EPOCH",
    "PYPTO_CACHE_IDENTITY",
    "PYPTO_DUMP_IR",
    "PYPTO_JIT_FORCE_RECOMPILE",
    "PYPTO_LOG_LEVEL",
    "PYPTO_OPT_LEVEL",
    "TERM",
))
