#!/usr/bin/env bash
# bench/envaudit.sh: ptojit envaudit beside the floor any Python
# implementation of the lint pays, in one run, over the same files.
#
#   tree   1,500 Python files and 1,500 C++ files (about 400,000 lines) in
#          the PyPTO layout, generated with a fixed seed; one file in twelve
#          reads the environment (getenv, environ.get, environ[...], an
#          imported environ, a module constant), a quarter of the rest
#          import os for os.path
#
#   envaudit      ptojitd envaudit over the whole tree (the default: both
#                 cores; every file is parsed and checked, since a file
#                 Python cannot parse is a finding; files that mention
#                 neither getenv nor environ cannot hold a read and are not
#                 analysed)
#   envaudit-1    the same on one core (--jobs 1)
#   parse-all     every Python file parsed and analysed (--parse-all)
#   ast           python3 -c "import ast; ..." parsing the Python files only,
#                 one process: the floor (no C++, no analysis, no registry)
#   ast-2         the same split across two processes, for reference
#
# Warm page cache; each command runs RUNS times (default 7), interleaved;
# the median wall time and the median CPU time (user + system) are reported
# with their ratios to ast.
# Usage: bench/envaudit.sh [RUNS]
set -euo pipefail

runs=${1:-7}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-envaudit-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cd "$repo"
go build -o "$work/bin/" ./cmd/ptojitd

python3 - "$work/tree" <<'EOF'
import os, random, sys

root = sys.argv[1]
rng = random.Random(20260530)
words = ("tensor tile block kernel shape stride buffer queue stream event core "
         "vector cube matrix scalar index offset length count layout format dtype").split()

def ident():
    return "_".join(rng.choice(words) for _ in range(rng.randint(1, 3)))

def py_reads():
    return rng.choice([
        'os.getenv("PYPTO_%s")' % ident().upper(),
        'os.environ.get(_ENV_NAME, "")',
        'os.environ["PYPTO_%s"]' % ident().upper(),
        'environ.get("PYPTO_%s")' % ident().upper(),
    ])

def py_file(i, reads):
    out = ['"""Module %d: %s."""' % (i, " ".join(rng.choice(words) for _ in range(8))), "",
           "from __future__ import annotations", "", "import dataclasses", "import functools"]
    if reads:
        out += ["import os", "from os import environ", "", '_ENV_NAME = "PYPTO_MODULE_%d"' % i]
    elif i % 4 == 1:
        out += ["import os", "", "HERE = os.path.dirname(os.path.abspath(__file__))"]
    out += ["from typing import Any, Optional", "", "LIMIT = %d" % rng.randint(1, 1 << 20), ""]
    while len(out) < 140:
        kind = rng.random()
        if kind < 0.3:
            cls = "".join(w.capitalize() for w in ident().split("_"))
            out += ["", "@dataclasses.dataclass", "class %s%d:" % (cls, len(out)),
                    '    """%s."""' % " ".join(rng.choice(words) for _ in range(6))]
            for _ in range(rng.randint(2, 5)):
                out.append("    %s: %s = %s" % (ident(), rng.choice(["int", "str", "float", "Optional[int]"]),
                                                rng.choice(["0", '""', "1.5", "None"])))
            out += ["", "    def %s(self, %s: int, *args: Any, **kwargs: Any) -> int:" % (ident(), ident()),
                    "        total = 0", "        for k, v in enumerate(args):",
                    "            if isinstance(v, int) and v > k:", "                total += v * %d" % rng.randint(2, 9),
                    "            else:", "                total -= len(str(v))",
                    "        return total + len(kwargs)"]
        elif kind < 0.7:
            name = ident()
            out += ["", "", "@functools.lru_cache(maxsize=None)",
                    "def %s(%s: int, %s: str = %r) -> dict[str, Any]:" % (name, ident(), ident(), rng.choice(words)),
                    '    """Return the %s of the %s."""' % (rng.choice(words), rng.choice(words)),
                    "    result = {%r: %d, %r: [x * x for x in range(%d) if x %% 3]}" % (
                        rng.choice(words), rng.randint(0, 99), rng.choice(words), rng.randint(4, 64)),
                    "    try:", "        value = result[%r]" % rng.choice(words),
                    "    except KeyError as exc:", "        raise ValueError(f\"missing {exc!r}\") from None",
                    "    with open(%r) as handle:" % ("/dev/null"), "        data = handle.read().split()",
                    "    lookup = lambda item: (item, len(item))",
                    "    return {**result, \"data\": [lookup(d) for d in data], \"value\": value}"]
        else:
            out += ["", "# %s" % " ".join(rng.choice(words) for _ in range(10)),
                    "%s = (%s)" % (ident().upper(), " + ".join(str(rng.randint(1, 999)) for _ in range(rng.randint(2, 6)))),
                    "%s = [%s]" % (ident().upper(), ", ".join(repr(rng.choice(words)) for _ in range(rng.randint(2, 8))))]
        if reads and rng.random() < 0.2:
            out += ["", "", "def read_%d() -> Optional[str]:" % len(out), "    return " + py_reads()]
    return "\n".join(out) + "\n"

