"""The variable names of ptojit's environment registry (_environment.json).

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
    "HOME",
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
    "PTOJIT_CACHE_DIR",
    "PTOJIT_CACHE_DISABLE",
    "PTOJIT_CACHE_MAX_SIZE",
    "PTOJIT_CACHE_READONLY",
    "PTOJIT_DAEMON",
    "PTOJIT_ENGINE",
    "PTOJIT_MODULE_DIR",
    "PTO_ISA_ROOT",
    "PYPTO_BACKEND_FLAGS",
    "PYPTO_CACHE_EPOCH",
    "PYPTO_CACHE_IDENTITY",
    "PYPTO_DUMP_IR",
    "PYPTO_JIT_FORCE_RECOMPILE",
    "PYPTO_LOG_LEVEL",
    "PYPTO_OPT_LEVEL",
    "TERM",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_RUNTIME_DIR",
))
