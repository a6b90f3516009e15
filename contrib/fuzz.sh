#!/usr/bin/env bash
# contrib/fuzz.sh: build the libFuzzer harnesses of tests/fuzz/ with clang, fuzz each for a
# bounded time, and replay every saved regression input.
#
#   contrib/fuzz.sh [HARNESS...]     HARNESS: fuzz_grammar fuzz_opts fuzz_volatile (default: all)
#
#   $ FUZZ_SECONDS=60 contrib/fuzz.sh
#   ...
#   fuzz.sh: summary
#     fuzz_grammar: 60s, 279916 runs (4588 exec/s), cov 307, ft 1276, corpus 300/12374b, ...
#     fuzz_volatile: CRASHED (status 1, 1 input(s) in .../build-fuzz/artifacts/fuzz_volatile/): ...
#         1 x fuzz_volatile: unmark reported bytes=N purged=N, the model bytes=N purged=N
#           e.g. .../build-fuzz/artifacts/fuzz_volatile/crash-0d97...
#     regression tests/fuzz/regressions/fuzz_opts/...: passed
#
# Each harness is compiled in one clang command together with the daemon sources it needs,
# all instrumented: -fsanitize=fuzzer,address,undefined, UBSan fatal.  It starts from its seed
# corpus, tests/fuzz/corpus/HARNESS/ (read only: what libFuzzer finds goes to the scratch
# corpus $FUZZ_BUILD/corpus/HARNESS/, kept between runs), and a crash leaves its input in
# $FUZZ_BUILD/artifacts/HARNESS/.  Then every file in tests/fuzz/regressions/HARNESS/ is run
# once.  To keep a crash as a regression test, minimize it and copy it there:
#   build-fuzz/fuzz_volatile -minimize_crash=1 -runs=10000 build-fuzz/artifacts/fuzz_volatile/crash-...
#
# Environment:
#   FUZZ_SECONDS     seconds of fuzzing per harness (default 30; 0 replays only)
#   FUZZ_JOBS        harnesses fuzzed at once (default: the number of CPUs)
#   FUZZ_BUILD       build and scratch directory (default build-fuzz in the source tree)
#   FUZZ_FRESH=1     forget the scratch corpus: start from the seeds alone
#   FUZZ_KEEP_GOING=1  do not stop at the first crash (libFuzzer -fork=1 -ignore_crashes=1):
#                    every crash found in the time is saved
#   FUZZ_ARGS        more libFuzzer options (e.g. "-use_value_profile=1 -dict=FILE")
#   CC               the clang to use (default clang)
#
# Exit status: 0 when no harness crashed and every regression input passed, 1 otherwise,
# 2 when the harnesses could not be built.  Runs from any directory; installs clang and the
# build dependencies when they are missing (Debian, as root or through sudo).
set -euo pipefail

readonly PKGS=(clang libclang-rt-dev pkg-config libfuse3-dev libbsd-dev)
readonly ALL_HARNESSES=(fuzz_grammar fuzz_opts fuzz_volatile)

prog=${0##*/}

die_status=2
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Does $CC build and link a libFuzzer target with the sanitizers?
fuzzer_links() {
	local dir
	dir=$(mktemp -d)
	printf '%s\n' '#include <stddef.h>' '#include <stdint.h>' \
		'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
		>"$dir/t.c"
	if "$CC" -fsanitize=fuzzer,address,undefined "$dir/t.c" -o "$dir/t" >/dev/null 2>&1; then
		rm -rf "$dir"
		return 0
	fi
	rm -rf "$dir"
	return 1
}

have_deps() {
	command -v "$CC" >/dev/null 2>&1 && fuzzer_links && command -v pkg-config >/dev/null 2>&1 &&
		pkg-config --exists fuse3 && [[ -f /usr/include/bsd/sys/tree.h ]]
}

ensure_deps() {
	have_deps && return 0
	if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
		die "$CC with libFuzzer, pkg-config, fuse3 and libbsd headers are needed (${PKGS[*]})"
	fi
	install_missing "${PKGS[@]}"
	have_deps || die "$CC cannot build libFuzzer targets (is libclang-rt-dev installed?)"
}

# The daemon's modules, as the build lists them (core_src in src/daemon/meson.build).
core_sources() {
	local -a files
	mapfile -t files < <(sed -n '/core_src *= *files(/,/)/p' src/daemon/meson.build |
		grep -o "'[^']*\.c'" | tr -d "'")
	if [[ ${#files[@]} -eq 0 ]]; then # fall back on everything but the FUSE glue
		local f
		for f in src/daemon/*.c; do
			case ${f##*/} in main.c | ops.c | notify.c) ;; *) files+=("${f##*/}") ;; esac
		done
	fi
	printf 'src/daemon/%s\n' "${files[@]}"
}

build() {
	local name=$1 out=$FUZZ_BUILD/$1
	local -a srcs cflags libs
	# shellcheck disable=SC2054 # the commas belong to -fsanitize=
	cflags=(-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
		-fno-sanitize-recover=all -std=gnu11 -Wall -Wextra -D_GNU_SOURCE
		-D_FILE_OFFSET_BITS=64 '-DVOLATILEFS_VERSION="fuzz"' -Isrc/daemon -Iinclude)
	libs=()
	case $name in
	fuzz_grammar) srcs=(src/daemon/vgrammar.c src/daemon/size.c) ;;
	fuzz_opts) srcs=(src/daemon/opts.c src/daemon/size.c) ;;
	fuzz_volatile) mapfile -t srcs < <(core_sources) ;;
	*) die "no harness $name (there are: ${ALL_HARNESSES[*]})" ;;
	esac
	if [[ $name != fuzz_grammar ]]; then
		read -r -a extra <<<"$(pkg-config --cflags fuse3)"
		cflags+=("${extra[@]}")
		read -r -a libs <<<"$(pkg-config --libs fuse3)"
		libs+=(-pthread)
	fi
	"$CC" "${cflags[@]}" "tests/fuzz/$name.c" "${srcs[@]}" "${libs[@]}" -o "$out.new" \
		>"$FUZZ_BUILD/$name.build.log" 2>&1 || {
		cat "$FUZZ_BUILD/$name.build.log" >&2
		return 1
	}
	mv "$out.new" "$out"
}

