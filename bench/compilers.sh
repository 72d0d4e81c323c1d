#!/usr/bin/env bash
# The shipped example (testdata/examples/vadd) built with gcc (cc, c++ on
# PATH) and with Debian's clang-19 (CC=clang-19 CXX=clang++-19), under the
# build policy (the default) and under content, interleaved, in one run.
# For each of the four, one cache directory and one daemon; each round
# restarts the daemon and builds twice:
#
#   cold   the first build after the restart: the identity is computed
#          from nothing (timings.identity; a hit once round 1 has
#          published)
#   warm   the second build: a hit from the daemon's memo, no compiler run
#
# Round 1 is the miss (compiled and published) and is reported apart. It
# prints the median cold identity and the median warm identity and total
# (milliseconds, from the responses' timings) of rounds 2..N, and the
# ratios clang/gcc. Every build after round 1's first must be a hit with
# timings.compile 0, else the script fails.
#
#   bash bench/compilers.sh [ROUNDS]    (default 7)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-7}
if ! command -v clang-19 >/dev/null || ! command -v clang++-19 >/dev/null; then
  echo "bench/compilers.sh needs clang-19 (apt-get install clang-19)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-compilers.XXXXXX")
cleanup() {
  for c in "$work"/cache-*; do
    [ -d "$c" ] && PTOJIT_CACHE_DIR=$c XDG_RUNTIME_DIR=$work/run "$work/bin/ptojit" daemon stop >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit
go build -o "$work/bin/" ./cmd/ptojitd
cp -r testdata/examples "$work/examples"
mkdir -m 700 "$work/run"
export PATH="$work/bin:$PATH" XDG_RUNTIME_DIR="$work/run"
unset PYPTO_CACHE_IDENTITY PYPTO_CACHE_EPOCH CC CXX

# build POLICY COMPILER: one build of the example; prints "status identity
# compile total".
build() {
  local env=(PTOJIT_CACHE_DIR="$work/cache-$1-$2" PYPTO_CACHE_IDENTITY="$1")
  if [ "$2" = clang ]; then env+=(CC=clang-19 CXX=clang++-19); fi
  (cd "$work/examples/vadd" && env "${env[@]}" ptojit build --json --request request.json) |
    python3 -c 'import json, sys; d = json.load(sys.stdin); t = d["timings"]; print(d["status"], t["identity"], t["compile"], t["total"])'
}

restart() {
  local dir="$work/cache-$1-$2"
  PTOJIT_CACHE_DIR=$dir ptojit daemon stop >/dev/null 2>&1 || true
  PTOJIT_CACHE_DIR=$dir ptojit daemon start >/dev/null
}

for r in $(seq "$rounds"); do
  for policy in build content; do
    for compiler in gcc clang; do
      restart "$policy" "$compiler"
      read -r s1 i1 c1 t1 < <(build "$policy" "$compiler")
      read -r s2 i2 c2 t2 < <(build "$policy" "$compiler")
      if [ "$r" = 1 ]; then
        echo "round 1 $policy $compiler: $s1 (identity $i1 ms, compile $c1 ms, total $t1 ms), then $s2 (identity $i2 ms)"
        [ "$s2" = hit ] && [ "$c2" = 0 ] || { echo "the second build is $s2, compile $c2 ms" >&2; exit 1; }
        continue
      fi
      for pair in "$s1 $c1" "$s2 $c2"; do
        [ "$pair" = "hit 0" ] || { echo "round $r $policy $compiler: $pair, want a hit with no compile" >&2; exit 1; }
      done
      echo "$i1" >> "$work/cold.$policy.$compiler"
      echo "$i2" >> "$work/warm.$policy.$compiler"
      echo "$t2" >> "$work/warmtotal.$policy.$compiler"
    done
  done
done

median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo
echo "medians of rounds 2..$rounds (ms)"
printf '%-8s %-6s %10s %12s %12s\n' policy cc cold-ident warm-ident warm-total
for policy in build content; do
  for compiler in gcc clang; do
    printf '%-8s %-6s %10.1f %12.3f %12.3f\n' "$policy" "$compiler" \
      "$(median "$work/cold.$policy.$compiler")" "$(median "$work/warm.$policy.$compiler")" "$(median "$work/warmtotal.$policy.$compiler")"
  done
  printf '%-8s clang/gcc cold identity %.2fx\n' "$policy" \
    "$(echo "$(median "$work/cold.$policy.clang") $(median "$work/cold.$policy.gcc")" | awk '{print $1 / $2}')"
done
