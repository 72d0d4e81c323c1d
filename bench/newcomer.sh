#!/usr/bin/env bash
# bench/newcomer.sh: the command line as a newcomer meets it.
#
# Clones this repository into a temporary directory, runs the README's
# quick start there (build the binaries, build the example twice: a miss,
# then a hit, then run it on child workers), then 68 bad inputs: usage
# errors, invalid requests and values, and commands that only look at a
# cache or module store that does not exist. For each it checks that
#   - it answers within a deadline (no hang),
#   - it exits with the README's code (2; 1 for looking at a missing
#     cache or store),
#   - after it, no daemon runs and no directory was created for it,
#   - its message names the file, the field or the argument at fault,
#   - a request error does not end with the generic usage hint.
# Then, with the example module installed, it completes command lines as
# bash does on TAB (compgen through the script "completion bash" prints)
# and loads the zsh and fish scripts in their shells where installed.
# It prints one line per case and the totals; it exits 1 if any check
# failed.
#
#   bench/newcomer.sh                 # clone, build, run everything
#   NEWCOMER_BIN=DIR bench/newcomer.sh  # the bad inputs only, with the
#                                     # ptojit and ptojitd in DIR (to
#                                     # compare with another revision)
#   NEWCOMER_GO_TEST=1 ...            # also run the README's go test ./...
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d)
DEADLINE=${NEWCOMER_DEADLINE:-20}
cleanup() {
	# Stop the daemons this session started (their pids are in the daemon
	# locks under $T) and remove the temporary directory.
	for lock in $(find "$T" -name daemon.lock 2>/dev/null); do
		pid=$(head -c 20 "$lock" | tr -dc 0-9)
		[ -n "$pid" ] && kill "$pid" 2>/dev/null
	done
	sleep 0.2
	rm -rf "$T"
}
trap cleanup EXIT

# A newcomer's HOME and runtime directory, but this machine's Go caches
# (the first build on a machine without them takes minutes more).
export GOMODCACHE=$(go env GOMODCACHE) GOCACHE=$(go env GOCACHE) GOPATH=$(go env GOPATH)
export XDG_RUNTIME_DIR=$T/run HOME=$T/home
mkdir -m 0700 "$XDG_RUNTIME_DIR" "$HOME"
unset PTOJIT_DAEMON PTOJIT_CACHE_READONLY PTOJIT_ENGINE

if [ -n "${NEWCOMER_BIN:-}" ]; then
	BIN=$(cd "$NEWCOMER_BIN" && pwd)
	mkdir "$T/clone"
	cp -r "$REPO/testdata" "$T/clone/"
	cd "$T/clone"
else
	git clone -q "$REPO" "$T/clone" || exit 1
	cd "$T/clone"
	echo "== quick start (README): go build -o bin/ ./cmd/... && bin/ptojit build --request testdata/examples/vadd/request.json"
	start=$(date +%s.%N)
	timeout 1800 go build -o bin/ ./cmd/... || { echo "FAIL: go build"; exit 1; }
	printf 'go build: %.1f s\n' "$(echo "$(date +%s.%N) - $start" | bc)"
	BIN=$T/clone/bin
	"$BIN/ptojit" version | head -3
	export PTOJIT_CACHE_DIR=$T/cache
	for want in miss hit; do
		out=$(timeout 300 "$BIN/ptojit" build --request testdata/examples/vadd/request.json 2>&1)
		rc=$?
		echo "$out" | head -1
		case "$(echo "$out" | head -1)" in
		"$want"*) ;;
		*) echo "FAIL: build $want: exit $rc"; echo "$out"; exit 1 ;;
		esac
	done
	timeout 300 "$BIN/ptojit" run --request testdata/examples/vadd/request.json | head -3 || { echo "FAIL: run"; exit 1; }
	if [ -n "${NEWCOMER_GO_TEST:-}" ]; then
		timeout 3600 go test ./... || { echo "FAIL: go test ./..."; exit 1; }
	fi
	timeout 20 "$BIN/ptojit" daemon stop
	for lock in $(find "$XDG_RUNTIME_DIR" -name daemon.lock); do
		pid=$(head -c 20 "$lock" | tr -dc 0-9)
		for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	done
	rm -rf "$XDG_RUNTIME_DIR/ptojit"
	unset PTOJIT_CACHE_DIR
