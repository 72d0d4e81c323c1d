#!/usr/bin/env bash
# bench/fingerprint.sh: ptojit fingerprint beside two baselines, in one run,
# over the same files:
#
#   tree  6,500 files / ~60 MB shaped like a runtime installation (with
#         symlinks), the size the Python reference hashes in about 1.2 s
#   big   one 1 GiB file
#
#   ptojit   ptojit fingerprint --json ROOT  (every race and symlink check on)
#   sha256   find -L ROOT -type f | sort | xargs sha256sum
#   floor    bench/floor: a parallel Go loop of raw open/read/sha256/close
#            over the file list made beforehand (no walk, no stat, no checks)
#
# Warm page cache; each command runs RUNS times (default 7), interleaved,
# and the median wall time is reported. Usage: bench/fingerprint.sh [RUNS]
set -euo pipefail

runs=${1:-7}
files=${FILES:-6500}
tree_bytes=${TREE_BYTES:-60000000}
big_bytes=${BIG_BYTES:-1073741824}

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-fingerprint-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cd "$repo"
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/ptojit ./bench/floor

"$work/bin/floor" gen-tree "$work/tree" "$files" "$tree_bytes"
"$work/bin/floor" gen-file "$work/big.bin" "$big_bytes"
find -L "$work/tree" -type f | sort > "$work/tree.list"
echo "$work/big.bin" > "$work/big.list"
tree_files=$(wc -l < "$work/tree.list")
tree_total=$(xargs -d '\n' stat -L -c %s < "$work/tree.list" | awk '{s += $1} END {print s}')

now() { echo "${EPOCHREALTIME/,/.}"; }

# timeit NAME CMD...: runs CMD once, appends its wall seconds to NAME's file.
timeit() {
	local name=$1
	shift
	local t0 t1
	t0=$(now)
	"$@" > "$work/out.$name"
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.6f\n", b - a}' >> "$work/times.$name"
}

median() { sort -g "$work/times.$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

sha_tree() { find -L "$work/tree" -type f -print0 | sort -z | xargs -0 sha256sum; }
sha_big() { sha256sum "$work/big.bin"; }

# Warm the page cache and check that every command reads what the others do.
sha_tree > /dev/null
sha_big > /dev/null
"$work/bin/ptojit" fingerprint --json "$work/tree" > "$work/check.json"
grep -q "\"files\": $tree_files," "$work/check.json" || { echo "ptojit read another number of files than $tree_files" >&2; cat "$work/check.json" >&2; exit 1; }
"$work/bin/floor" < "$work/tree.list" > /dev/null

for ((i = 0; i < runs; i++)); do
	timeit ptojit_tree "$work/bin/ptojit" fingerprint --json "$work/tree"
	timeit floor_tree "$work/bin/floor" < "$work/tree.list"
	timeit sha_tree sha_tree
	timeit ptojit_big "$work/bin/ptojit" fingerprint --json "$work/big.bin"
	timeit floor_big "$work/bin/floor" < "$work/big.list"
	timeit sha_big sha_big
done

pt=$(median ptojit_tree) ft=$(median floor_tree) st=$(median sha_tree)
pb=$(median ptojit_big) fb=$(median floor_big) sb=$(median sha_big)

echo "machine: $(nproc) cores, $(uname -sr), $(go env GOVERSION); $runs runs each, median wall time, warm cache"
printf 'tree: %d files, %.1f MB\n' "$tree_files" "$(awk -v b="$tree_total" 'BEGIN {print b / 1e6}')"
awk -v p="$pt" -v f="$ft" -v s="$st" -v b="$tree_total" 'BEGIN {
	printf "  ptojit fingerprint   %7.3f s  %6.2f GB/s  %.2fx floor\n", p, b / p / 1e9, p / f
	printf "  floor (raw Go loop)  %7.3f s  %6.2f GB/s\n", f, b / f / 1e9
	printf "  find|sort|sha256sum  %7.3f s  %6.2f GB/s  %.2fx floor\n", s, b / s / 1e9, s / f
}'
printf 'big: 1 file, %.2f GiB\n' "$(awk -v b="$big_bytes" 'BEGIN {print b / 2^30}')"
awk -v p="$pb" -v f="$fb" -v s="$sb" -v b="$big_bytes" 'BEGIN {
	printf "  ptojit fingerprint   %7.3f s  %6.2f GB/s  %.2fx floor\n", p, b / p / 1e9, p / f
	printf "  floor (raw Go loop)  %7.3f s  %6.2f GB/s\n", f, b / f / 1e9
	printf "  sha256sum            %7.3f s  %6.2f GB/s  %.2fx floor\n", s, b / s / 1e9, s / f
}'
