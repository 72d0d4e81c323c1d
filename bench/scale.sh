#!/usr/bin/env bash
# bench/scale.sh: the store at N entries beside the store at 1,000, in one
# run. It fills a Badger store (cache.Put, one result-sized output per entry)
# with 1,000 entries and then with N, reopens each, and prints for both and as
# the ratio N/1k: Put throughput over the last 500 Puts, the open and index load, the in-memory index
# per entry, the p50 of a hit (Get and read of its output), the resident set
# after 1,000 hits and at the end, and the times of stats, a trim with nothing
# to evict, the first entry of a listing in last-use order (limit 20), a whole
# listing, and verify (also per entry). The load is printed with the figures:
# on a shared machine, compare only figures of one run.
#
# Usage: bench/scale.sh [N]   (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
run() {
	PTOJIT_SCALE_N=$1 go test -count=1 -timeout 60m -v -run '^TestScale$' ./cache |
		sed -n 's/.*scale \(n=.*\)/\1/p'
}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(run 1000)
big=$(run "$n")
echo "load after:  $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v a="$base" -v b="$big" 'BEGIN {
	na = split(a, fa, " "); split(b, fb, " ")
	printf "%-22s %14s %14s %10s\n", "figure", "1k", "N", "N/1k"
	for (i = 1; i <= na; i++) {
		split(fa[i], x, "="); split(fb[i], y, "=")
		r = (x[2] + 0 != 0) ? sprintf("%.2fx", y[2] / x[2]) : "-"
		printf "%-22s %14s %14s %10s\n", x[1], x[2], y[2], r
	}
}'
