#!/usr/bin/env bash
# Warm-hit latency: `ptojit build` of the shipped example answered by the
# daemon from the cache, with the full content-policy toolchain identity,
# against a `ccache gcc -c` direct-mode hit on one of the same kernels.
# Both run interleaved, round after round, in one process (bench/cmdtime).
#
#   bash bench/hit_latency.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-300}

if ! command -v ccache >/dev/null; then
  apt-get update -qq && apt-get install -y -qq ccache >/dev/null
fi

work=$(mktemp -d /tmp/ptojit-hit.XXXXXX)
trap 'PTOJIT_CACHE_DIR=$work/cache "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
# The client as the README installs it: static (CGO_ENABLED=0), so it starts
# without the dynamic loader.
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd ./bench/cmdtime
cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"

export PTOJIT_CACHE_DIR=$work/cache
export XDG_RUNTIME_DIR=$work/run
export CCACHE_DIR=$work/ccache
export CCACHE_NOHASHDIR=1
req=$work/examples/vadd/request.json
kernel=$work/examples/vadd/kernel_add.c
inc=$work/examples/toolchain/runtime/include

# Prime both caches: a miss each, then the hits are measured.
"$work/bin/ptojit" build --request "$req" >/dev/null
"$work/bin/ptojit" build --request "$req" | head -1
ccache gcc -std=gnu11 -O2 -fPIC -I"$inc" -c "$kernel" -o "$work/k.o"
ccache gcc -std=gnu11 -O2 -fPIC -I"$inc" -c "$kernel" -o "$work/k.o"
ccache --zero-stats >/dev/null

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$work/bin/cmdtime" -n "$rounds" -- \
  "$work/bin/ptojit build --request $req" -- \
  "ccache gcc -std=gnu11 -O2 -fPIC -I$inc -c $kernel -o $work/k.o"
echo "ccache: $(ccache --print-stats | grep -E '^(direct_cache_hit|preprocessed_cache_hit|cache_miss)' | tr '\t\n' '= ')"
"$work/bin/ptojit" daemon status | sed -n '1,3p'
