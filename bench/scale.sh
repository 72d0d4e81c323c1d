#!/usr/bin/env bash
# bench/scale.sh: the store at N entries beside the store at 1,000, in one
# run, measured twice: in the store's own process and through the daemon.
#
# The store (cache.TestScale): it fills a Badger store (cache.Put, one
# result-sized output per entry) with 1,000 entries and then with N,
# waits for Badger's compactions to finish, reopens each, and prints for
# both and as the ratio N/1k: the open and index load, the in-memory index
# per entry, the p50 of a hit (Get and read of its output) of 1,000 entries
# read for the first time (hit_p50) and read again (hit_warm_p50: a
# working set, its blocks in Badger's block cache), the resident set after
# the hits and at the end, and the times of stats, a trim with nothing to
# evict, the first entry of a listing in last-use order (limit 20), a whole
# listing, and verify (the median of the runs that fit in about half a
# second, 3 to 21; also per entry). Then
# (cache.TestScalePuts) one process opens both stores and puts new entries
# into each, in batches of 50 in random order, 40 rounds: the Put
# throughput of each is its median batch's.
#
# The daemon: each filled store then becomes the cache of a daemon, which
# builds the shipped example (a miss, then 400 hits, interleaved in random
# order with the other daemon's) and runs the cache commands; it prints
# the p50 of the hits' own timings.total, the
# daemon's resident set (VmRSS, and its anonymous part) after the hits and
# after ls, verify and trim, and the wall time of each command (the
# client's start included, so about 2 ms is their floor; of stats, the
# no-op trim and ls --limit 20, the median of 11 runs). The first trim
# compacts what the builds replaced (the example's build record); the
# later ones have nothing to evict or compact.
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

# med CMD...: the median wall time of 11 runs of CMD, in milliseconds:
# for the commands of a few milliseconds, where one run says little on a
# shared machine.
med() {
	local i
	for i in $(seq 11); do ms "$@"; echo; done | sort -g | sed -n 6p
}

# rss PID: the resident set and its anonymous part, in MiB.
rss() {
	awk '/^VmRSS:/ { r = $2 } /^RssAnon:/ { a = $2 } END { printf "%.1f %.1f", r / 1024, a / 1024 }' "/proc/$1/status"
}

# prepare N: the shipped example, copied for the daemon of store N, built
# once (the miss).
prepare() {
	cp -r testdata/examples "$work/ex$1"
	rm -rf "$work/ex$1/vadd/out"
	PTOJIT_CACHE_DIR=$work/c$1 XDG_RUNTIME_DIR=$work/run "$work/bin/ptojit" build --request "$work/ex$1/vadd/request.json" >/dev/null
}

# hits A B: 400 rounds of a hit of the example from the daemon of store A
# and one from that of store B, in a new random order each round; prints
# the p50 of each's own timings.total (µs), as "A B".
hits() {
	python3 - "$work" "$1" "$2" <<'PY'
import json, os, random, statistics, subprocess, sys
work, ns = sys.argv[1], sys.argv[2:]
t = {n: [] for n in ns}
for _ in range(400):
    for n in random.sample(ns, len(ns)):
        env = dict(os.environ, PTOJIT_CACHE_DIR=f"{work}/c{n}", XDG_RUNTIME_DIR=f"{work}/run")
        out = subprocess.run([f"{work}/bin/ptojit", "build", "--request", f"{work}/ex{n}/vadd/request.json", "--json"],
                             env=env, capture_output=True, check=True).stdout
        r = json.loads(out)
        if r["status"] != "hit":
            sys.exit("ptojit build: " + r["status"] + ", want hit")
        t[n].append(r["timings"]["total"])
print(" ".join(f"{statistics.median(t[n]) * 1e3:.1f}" for n in ns))
PY
}

# daemon N HIT: the daemon's figures on the store of N entries, on one
# line, after its hits (HIT, their p50).
daemon() {
	local hit=$2 p r1 r2 stats trimc trim lsf lsa verify
	export PTOJIT_CACHE_DIR=$work/c$1 XDG_RUNTIME_DIR=$work/run
	local pt=$work/bin/ptojit
	p=$("$pt" daemon status --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["server"]["pid"])')
	r1=$(rss "$p")
	stats=$(med "$pt" cache stats)
	trimc=$(ms "$pt" cache trim) # compacts what the builds replaced
	trim=$(med "$pt" cache trim) # nothing to evict or compact
	lsf=$(med "$pt" cache ls --limit 20)
	lsa=$(ms "$pt" cache ls)
	verify=$(ms "$pt" cache verify)
	r2=$(rss "$p")
	"$pt" daemon stop >/dev/null
	set -- $r1 $r2
	echo "daemon_hit_p50_us=$hit daemon_rss_hits_mb=$1 daemon_anon_hits_mb=$2 daemon_rss_end_mb=$3 daemon_anon_end_mb=$4 cli_stats_ms=$stats cli_trim_compact_ms=$trimc cli_trim_ms=$trim cli_ls20_ms=$lsf cli_ls_ms=$lsa cli_verify_ms=$verify"
}

# puts: the Put throughput of both stores, side by side in one process
# (cache.TestScalePuts), as "RATE_1K RATE_N".
puts() {
	PTOJIT_SCALE_PUTS="$work/c1000 $work/c$n" go test -count=1 -timeout 30m -v -run '^TestScalePuts$' ./cache |
		sed -n 's/.*scale n=.* put_per_s=\([0-9]*\).*/\1/p' | tr '\n' ' '
}

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
base=$(run 1000)
big=$(run "$n")
rates=$(puts) # an assignment, so that a failed test stops the script
set -- $rates
if [ $# != 2 ]; then
	echo "bench/scale.sh: TestScalePuts printed \"$rates\", want two rates" >&2
	exit 1
fi
base="$base put_per_s=$1"
big="$big put_per_s=$2"
prepare 1000
prepare "$n"
# The output memo remembers an output only once its times are a second
# old (racily clean): hits begin when both builds' outputs are, or the
# store built second would re-read its outputs for longer.
sleep 1.5
p50s=$(hits 1000 "$n")
set -- $p50s
base="$base $(daemon 1000 "$1")"
big="$big $(daemon "$n" "$2")"
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
