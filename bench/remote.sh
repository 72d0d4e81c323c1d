#!/usr/bin/env bash
# bench/remote.sh: the remote tier against a local compile and a local hit
# of the vadd example, in one run, on a 3-master Redis Cluster and an S3
# server (versitygw, serving a directory) on loopback:
#
#   miss        ptojit build --no-daemon with an empty cache directory and no
#               remote tier: three compilations and a publication
#   remote hit  ptojit build --no-daemon with an empty cache directory and
#               PTOJIT_REMOTE (read-only): the entry and blobs fetched,
#               verified and stored locally, no compilation
#   S3 hit      the same with PTOJIT_REMOTE=s3://... (read-only)
#   local hit   ptojit build --no-daemon on a filled cache directory
#
# Each mode runs RUNS times (default 11). For each it reports the median wall
# time of the whole command, and the median of the build's own cache part
# (the response's lookup + compile + publish timings, in milliseconds: the
# identity, the same in every mode, excluded; phases_us, the same phases in
# microseconds, not added), with the ratio of each to the miss. Installs
# redis-server from Debian's packages and versitygw (go install, pinned)
# when they are missing. Usage:
# bench/remote.sh [RUNS]
set -euo pipefail

runs=${1:-11}
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptojit-remote-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	echo "installing redis-server (apt-get)..." >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >&2
fi

cd "$repo"
go build -o "$work/bin/" ./cmd/...

vgw=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
if [ ! -x "$vgw" ]; then
	echo "installing versitygw (go install)..." >&2
	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 >&2
fi

# Three masters on free loopback ports (port and port+10000, the bus).
free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
addrs=()
port=$((20000 + RANDOM % 20000))
while [ ${#addrs[@]} -lt 3 ]; do
	port=$((port + 1))
	if free "$port" && free $((port + 10000)); then
		mkdir -p "$work/redis/$port"
		redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file "$work/redis/$port/nodes.conf" --dir "$work/redis/$port" \
			--save "" --appendonly no --logfile "$work/redis/$port/log" &
		pids+=($!)
		addrs+=("127.0.0.1:$port")
	fi
done
for a in "${addrs[@]}"; do
	for _ in $(seq 100); do redis-cli -h "${a%:*}" -p "${a#*:}" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
for a in "${addrs[@]}"; do
	for _ in $(seq 100); do
		redis-cli -h "${a%:*}" -p "${a#*:}" cluster info | grep -q cluster_state:ok && break
		sleep 0.1
	done
done
remote="redis-cluster://$(IFS=,; echo "${addrs[*]}")"

# The S3 server: one bucket, credentials from the environment.
while ! free "$port"; do port=$((port + 1)); done
mkdir -p "$work/s3/bench"
s3key=bench-access s3secret=bench-secret-$RANDOM$RANDOM
"$vgw" --access "$s3key" --secret "$s3secret" --port "127.0.0.1:$port" posix "$work/s3" >"$work/versitygw.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do ! free "$port" && break; sleep 0.1; done
s3="s3://bench/vadd?endpoint=http://127.0.0.1:$port&style=path"
s3env=(PTOJIT_REMOTE="$s3" AWS_ACCESS_KEY_ID="$s3key" AWS_SECRET_ACCESS_KEY="$s3secret")

cp -r testdata/examples "$work/examples"
rm -rf "$work/examples/vadd/out"
req="$work/examples/vadd/request.json"

# build DIR [VAR=VALUE...]: one build with the cache in DIR; prints
# "status wall_ns cache_ms" (cache_ms from the timings in milliseconds,
# not from phases_us).
build() {
	local dir=$1
	shift
	local t0 out
	t0=$(date +%s%N)
	out=$(env PTOJIT_CACHE_DIR="$dir" "$@" "$work/bin/ptojit" build --no-daemon --json --request "$req")
	local wall=$(($(date +%s%N) - t0))
	echo "$out" | awk -v wall="$wall" '
		/"status":/ {gsub(/[",]/, "", $2); status = $2}
		/"hit_tier":/ {gsub(/[",]/, "", $2); tier = $2}
		/"phases_us":/ {phases = 1}
		phases && /}/ {phases = 0; next}
		!phases && /"(lookup|compile|publish)":/ {gsub(/,/, "", $2); part += $2}
		END {if (tier != "") status = status "/" tier; printf "%s %d %.3f\n", status, wall, part}'
}

# The remote tier gets the entry once.
build "$work/publisher" PTOJIT_REMOTE="$remote" >/dev/null
build "$work/publisher-s3" "${s3env[@]}" >/dev/null

median() { sort -n | awk '{a[NR]=$1} END {printf "%.2f", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A wall part
modes="miss remote s3 local"
for mode in $modes; do
	: >"$work/$mode.txt"
done
build "$work/local" >/dev/null
for i in $(seq "$runs"); do
	build "$work/miss-$i" >>"$work/miss.txt"
	build "$work/remote-$i" PTOJIT_REMOTE="$remote" PTOJIT_REMOTE_READONLY=1 >>"$work/remote.txt"
	build "$work/s3-$i" "${s3env[@]}" PTOJIT_REMOTE_READONLY=1 >>"$work/s3.txt"
	build "$work/local" >>"$work/local.txt"
done
for mode in $modes; do
	want=$(case $mode in miss) echo miss ;; remote | s3) echo hit/remote ;; local) echo hit/local ;; esac)
	if awk -v w="$want" '$1 != w {bad = 1} END {exit !bad}' "$work/$mode.txt"; then
		echo "$mode: a build was not $want:" >&2
		cat "$work/$mode.txt" >&2
		exit 1
	fi
	wall[$mode]=$(awk '{print $2 / 1e6}' "$work/$mode.txt" | median)
	part[$mode]=$(awk '{print $3}' "$work/$mode.txt" | median)
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2fx", a / b}'; }
echo "ptojit build --no-daemon of testdata/examples/vadd: remote tiers on a 3-master Redis Cluster and on versitygw (loopback); medians of $runs runs"
echo "$(nproc) CPUs, shared machine; $(redis-server --version | awk '{print $1, $3}'); versitygw v1.8.0 (posix); $(gcc --version | head -1)"
printf "%-34s %10s %8s %14s %8s\n" "mode" "wall ms" "vs miss" "cache part ms" "vs miss"
for mode in $modes; do
	name=$(case $mode in miss) echo "miss (3 compiles, publish)" ;; remote) echo "Redis hit (fresh local cache)" ;; s3) echo "S3 hit (fresh local cache)" ;; local) echo "local hit" ;; esac)
	printf "%-34s %10s %8s %14s %8s\n" "$name" "${wall[$mode]}" "$(ratio "${wall[$mode]}" "${wall[miss]}")" "${part[$mode]}" "$(ratio "${part[$mode]}" "${part[miss]}")"
done
