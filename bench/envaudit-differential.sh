#!/usr/bin/env bash
# bench/envaudit-differential.sh: ptojit envaudit beside PyPTO's own lint
# (tests/lint/check_environment_inputs.py with its _cpp_text.py) on the same
# tree and the same registry, line by line. Not run in CI: the lint and the
# tree are PyPTO's, and neither is part of this repository.
#
#   PYPTO_CHECKOUT  a PyPTO tree (python/pypto, src, include, python/bindings)
#   LINT_DIR        a directory holding check_environment_inputs.py and
#                   _cpp_text.py; a registry _environment.json in it is used
#                   when the checkout has none at python/pypto/
#
# Two registries are compared: the real one, and one classifying only PATH
# (so that every read the lint finds is printed). The lint is imported and
# its check_tree called on the checkout (its own main looks for the tree
# beside the script). envaudit runs with --order upstream, so the lines
# must match in order too. For each registry it prints the lines both give
# (agree), those only one gives (differ), whether the order matches, and the
# median wall time of RUNS runs of each (default 5) with their ratio.
# Exit status: 0 when both registries agree line for line, 1 otherwise.
# Usage: bench/envaudit-differential.sh PYPTO_CHECKOUT LINT_DIR [RUNS]
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 PYPTO_CHECKOUT LINT_DIR [RUNS]" >&2; exit 2; }
tree=$(cd "$1" && pwd)
lint=$(cd "$2" && pwd)
runs=${3:-5}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-envaudit-diff.XXXXXX")
trap 'rm -rf "$work"' EXIT

[ -f "$lint/check_environment_inputs.py" ] && [ -f "$lint/_cpp_text.py" ] ||
	{ echo "$lint: no check_environment_inputs.py and _cpp_text.py" >&2; exit 2; }
real=$tree/python/pypto/_environment.json
[ -f "$real" ] || real=$lint/_environment.json
[ -f "$real" ] || { echo "no registry: neither $tree/python/pypto/_environment.json nor $lint/_environment.json" >&2; exit 2; }
cp "$real" "$work/real.json"
echo '{"schema": 1, "variables": {"PATH": {"category": "tool_resolution", "reason": "the only variable classified"}}}' > "$work/path.json"

cd "$repo"
go build -o "$work/bin/" ./cmd/ptojitd

# upstream REGISTRY: the lint's findings on the tree, one a line.
upstream() {
	python3 -c 'import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import check_environment_inputs as lint
for line in lint.check_tree(Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())):
    print(line)' "$lint" "$tree" "$1"
}
ours() { "$work/bin/ptojitd" envaudit --root "$tree" --registry "$1" --order upstream 2>/dev/null || [ $? -eq 1 ]; }

# timeit NAME CMD...: runs CMD, appending its wall seconds to times.NAME.
timeit() {
	local name=$1
	shift
	local TIMEFORMAT='%R'
	{ time "$@" > /dev/null; } 2>> "$work/times.$name"
}
median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

status=0
echo "envaudit vs PyPTO's lint on $(basename "$tree"): $(find "$tree/python/pypto" -name '*.py' | wc -l) Python files, $(find "$tree/src" "$tree/include" "$tree/python/bindings" \( -name '*.cpp' -o -name '*.h' \) 2>/dev/null | wc -l) C++ files"
for reg in path real; do
	upstream "$work/$reg.json" > "$work/up.$reg"
	ours "$work/$reg.json" > "$work/ours.$reg"
	agree=$(comm -12 <(sort "$work/up.$reg") <(sort "$work/ours.$reg") | wc -l)
	only_up=$(comm -23 <(sort "$work/up.$reg") <(sort "$work/ours.$reg") | wc -l)
	only_ours=$(comm -13 <(sort "$work/up.$reg") <(sort "$work/ours.$reg") | wc -l)
	order=same
	cmp -s "$work/up.$reg" "$work/ours.$reg" || order=differs
	printf '%-5s registry: agree %d/%d (upstream %d lines, envaudit %d); only upstream %d, only envaudit %d; order %s\n' \
		"$reg" "$agree" "$(wc -l < "$work/up.$reg")" "$(wc -l < "$work/up.$reg")" "$(wc -l < "$work/ours.$reg")" "$only_up" "$only_ours" "$order"
	if [ "$order" != same ]; then
		status=1
		diff "$work/up.$reg" "$work/ours.$reg" | sed 's/^/    /' | head -40
	fi
done

for _ in $(seq "$runs"); do
	timeit upstream upstream "$work/real.json"
	timeit envaudit ours "$work/real.json"
done
up=$(median "$work/times.upstream")
ea=$(median "$work/times.envaudit")
printf 'wall, median of %d interleaved runs: upstream %.3fs, envaudit %.3fs; upstream/envaudit %.1fx\n' "$runs" "$up" "$ea" \
	"$(awk -v a="$up" -v b="$ea" 'BEGIN {print a / b}')"
exit "$status"
