"""Stand-in for pypto.jit: names the build request fields a frontend fills."""

REQUEST_FIELDS = (
    "platform",
    "runtime",
    "orchestration",
    "kernels",
    "signature",
    "scalar_count",
    "options",
    "toolchain",
    "output_dir",
)
