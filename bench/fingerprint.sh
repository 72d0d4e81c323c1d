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
#   walk     (tree only) floor walk: the same loop over the files it finds
#            by listing the directories (raw open/getdents/close, a stat
#            per symlink), as any fingerprint must; still no checks
#
# Warm page cache; each command runs RUNS times (default 7), interleaved,
# and the median wall time and CPU time (user+sys, steadier than wall
# time on a shared machine) are reported. With COLD=1 the page cache of
# the files a command reads is dropped before each run (floor evict:
# posix_fadvise DONTNEED on those files only; dentries and inodes stay
# cached). FILES and TREE_BYTES shape the tree (100,000 small files:
# FILES=100000 TREE_BYTES=200000000), BIG_BYTES the big file.
# Usage: bench/fingerprint.sh [RUNS]
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

# timeit NAME CMD...: runs CMD once, appends its wall and CPU (user+sys)
# seconds to NAME's files.
timeit() {
	local name=$1
	shift
	if [[ ${COLD:-} == 1 ]]; then
		"$work/bin/floor" evict < "$work/${name##*_}.list"
	fi
	local TIMEFORMAT='%3R %3U %3S' t
	t=$({ time "$@" > "$work/out.$name"; } 2>&1)
	echo "$t" | awk '{print $1}' >> "$work/times.$name"
	echo "$t" | awk '{print $2 + $3}' >> "$work/cpu.$name"
}

median() { sort -g "$work/$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

sha_tree() { find -L "$work/tree" -type f -print0 | sort -z | xargs -0 sha256sum; }
sha_big() { sha256sum "$work/big.bin"; }

# Warm the page cache and check that every command reads what the others do.
sha_tree > /dev/null
sha_big > /dev/null
"$work/bin/ptojit" fingerprint --json "$work/tree" > "$work/check.json"
grep -q "\"files\": $tree_files," "$work/check.json" || { echo "ptojit read another number of files than $tree_files" >&2; cat "$work/check.json" >&2; exit 1; }
"$work/bin/floor" < "$work/tree.list" > /dev/null
"$work/bin/floor" walk "$work/tree" | grep -q "^$tree_files files " || { echo "floor walk found another number of files than $tree_files" >&2; exit 1; }

for ((i = 0; i < runs; i++)); do
	timeit ptojit_tree "$work/bin/ptojit" fingerprint --json "$work/tree"
	timeit floor_tree "$work/bin/floor" < "$work/tree.list"
	timeit sha_tree sha_tree
	timeit walk_tree "$work/bin/floor" walk "$work/tree"
	timeit ptojit_big "$work/bin/ptojit" fingerprint --json "$work/big.bin"
	timeit floor_big "$work/bin/floor" < "$work/big.list"
	timeit sha_big sha_big
done

m() { median "times.$1"; }
c() { median "cpu.$1"; }

echo "machine: $(nproc) cores, $(uname -sr), $(go env GOVERSION); load average $(cut -d' ' -f1-3 /proc/loadavg) (shared)"
cache="warm page cache"
[[ ${COLD:-} == 1 ]] && cache="cold page cache (the files' pages dropped before each run)"
echo "$runs runs each, interleaved; median wall and CPU (user+sys) seconds; $cache"
report() { # TITLE BYTES NAME LABEL...
	local bytes=$2
	echo "$1"
	awk -v b="$bytes" -v pw="$(m "ptojit_$3")" -v pc="$(c "ptojit_$3")" -v fw="$(m "floor_$3")" -v fc="$(c "floor_$3")" \
		-v sw="$(m "sha_$3")" -v sc="$(c "sha_$3")" -v sl="$4" 'BEGIN {
		printf "  %-22s %7.3f s wall %6.2f GB/s %5.2fx floor | %7.3f s CPU %5.2fx floor\n", "ptojit fingerprint", pw, b / pw / 1e9, pw / fw, pc, pc / fc
		printf "  %-22s %7.3f s wall %6.2f GB/s %5s        | %7.3f s CPU\n", "floor (raw Go loop)", fw, b / fw / 1e9, "", fc
		printf "  %-22s %7.3f s wall %6.2f GB/s %5.2fx floor | %7.3f s CPU %5.2fx floor\n", sl, sw, b / sw / 1e9, sw / fw, sc, sc / fc
	}'
}
report "$(printf 'tree: %d files, %.1f MB' "$tree_files" "$(awk -v b="$tree_total" 'BEGIN {print b / 1e6}')")" "$tree_total" tree "find|sort|sha256sum"
awk -v b="$tree_total" -v ww="$(m walk_tree)" -v wc="$(c walk_tree)" -v fw="$(m floor_tree)" -v fc="$(c floor_tree)" \
	-v pw="$(m ptojit_tree)" -v pc="$(c ptojit_tree)" 'BEGIN {
	printf "  %-22s %7.3f s wall %6.2f GB/s %5.2fx floor | %7.3f s CPU %5.2fx floor\n", "floor walk (listing)", ww, b / ww / 1e9, ww / fw, wc, wc / fc
	printf "  %-22s %7s   ptojit / floor walk: %5.2fx wall, %5.2fx CPU\n", "", "", pw / ww, pc / wc
}'
report "$(printf 'big: 1 file, %.2f GiB' "$(awk -v b="$big_bytes" 'BEGIN {print b / 2^30}')")" "$big_bytes" big "sha256sum"