fi

# The bad requests: the example with one thing wrong.
R=testdata/examples/vadd
edit() { sed "$2" "$R/request.json" >"$R/$1"; }
edit sig_string.json 's/"signature": \["IN", "IN", "OUT"\]/"signature": "IN IN OUT"/'
edit funcid_string.json 's/"func_id": 1/"func_id": "one"/'
edit sideways.json 's/"INOUT", "SCALAR"/"INOUT", "SIDEWAYS"/'
edit no_platform.json '/"platform"/d'
edit bogus.json 's/"runtime":/"bogus_field": 1, "runtime":/'
edit literal.json 's/"a2a3sim"/tru/'
edit missing_kernel.json 's/kernel_add.c/nope.c/'
edit x86.json 's/"a2a3sim"/"x86"/'
edit bad_symbol.json 's/"vadd_orch",/"1x",/'
edit dup_funcid.json 's/"func_id": 1/"func_id": 0/'
edit scalars.json 's/"scalar_count": 1/"scalar_count": 2/'
head -c 120 "$R/request.json" >"$R/truncated.json"
{ cat "$R/request.json"; echo '{}'; } >"$R/trailing.json"
: >"$R/empty.json"
echo '[1, 2]' >"$R/array.json"
echo '{"a": }' >bad_record.json

