#!/usr/bin/env bash
# The request-log picture of the README: the shipped example built through
# the daemon, round after round for a few minutes, with an edit of a kernel
# now and then (a miss, the rest hits), then `ptojit cache stats --plot`.
#
#   bash bench/request_log_plot.sh [ROUNDS] [OUT.svg]
#       (default 10 rounds, 25 s apart; docs/request-log.svg)
#
# Builds both binaries into a temporary directory and uses a temporary cache
# and copy of the example; stops its daemon at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-10}
out=$(realpath -m "${2:-docs/request-log.svg}")
work=$(mktemp -d)
trap 'PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
go build -o "$work/bin/" ./cmd/ptojit ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
export PTOJIT_CACHE_DIR=$work/cache PYPTO_CACHE_IDENTITY=content
req=$work/examples/vadd/request.json
for r in $(seq 1 "$rounds"); do
	if (( r % 3 == 1 )); then
		echo "/* edit $r */" >> "$work/examples/vadd/kernel_scale.c"
	fi
	for _ in 1 2 3 4 5 6; do
		"$work/bin/ptojit" build --request "$req" | head -1
	done
	(( r < rounds )) && sleep 25
done
"$work/bin/ptojit" cache stats --plot "$out"
