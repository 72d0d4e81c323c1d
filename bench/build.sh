#!/usr/bin/env bash
# bench/build.sh: ptojit build of the vadd example beside ccache, in one run:
#
#   cold     ptojit build --no-daemon with an empty cache directory: identity
#            (the host compiler's installation read in full), three
#            compilations, publication
#   warm     ptojit build --no-daemon, a hit: a new process that opens the
#            store, computes the identity again and writes the outputs
#   daemon   ptojit build through the daemon (only when the engine has the
#            daemon command): the identity memo makes a hit cheap
#   ccache   ccache gcc -c on the same kernel (kernel_add.c), a direct-mode
#            hit: ccache's own fast path, one object file
#
# Each command runs RUNS times (default 21; cold runs RUNS/4+1 times) and the
# median wall time is reported with the ratio to the ccache hit. Installs
# ccache from Debian's packages when it is missing. Usage: bench/build.sh [RUNS]
set -euo pipefail

runs=${1:-21}
cold_runs=$((runs / 4 + 1))

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-build-bench.XXXXXX")
cleanup() {
	if [ -x "$work/bin/ptojit" ] && [ -n "${PTOJIT_CACHE_DIR:-}" ]; then
		"$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v ccache >/dev/null 2>&1; then
	echo "installing ccache (apt-get)..." >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ccache >&2
fi

cd "$repo"
go build -o "$work/bin/" ./cmd/...

# A private copy of the example and its toolchain.
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"
req="$work/examples/vadd/request.json"
export PTOJIT_CACHE_DIR="$work/cache"

now() { date +%s%N; }

# median of the numbers on stdin (nanoseconds) in milliseconds
median_ms() {
	sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.2f", m / 1e6}'
}

# time_runs N CMD...: prints one duration (ns) per run
time_runs() {
	local n=$1
	shift
	for _ in $(seq "$n"); do
		local t0
		t0=$(now)
		"$@" >/dev/null
		echo $(($(now) - t0))
	done
}

cold_once() {
	rm -rf "$PTOJIT_CACHE_DIR"
	"$work/bin/ptojit" build --no-daemon --request "$req"
}

# Check the status each mode claims before timing it.
status() { "$work/bin/ptojit" build --no-daemon --json --request "$req" | sed -n 's/^  "status": "\(.*\)",$/\1/p'; }
rm -rf "$PTOJIT_CACHE_DIR"
[ "$(status)" = miss ] || { echo "first build was not a miss" >&2; exit 1; }
[ "$(status)" = hit ] || { echo "second build was not a hit" >&2; exit 1; }

cold=$(time_runs "$cold_runs" cold_once | median_ms)
"$work/bin/ptojit" build --no-daemon --request "$req" >/dev/null
warm=$(time_runs "$runs" "$work/bin/ptojit" build --no-daemon --request "$req" | median_ms)

daemon=""
if "$work/bin/ptojitd" help daemon >/dev/null 2>&1; then
	"$work/bin/ptojit" build --request "$req" >/dev/null
	daemon=$(time_runs "$runs" "$work/bin/ptojit" build --request "$req" | median_ms)
	"$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true
fi

# ccache: the same kernel, the same flags, as an object file.
export CCACHE_DIR="$work/ccache" CCACHE_DIRECT=1 CCACHE_NOHASHDIR=1
inc="$work/examples/toolchain/runtime/include"
kernel="$work/examples/vadd/kernel_add.c"
cc_once() { ccache gcc -c -std=gnu11 -O2 -fPIC -I "$inc" -o "$work/kernel_add.o" "$kernel"; }
cc_once
ccache -z >/dev/null
ccache_hit=$(time_runs "$runs" cc_once | median_ms)
hits=$(ccache --print-stats | awk -F'\t' '$1 == "direct_cache_hit" {print $2}')
[ "$hits" = "$runs" ] || { echo "ccache: $hits direct hits of $runs runs" >&2; exit 1; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1fx", a / b}'; }
echo "ptojit build of testdata/examples/vadd (3 units) vs ccache on one kernel; medians"
echo "runs: cold $cold_runs, others $runs; $(nproc) CPUs, shared machine; $(gcc --version | head -1); $(ccache --version | head -1)"
printf "%-36s %10s %10s\n" "mode" "median ms" "vs ccache"
printf "%-36s %10s %10s\n" "ptojit cold build (--no-daemon)" "$cold" "$(ratio "$cold" "$ccache_hit")"
printf "%-36s %10s %10s\n" "ptojit warm hit (--no-daemon)" "$warm" "$(ratio "$warm" "$ccache_hit")"
if [ -n "$daemon" ]; then
	printf "%-36s %10s %10s\n" "ptojit warm hit (daemon)" "$daemon" "$(ratio "$daemon" "$ccache_hit")"
fi
printf "%-36s %10s %10s\n" "ccache gcc -c hit (direct mode)" "$ccache_hit" "1.0x"