total=0 failed=0 hangs=0 strays=0 unnamed=0 wrongexit=0 hinted=0 maxms=0
# bad NAME WANT_EXIT REGEX [request] -- ARGS...: one bad input, run with a
# fresh cache directory of its own.
bad() {
	local name=$1 want=$2 re=$3 kind=$4
	shift 5
	total=$((total + 1))
	local cdir=$T/fresh-$total stdin=/dev/null
	if [ "$kind" = stdin ]; then stdin=$R/sideways.json; fi
	local t0=$(date +%s%N)
	PTOJIT_CACHE_DIR=$cdir timeout "$DEADLINE" "$BIN/ptojit" "$@" <"$stdin" >"$T/out" 2>"$T/err"
	local rc=$? ms=$((($(date +%s%N) - t0) / 1000000)) bad=""
	[ $ms -gt $maxms ] && maxms=$ms
	if [ $rc -eq 124 ]; then bad="$bad hang"; hangs=$((hangs + 1)); fi
	if [ $rc -ne "$want" ] && [ $rc -ne 124 ]; then bad="$bad exit=$rc"; wrongexit=$((wrongexit + 1)); fi
	local stray=""
	[ -e "$cdir" ] && stray="$stray cache-dir"
	[ -e X ] && stray="$stray X/" && rm -rf X
	if [ -n "$(ls -A "$XDG_RUNTIME_DIR/ptojit" 2>/dev/null)" ]; then
		stray="$stray daemon-dir"
		for lock in $(find "$XDG_RUNTIME_DIR" -name daemon.lock); do
			pid=$(head -c 20 "$lock" | tr -dc 0-9)
			[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && stray="$stray daemon(pid $pid)" && kill "$pid"
		done
		sleep 0.2
		rm -rf "$XDG_RUNTIME_DIR/ptojit"
	fi
	if [ -n "$stray" ]; then bad="$bad stray:$stray"; strays=$((strays + 1)); fi
	if ! grep -Eq -- "$re" "$T/err"; then bad="$bad unnamed"; unnamed=$((unnamed + 1)); fi
	if [ "$kind" != usage ] && grep -q "for usage" "$T/err"; then bad="$bad usage-hint"; hinted=$((hinted + 1)); fi
	if [ -n "$bad" ]; then
		failed=$((failed + 1))
		printf 'FAIL %-16s %5d ms exit %d:%s\n     %s\n' "$name" $ms $rc "$bad" "$(head -1 "$T/err")"
	else
		printf 'ok   %-16s %5d ms exit %d: %s\n' "$name" $ms $rc "$(head -1 "$T/err" | cut -c1-110)"
	fi
}

echo "== bad inputs (deadline ${DEADLINE}s each)"
bad unknown-flag 2 'unknown flag: --cache-dir' usage -- key --request $R/request.json --cache-dir X
bad no-request 2 '--request' usage -- build --cache-dir X
bad extra-arg 2 'unexpected argument "extra"' usage -- build --request $R/request.json extra
bad no-such-file 2 'nonexist\.json' request -- build --request $R/nonexist.json
bad empty 2 'empty\.json:1:1' request -- build --request $R/empty.json
bad literal 2 'literal\.json:[0-9]+:[0-9]+: platform' request -- build --request $R/literal.json
bad truncated 2 'truncated\.json:[0-9]+:[0-9]+' request -- build --request $R/truncated.json
bad trailing 2 'trailing\.json:[0-9]+:[0-9]+' request -- build --request $R/trailing.json
bad array 2 'array\.json:1:1: must be an object' request -- build --request $R/array.json
bad sig-string 2 'sig_string\.json:[0-9]+:[0-9]+: kernels\[0\]\.signature: must be a list of directions' request -- build --request $R/sig_string.json
bad funcid-string 2 'funcid_string\.json:[0-9]+:[0-9]+: kernels\[1\]\.func_id' request -- build --request $R/funcid_string.json
bad sideways 2 'sideways\.json:[0-9]+:[0-9]+: kernels\[1\]\.signature\[1\]' request -- build --request $R/sideways.json
bad no-platform 2 'no_platform\.json:[0-9]+:[0-9]+: platform: missing' request -- build --request $R/no_platform.json
bad unknown-field 2 'bogus\.json:[0-9]+:[0-9]+: bogus_field' request -- build --request $R/bogus.json
bad missing-kernel 2 'missing_kernel\.json:[0-9]+:[0-9]+: kernels\[0\]\.source: nope\.c' request -- build --request $R/missing_kernel.json
bad x86 2 'x86\.json:[0-9]+:[0-9]+: platform' request -- build --request $R/x86.json
bad bad-symbol 2 'bad_symbol\.json:[0-9]+:[0-9]+: orchestration\.function' request -- build --request $R/bad_symbol.json
bad dup-funcid 2 'dup_funcid\.json:[0-9]+:[0-9]+: kernels\[1\]\.func_id' request -- build --request $R/dup_funcid.json
bad scalar-count 2 'scalars\.json:[0-9]+:[0-9]+: scalar_count' request -- build --request $R/scalars.json
bad stdin 2 '<stdin>:[0-9]+:[0-9]+: kernels\[1\]\.signature\[1\]' stdin -- build --request -
bad key-request 2 'sideways\.json:[0-9]+:[0-9]+: kernels' request -- key --request $R/sideways.json
bad key-diff-one 2 'want two arguments' usage -- key diff only_one
bad key-diff-arg 2 '"zz" is neither a request file nor a key' usage -- key diff zz $R/request.json
bad cache-show 2 '"zz" is not a key' usage -- cache show zz
bad cache-extra 2 'unexpected argument "extra"' usage -- cache stats extra
bad max-size 2 '--max-size' usage -- cache trim --max-size lots
bad cache-sub 2 'unknown command "cache frobnicate"' usage -- cache frobnicate
bad daemon-extra 2 'unexpected argument "extra"' usage -- daemon status extra
bad fingerprint 2 'PATH' usage -- fingerprint
bad envaudit-file 2 'nonexist\.py' request -- envaudit --registry _environment.json --scan .:py nonexist.py
bad record 2 'bad_record\.json' request -- record encode bad_record.json
bad command 2 'unknown command "nosuch"' usage -- nosuch
bad help 2 'unknown command "nosuch"' usage -- help nosuch
bad completion 2 'bash, zsh, fish' usage -- completion tcsh
bad version 2 'unexpected argument "extra"' usage -- version extra
bad policy 2 'fast' usage -- toolchain --policy fast
# Typos: each gets a suggestion, a flag before its subcommand says where it
# goes, and the hint names the command's own help.
bad typo-flag 2 'unknown flag: --requets; did you mean --request\?' usage -- build --requets $R/request.json
bad typo-command 2 'unknown command "buidl"; did you mean build\?' usage -- buidl
bad typo-sub 2 'unknown command "cache stat"; did you mean cache stats\?' usage -- cache stat
bad typo-key 2 'unknown key "maxsize"; did you mean max_size\?' usage -- config set maxsize 1G
bad flag-first 2 'flags go after the subcommand: ptojit cache stats --json' usage -- cache --json stats
bad typo-help 2 "Run 'ptojit help cache' for usage" usage -- cache stat

# Looking has no side effects: a missing cache directory or module store is
# named, exit 1, nothing created, no daemon started.
bad look-stats 1 'no cache: .*fresh-[0-9]+ does not exist' request -- cache stats
bad look-ls 1 'fresh-[0-9]+ does not exist' request -- cache ls
bad look-show 1 'fresh-[0-9]+ does not exist' request -- cache show abcd
bad look-verify 1 'fresh-[0-9]+ does not exist' request -- cache verify
bad look-dry-run 1 'fresh-[0-9]+ does not exist' request -- cache verify --dry-run --no-daemon
bad look-modules 1 'no module store: .*X does not exist' request -- module ls --module-dir X
bad look-module 1 'X does not exist' request -- module show example.scan --module-dir X
bad look-graph 1 'X does not exist' request -- module graph --module-dir X
bad look-mverify 1 'X does not exist' request -- module verify --module-dir X
bad look-ops 1 'X does not exist' request -- op ls --module-dir X
bad look-resolve 1 'X does not exist' request -- op resolve --op example.sequence.prefix_sum --dtype f32 --shape 8 --module-dir X
# Exit codes by one rule for module, run, callable: a missing or invalid
# input file is 2 and named, and creates nothing.
echo '{"a":' >notapackage.ptomodule
echo 'not a callable' >notacallable.bin
bad install-missing 2 'module install: nonexist\.ptomodule: no such file' request -- module install nonexist.ptomodule --module-dir X
bad install-corrupt 2 'notapackage\.ptomodule: archive' request -- module install notapackage.ptomodule --module-dir X
bad run-callable 2 'run: --callable notacallable\.bin: parse callable' request -- run --callable notacallable.bin
bad run-missing 2 'nonexist\.bin: no such file' request -- run --callable nonexist.bin
bad inspect-invalid 2 'notacallable\.bin: parse callable' request -- callable inspect notacallable.bin
bad key-missing 2 'nonexist\.json' request -- key --request $R/nonexist.json
bad look-key 1 'no cache: .*fresh-[0-9]+ does not exist' request -- key --request $R/request.json
bad hashid-invalid 2 'notacallable\.bin: parse callable' request -- hashid --platform a2a3sim --runtime r notacallable.bin
bad op-name 2 '--op "Bad Name": not a namespaced operation name' usage -- op resolve --op 'Bad Name' --dtype f32 --shape 8 --module-dir X
PTOJIT_REQUIRE_CACHED=maybe bad require-var 2 'PTOJIT_REQUIRE_CACHED: "maybe": want' request -- build --request $R/request.json
# Values: one rule for the environment, ptojit.conf and config set.
PTOJIT_DAEMON=banana bad daemon-var 2 'PTOJIT_DAEMON: "banana": want 1, true, yes or on, or 0, false, no or off' usage -- cache stats
PTOJIT_CACHE_READONLY=banana bad readonly-var 2 'PTOJIT_CACHE_READONLY: "banana": want' usage -- config get readonly
PTOJIT_REMOTE_TIMEOUT=forever bad timeout-var 2 'PTOJIT_REMOTE_TIMEOUT: "forever": want a duration' usage -- config list
bad timeout-set 2 'remote_timeout: "5m": want a duration such as 500ms, 30s or 2m, from 1ms to 1m0s' usage -- config set remote_timeout 5m
bad policy-set 2 'policy: "fast": want "build" or "content"' usage -- config set policy fast
echo "== value rules (environment, ptojit.conf, config set agree)"
inconsistent=0
# rule KEY VARIABLE VALUE: the variable, a file line and config set
# accept VALUE alike, or refuse it alike.
rule() {
	local key=$1 var=$2 v=$3 d=$T/rule-$1-$RANDOM
	total=$((total + 1))
	env "$var=$v" PTOJIT_CACHE_DIR=$d "$BIN/ptojit" config get "$key" >/dev/null 2>&1
	local e=$?
	mkdir -p "$d" && printf '%s = %s\n' "$key" "$v" >"$d/ptojit.conf"
	PTOJIT_CACHE_DIR=$d "$BIN/ptojit" config get "$key" >/dev/null 2>&1
	local f=$?
	rm -rf "$d"
	PTOJIT_CACHE_DIR=$d "$BIN/ptojit" config set "$key" "$v" >/dev/null 2>&1
	local c=$?
	rm -rf "$d"
	if [ $e -eq $f ] && [ $f -eq $c ]; then
		printf 'ok   %-22s %-10s env %d, file %d, set %d\n' "$key" "$v" $e $f $c
	else
		inconsistent=$((inconsistent + 1)) failed=$((failed + 1))
		printf 'FAIL %-22s %-10s env %d, file %d, set %d\n' "$key" "$v" $e $f $c
	fi
}
for v in 1 0 on OFF yes No banana 2; do rule readonly PTOJIT_CACHE_READONLY $v; done
for v in 2s 500ms 1m forever 5m 0s; do rule remote_timeout PTOJIT_REMOTE_TIMEOUT $v; done
for v in 30s 2m soon -1s; do rule daemon_timeout PTOJIT_DAEMON_TIMEOUT $v; done
for v in 5G 500M lots; do rule max_size PTOJIT_CACHE_MAX_SIZE $v; done

# Completion: bash's compgen through the script "completion bash" prints,
# with one module installed, as a newcomer's TAB would complete.
echo "== completion (bash, compgen)"
export PTOJIT_MODULE_DIR=$T/modules
(
	export PTOJIT_CACHE_DIR=$T/compcache PTOJIT_DAEMON=0
	pub=$("$BIN/ptojit" module keygen --out "$T/team.key") &&
		"$BIN/ptojit" module trust add org.example "$pub" &&
		"$BIN/ptojit" module pack testdata/examples/modules/scan --key "$T/team.key" -o "$T/scan.ptomodule" &&
		"$BIN/ptojit" module install "$T/scan.ptomodule"
) >"$T/out" 2>&1 || { echo "FAIL: installing the example module"; cat "$T/out"; exit 1; }
source <(PATH=$BIN:$PATH "$BIN/ptojit" completion bash)
# comp WANT WORD...: the completions of the last word, given the others.
comp() {
	local want=$1
	shift
	total=$((total + 1))
	COMP_WORDS=("$BIN/ptojit" "$@") COMP_CWORD=$#
	COMPREPLY=()
	_ptojit
	if [[ " ${COMPREPLY[*]} " == *" $want "* ]]; then
		printf 'ok   complete %-34s -> %s\n' "$*" "${COMPREPLY[*]}"
	else
		failed=$((failed + 1))
		printf 'FAIL complete %-34s -> %s (want %s)\n' "$*" "${COMPREPLY[*]}" "$want"
	fi
}
comp bash completion b
comp build help bu
comp max_size config get ma
comp example.sequence.prefix_sum op resolve --op example.seq
comp example.scan module show example.s
comp stats cache st
comp --request build --req
for sh in zsh fish; do
	command -v $sh >/dev/null || { echo "skip $sh: not installed"; continue; }
	total=$((total + 1))
	"$BIN/ptojit" completion $sh >"$T/comp.$sh"
	case $sh in
	zsh) timeout 60 zsh -f -c 'autoload -U compinit && compinit -u -d "$1.dump" && source "$1"' zsh "$T/comp.$sh" >"$T/out" 2>&1 ;;
	fish) timeout 60 fish --no-config -c "source $T/comp.$sh" >"$T/out" 2>&1 ;;
	esac
	if [ $? -eq 0 ] && [ ! -s "$T/out" ]; then echo "ok   $sh script loads"; else failed=$((failed + 1)); echo "FAIL $sh script: $(head -1 "$T/out")"; fi
done
unset PTOJIT_MODULE_DIR

echo "== $total cases: $failed failed; $inconsistent inconsistent value rules, $hangs hangs, $strays left a daemon or directory, $unnamed did not name the file/field/argument, $wrongexit wrong exit codes, $hinted request errors with the usage hint; slowest ${maxms} ms"
[ $failed -eq 0 ]