def cpp_file(i, reads):
    out = ["// Copyright (c) the %s authors." % rng.choice(words), "#include <cstdint>",
           "#include <cstdlib>", "#include <string>", "#include <vector>", "", "namespace pypto::%s {" % rng.choice(words), ""]
    while len(out) < 115:
        name = ident()
        out += ["/* %s" % " ".join(rng.choice(words) for _ in range(8)),
                " * %s */" % " ".join(rng.choice(words) for _ in range(8)),
                "static std::vector<int64_t> %s_%d(const std::string &%s, int64_t n) {" % (name, len(out), ident()),
                "  std::vector<int64_t> out;", "  out.reserve(static_cast<size_t>(n));",
                "  for (int64_t k = 0; k < n; ++k) {  // %s" % rng.choice(words),
                "    out.push_back(k * %d'%03d + static_cast<int64_t>('%s'));" % (rng.randint(1, 9), rng.randint(0, 999), rng.choice("abcxyz")),
                "  }", '  const char *msg = "%s \\"quoted\\" %s";' % (rng.choice(words), rng.choice(words)),
                '  (void)msg;', "  return out;", "}", ""]
        if reads and rng.random() < 0.25:
            out += ['const char *env_%d() { return std::getenv("PYPTO_%s"); }' % (len(out), ident().upper()), ""]
    out.append("}  // namespace")
    return "\n".join(out) + "\n"

def write(rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)

for i in range(1500):
    write("python/pypto/pkg%02d/mod%04d.py" % (i % 30, i), py_file(i, i % 12 == 0))
for i in range(1500):
    root_dir = ("src", "include", "python/bindings")[i % 3]
    ext = ".h" if root_dir == "include" else ".cpp"
    write("%s/part%02d/unit%04d%s" % (root_dir, i % 25, i, ext), cpp_file(i, i % 12 == 0))
write("python/pypto/_environment.json", '{"schema": 1, "variables": {}}\n')
EOF

find "$work/tree/python/pypto" -name '*.py' | sort > "$work/py.list"
py_files=$(wc -l < "$work/py.list")
cpp_files=$(find "$work/tree/src" "$work/tree/include" "$work/tree/python/bindings" -type f | wc -l)
py_lines=$(xargs -d '\n' cat < "$work/py.list" | wc -l)
all_lines=$(find "$work/tree" -type f \( -name '*.py' -o -name '*.cpp' -o -name '*.h' \) -print0 | xargs -0 cat | wc -l)

# timeit NAME CMD...: runs CMD once, appends its wall seconds to
# times.NAME and its CPU seconds (user + system, children included) to
# cpu.NAME. envaudit exits 1 on findings (the tree has many by design).
timeit() {
	local name=$1
	shift
	local TIMEFORMAT='%R %U %S'
	{ time { "$@" > "$work/out.$name" 2> "$work/err.$name" || [ $? -eq 1 ]; }; } 2> "$work/time.$name"
	awk '{print $1 >> "'"$work/times.$name"'"; print $2 + $3 >> "'"$work/cpu.$name"'"}' "$work/time.$name"
}

# median FILE: the median of the numbers in FILE.
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

ast_parse='import ast, sys
paths = open(sys.argv[1]).read().split()[int(sys.argv[2])::int(sys.argv[3])]
for p in paths:
    with open(p, "rb") as f:
        ast.parse(f.read(), p)
print(len(paths))'
ast1() { python3 -c "$ast_parse" "$work/py.list" 0 1; }
ast2() { python3 -c "$ast_parse" "$work/py.list" 0 2 & python3 -c "$ast_parse" "$work/py.list" 1 2; wait; }
lint() { "$work/bin/ptojitd" envaudit --root "$work/tree" "$@"; }

# Warm up, and check that the lint and the floor see the same files.
ast1 > "$work/check.ast"
lint --json > "$work/check.json" || true
lint --parse-all --json > "$work/check-all.json" || true
grep -q "\"files\": $((py_files + cpp_files))" "$work/check.json" || { echo "envaudit audited another number of files" >&2; tail -3 "$work/check.json" >&2; exit 1; }
cmp -s "$work/check.json" "$work/check-all.json" || { echo "--parse-all found something else" >&2; exit 1; }
findings=$(grep -c '"kind":' "$work/check.json" || true)

for _ in $(seq "$runs"); do
	timeit ast ast1
	timeit envaudit lint
	timeit envaudit-1 lint --jobs 1
	timeit parse-all lint --parse-all
	timeit ast-2 ast2
done

base=$(median "$work/times.ast")
cbase=$(median "$work/cpu.ast")
echo "envaudit benchmark: $py_files Python files ($py_lines lines), $cpp_files C++ files; $all_lines lines in all; $findings findings"
echo "$(nproc) CPUs; medians of $runs interleaved runs (machine shared with other work: CPU time is the steadier figure)"
printf '%-12s %10s %8s %10s %8s\n' command wall ratio cpu ratio
for n in envaudit envaudit-1 parse-all ast ast-2; do
	m=$(median "$work/times.$n")
	c=$(median "$work/cpu.$n")
	printf '%-12s %9.3fs %8.2f %9.3fs %8.2f\n' "$n" "$m" "$(awk -v a="$m" -v b="$base" 'BEGIN {print a / b}')" \
		"$c" "$(awk -v a="$c" -v b="$cbase" 'BEGIN {print a / b}')"
done