max_len() {
	case $1 in
	fuzz_grammar | fuzz_opts) echo 512 ;;
	fuzz_volatile) echo 1025 ;; # 128 operations of 8 bytes, and the configuration byte
	esac
}

# "key=value" pairs from libFuzzer's last status line and its final stats.
stats_of() {
	local log=$1 line
	line=$(grep -E '^#[0-9]+[[:space:]]+(DONE|INITED|NEW|REDUCE|pulse|RELOAD)' "$log" | tail -n 1 || true)
	awk -v line="$line" '
		BEGIN {
			n = split(line, w, /[[:space:]]+/)
			for (i = 1; i < n; i++) {
				if (w[i] == "cov:") cov = w[i + 1]
				if (w[i] == "ft:") ft = w[i + 1]
				if (w[i] == "corp:") corp = w[i + 1]
			}
		}
		/^stat::number_of_executed_units:/ { runs = $2 }
		/^stat::average_exec_per_sec:/ { eps = $2 }
		/^stat::new_units_added:/ { added = $2 }
		/^stat::peak_rss_mb:/ { rss = $2 }
		# fork mode prints "#N: cov: X ft: Y corp: Z exec/s: E ..." instead
		/^#[0-9]+: cov:/ {
			for (i = 1; i <= NF; i++) {
				if ($i == "cov:") cov = $(i + 1)
				if ($i == "ft:") ft = $(i + 1)
				if ($i == "corp:") corp = $(i + 1)
				if ($i == "exec/s:" || $i == "exec/s") eps = $(i + 1)
			}
			runs = substr($1, 2) + 0
		}
		END {
			printf "%s runs (%s exec/s), cov %s, ft %s, corpus %s, new %s, peak rss %s MB",
				runs == "" ? "?" : runs, eps == "" ? "?" : eps, cov == "" ? "?" : cov,
				ft == "" ? "?" : ft, corp == "" ? "?" : corp, added == "" ? "?" : added,
				rss == "" ? "?" : rss
		}' "$log"
}

# The reason a run failed, in one line: the harness's own message (after the list of
# operations that fuzz_volatile prints first), else the sanitizer's summary.
why() {
	local line
	line=$(grep -E '^fuzz_[a-z_]+: ' "$1" | grep -v 'disagree after these operations' | head -n 1)
	[[ -n $line ]] || line=$(grep -E '^SUMMARY: |runtime error' "$1" | head -n 1)
	printf '%s\n' "${line:-(no message: see $1)}"
}

# Replay each new artifact of harness $1 and count them by reason (numbers made N), so a
# run that found one bug a hundred times says so.
classify() {
	local name=$1 art=$2 file
	find "$art" -type f -newer "$FUZZ_BUILD/$name" \( -name 'crash-*' -o -name 'leak-*' \
		-o -name 'timeout-*' -o -name 'oom-*' \) -print0 |
		while IFS= read -r -d '' file; do
			"$FUZZ_BUILD/$name" -error_exitcode=1 -timeout=30 "$file" >"$file.log" 2>&1 </dev/null || true
			printf '%s\t%s\n' "$(why "$file.log" | sed -E 's/[0-9]+/N/g')" "$file"
		done |
		awk -F '\t' '{ n[$1]++; if (!($1 in ex)) ex[$1] = $2 }
			END { for (m in n) printf "    %d x %s\n      e.g. %s\n", n[m], m, ex[m] }'
}

declare -a summary=()
failed=0

