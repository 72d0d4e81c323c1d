#!/usr/bin/env bash
# bench/scale.sh: the store at N entries beside the store at 1,000, in one
# run, measured twice: in the store's own process and through the daemon.
#
# The store (cache.TestScale): it fills a Badger store (cache.Put, one
# result-sized output per entry) with 1,000 entries and then with N,
# reopens each, and prints for both and as the ratio N/1k: Put throughput
# over the last 500 Puts, the open and index load, the in-memory index per
# entry, the p50 of a hit (Get and read of its output) of 1,000 entries
# read for the first time (hit_p50) and read again (hit_warm_p50: a
# working set, its blocks in Badger's block cache), the resident set after
# the hits and at the end, and the times of stats, a trim with nothing to
# evict, the first entry of a listing in last-use order (limit 20), a whole
# listing, and verify (also per entry).
#
# The daemon: each filled store then becomes the cache of a daemon, which
# builds the shipped example (a miss, then 200 hits) and runs the cache
# commands; it prints the p50 of the hits' own timings.total, the
# daemon's resident set (VmRSS, and its anonymous part) after the hits and
# after ls, verify and trim, and the wall time of each command (the
# client's start included, so about 2 ms is their floor). The first trim
# compacts what the builds replaced (the example's build record); the
# second has nothing to evict or compact.
#
# The load is printed with the figures: on a shared machine, compare only
# figures of one run.
#
# Usage: bench/scale.sh [N]   (default 100000)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-100000}
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-scale.XXXXXX")
stop() {
	for d in "$work"/c*; do
		[ -d "$d" ] && PTOJIT_CACHE_DIR=$d XDG_RUNTIME_DIR=$work/run "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true
	done
}
trap 'stop; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
mkdir -m 700 "$work/run"

run() {
	PTOJIT_SCALE_N=$1 PTOJIT_SCALE_DIR=$work/c$1 go test -count=1 -timeout 60m -v -run '^TestScale$' ./cache |
		sed -n 's/.*scale \(n=.*\)/\1/p'
}

# ms CMD...: the wall time of CMD in milliseconds (its output dropped).
ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'
}

# rss PID: the resident set and its anonymous part, in MiB.
rss() {
	awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } END { printf "%.1f %.1f", r / 1024, a / 1024 }' "/proc/$1/status"
}

# daemon N: the daemon's figures on the store of N entries, on one line.
daemon() {
	local c=$work/c$1 ex=$work/ex$1 p hits r1 r2 stats trimc trim lsf lsa verify
	cp -r testdata/examples "$ex"
	rm -rf "$ex/vadd/out"
	export PTOJIT_CACHE_DIR=$c XDG_RUNTIME_DIR=$work/run
	local pt=$work/bin/ptojit req=$ex/vadd/request.json
	"$pt" build --request "$req" >/dev/null # the miss
	hits=$(for _ in $(seq 200); do "$pt" build --request "$req" --json; done |
		python3 -c 'import json, statistics, sys
s, d, t = sys.stdin.read(), json.JSONDecoder(), []
i = 0
while (i := len(s) - len(s[i:].lstrip())) < len(s):
    r, i = d.raw_decode(s, i)
    if r["status"] != "hit":
        sys.exit("ptojit build: " + r["status"] + ", want hit")
    t.append(r["timings"]["total"])
print(f"{statistics.median(t) * 1e3:.1f}")')
	p=$("$pt" daemon status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["server"]["pid"])')
	r1=$(rss "$p")
	stats=$(ms "$pt" cache stats)
	trimc=$(ms "$pt" cache trim) # compacts what the builds replaced
	trim=$(ms "$pt" cache trim)  # nothing to evict or compact
	lsf=$(ms "$pt" cache ls --limit 20)
	lsa=$(ms "$pt" cache ls)
	verify=$(ms "$pt" cache verify)
	r2=$(rss "$p")
	"$pt" daemon stop >/dev/null
	set -- $r1 $r2
	echo "daemon_hit_p50_us=$hits daemon_rss_hits_mb=$1 daemon_anon_hits_mb=$2 daemon_rss_end_mb=$3 daemon_anon_end_mb=$4 cli_stats_ms=$stats cli_trim_compact_ms=$trimc cli_trim_ms=$trim cli_ls20_ms=$lsf cli_ls_ms=$lsa cli_verify_ms=$verify"
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(run 1000)
big=$(run "$n")
base="$base $(daemon 1000)"
big="$big $(daemon "$n")"
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