fuzz_one() {
	local name=$1 log=$FUZZ_BUILD/$1.log art=$FUZZ_BUILD/artifacts/$1 work=$FUZZ_BUILD/corpus/$1
	local -a opts=()
	local rc=0 line
	[[ ${FUZZ_FRESH:-0} == 1 ]] && rm -rf "$work"
	mkdir -p "$art" "$work"
	opts=(-max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048
		-max_len="$(max_len "$name")" -print_final_stats=1 -error_exitcode=1
		-artifact_prefix="$art/")
	if [[ ${FUZZ_KEEP_GOING:-0} == 1 ]]; then
		opts+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
	fi
	say "=== $name: fuzzing for ${FUZZ_SECONDS}s (log: $log)"
	# shellcheck disable=SC2086 # FUZZ_ARGS is a list of options
	"$FUZZ_BUILD/$name" "${opts[@]}" ${FUZZ_ARGS:-} "$work" "tests/fuzz/corpus/$name" \
		>"$log" 2>&1 </dev/null || rc=$?
	local crashes
	crashes=$(find "$art" -type f -newer "$FUZZ_BUILD/$name" \( -name 'crash-*' -o -name 'leak-*' \
		-o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
	if [[ $rc -eq 0 && $crashes -eq 0 ]]; then
		summary+=("$name: ${FUZZ_SECONDS}s, $(stats_of "$log")")
	else
		summary+=("$name: CRASHED (status $rc, $crashes input(s) in $art/): $(stats_of "$log")")
		while IFS= read -r line; do
			summary+=("$line")
		done < <(classify "$name" "$art")
		failed=1
	fi
}

# Fuzz the harnesses "$@", FUZZ_JOBS at a time (default: one per CPU; each libFuzzer
# run uses one), and gather their summaries in the order given.
fuzz_all() {
	local jobs=${FUZZ_JOBS:-$(nproc)} running=0 name
	local -a lines
	[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "FUZZ_JOBS must be a positive number"
	for name in "$@"; do
		rm -f "$FUZZ_BUILD/$name.summary"
		(
			summary=()
			failed=0
			fuzz_one "$name"
			printf '%s\n' "${summary[@]}" >"$FUZZ_BUILD/$name.summary"
			exit "$failed"
		) &
		running=$((running + 1))
		if ((running >= jobs)); then
			wait -n || failed=1
			running=$((running - 1))
		fi
	done
	while ((running > 0)); do
		wait -n || failed=1
		running=$((running - 1))
	done
	for name in "$@"; do
		if [[ ! -f $FUZZ_BUILD/$name.summary ]]; then
			summary+=("$name: no result (log: $FUZZ_BUILD/$name.log)")
			failed=1
			continue
		fi
		mapfile -t lines <"$FUZZ_BUILD/$name.summary"
		summary+=("${lines[@]}")
	done
}

replay_one() {
	local name=$1 file log rc
	[[ -d tests/fuzz/regressions/$name ]] || return 0
	for file in tests/fuzz/regressions/"$name"/*; do
		[[ -f $file ]] || continue
		log=$FUZZ_BUILD/regression-$name-${file##*/}.log
		rc=0
		"$FUZZ_BUILD/$name" -error_exitcode=1 -timeout=30 "$file" >"$log" 2>&1 </dev/null || rc=$?
		if [[ $rc -eq 0 ]]; then
			summary+=("regression $file: passed")
		else
			summary+=("regression $file: FAILED (status $rc, log $log)" "    $(why "$log")")
			failed=1
		fi
	done
}

main() {
	local here root name
	local -a harnesses
	here=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
	root=$(cd -- "$here/.." && pwd)
	cd -- "$root"
	[[ -f meson.build && -d tests/fuzz ]] || die "$root does not look like the volatilefs source tree"

	CC=${CC:-clang}
	FUZZ_SECONDS=${FUZZ_SECONDS:-30}
	[[ $FUZZ_SECONDS =~ ^[0-9]+$ ]] || die "FUZZ_SECONDS must be a number of seconds"
	FUZZ_BUILD=${FUZZ_BUILD:-$root/build-fuzz}
	mkdir -p "$FUZZ_BUILD"
	FUZZ_BUILD=$(cd -- "$FUZZ_BUILD" && pwd)
	harnesses=("$@")
	[[ ${#harnesses[@]} -gt 0 ]] || harnesses=("${ALL_HARNESSES[@]}")

	ensure_deps
	exec </dev/null

	for name in "${harnesses[@]}"; do
		say "=== $name: building with $CC"
		build "$name" || die "$name: the build failed (log: $FUZZ_BUILD/$name.build.log)"
	done
	if [[ $FUZZ_SECONDS -gt 0 ]]; then
		fuzz_all "${harnesses[@]}"
	fi
	for name in "${harnesses[@]}"; do
		replay_one "$name"
	done

	echo
	say "summary"
	printf '  %s\n' "${summary[@]}"
	if [[ $failed -ne 0 ]]; then
		say "FAILED"
		exit 1
	fi
	say "no crash, every regression input passed"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
