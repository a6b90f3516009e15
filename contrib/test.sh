#!/usr/bin/env bash
# contrib/test.sh: install what is missing, build volatilefs twice and run every test.
#
#   contrib/test.sh [MESON-TEST-ARGS...]
#
# On a fresh Debian 12 machine (as root, or a user with sudo) this installs the Debian packages
# the build and the tests need, then:
#   1. builds in build-test (the default build type, with the daemon's libfiu fault points:
#      -Dfiu=enabled) and runs `meson test --print-errorlogs`, mount-fiu among them (allocation
#      failures injected with fiu-run/fiu-ctrl, tests/mount/fiu.sh);
#      The mount tests run on the passthrough data path (the default as root), then the
#      whole mount suite again on the classic path (VOLATILEFS_PASSTHROUGH=off);
#   2. builds in build-asan with AddressSanitizer and UndefinedBehaviorSanitizer and runs every
#      test again, leak detection on (without fault points: fiu's LD_PRELOAD and the sanitizer
#      runtimes do not mix).
# Both runs happen even when the first fails; the summary at the end says which part failed
# and the exit status is non-zero if anything did. Arguments are passed to both `meson test`
# runs (for example `--suite unit`, or a test name).
#
# The mount tests need /dev/fuse and root. Nothing is read from standard input: the script
# runs unattended in CI (`.ci/run`, CI=true) as well as from a terminal.
#
# The sanitizer run exports ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=8
# (ASan's default 256 MiB quarantine keeps freed buffers resident, which the daemon's RSS limit
# would count), UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 and VFS_FIO_SIZE=256M (the
# mount tests' meson.build raises the ENOSPC test's limit for sanitizer builds), and gives every
# test three times its timeout. VFS_TEST_SKIP_ASAN=1 skips it (the summary says so).
# Last, contrib/fuzz.sh fuzzes the value and option parsers for 30 s each
# (VFS_TEST_SKIP_FUZZ=1 skips it). A ThreadSanitizer build before it runs
# the threaded unit suites and the library and reporters mount tests (VFS_TEST_SKIP_TSAN=1 skips it, and so do arguments,
# which select tests).
set -euo pipefail

readonly BUILD_PKGS=(meson ninja-build pkg-config gcc libfuse3-dev libbsd-dev check libfreetype-dev
	libfiu-dev)
readonly RUN_PKGS=(fuse3)
readonly TEST_PKGS=(attr fio stress-ng fonts-dejavu-core valgrind fiu-utils
	dpkg-dev debhelper lintian ccache fontconfig python3)
readonly NORMAL_DIR=build-test
readonly ASAN_DIR=build-asan
readonly TSAN_DIR=build-tsan-test

prog=${0##*/}

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# meson setup, or reconfigure a build directory that already exists, with options "${@:2}".
configure() {
	local dir=$1
	shift
	if [[ -f $dir/meson-private/coredata.dat ]]; then
		meson setup --reconfigure "$dir" "$@"
	else
		meson setup "$dir" "$@"
	fi
}

# test_counts DIR [LOGBASE]: "ok=N fail=N skip=N ...", and the names of tests that did not
# pass with their failure lines, from meson's JSON log (LOGBASE.json, default testlog).
test_counts() {
	local log=$1/meson-logs/${2:-testlog}.json
	[[ -f $log ]] || { echo "no test log"; return 0; }
	python3 - "$log" <<'EOF' || echo "(could not read $log)"
import collections, json, re, sys
counts = collections.Counter()
bad = []
with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        t = json.loads(line)
        counts[t["result"]] += 1
        if t["result"] not in ("OK", "EXPECTEDFAIL"):
            bad.append("%s (%s)" % (t["name"], t["result"]))
            # Why, in the summary: CI shows the end of the output, where
            # the test's own log, printed much earlier, is out of sight.
            out = [l for l in (t.get("stdout") or "").splitlines() if l.strip()]
            why = [l for l in out if re.search(r"FAIL - |not ok|Assertion|ERROR|:F:|:E:", l)]
            for l in why[:6] if why else out[-6:]:
                bad.append("  | " + (l if len(l) <= 300 else l[:300] + "..."))
order = ["OK", "FAIL", "SKIP", "TIMEOUT", "EXPECTEDFAIL", "UNEXPECTEDPASS", "ERROR"]
keys = [k for k in order if counts[k]] + sorted(k for k in counts if k not in order)
print(" ".join("%s=%d" % (k.lower(), counts[k]) for k in keys) or "no tests ran")
for b in bad:
    print("      " + b)
EOF
}

declare -a summary=()
failed=0

# run_build NAME DIR MESON-TEST-ARGS -- MESON-SETUP-OPTIONS...
# Setup, compile and test one build; record the outcome in summary[] and failed.
run_build() {
	local name=$1 dir=$2 started=$SECONDS
	local -a test_args=() setup_args=()
	shift 2
	while [[ $# -gt 0 && $1 != -- ]]; do
		test_args+=("$1")
		shift
	done
	if [[ $# -gt 0 ]]; then
		shift # the --
	fi
	setup_args=("$@")

	say "=== $name build in $dir: meson setup ${setup_args[*]}"
	if ! configure "$dir" "${setup_args[@]}"; then
		summary+=("$name: FAILED at meson setup (see $dir/meson-logs/meson-log.txt)")
		failed=1
		return 0
	fi
	say "=== $name build: compiling"
	if ! meson compile -C "$dir"; then
		summary+=("$name: FAILED to compile")
		failed=1
		return 0
	fi
	say "=== $name build: meson test ${test_args[*]}"
	rm -f "$dir/meson-logs/testlog.json"
	if meson test -C "$dir" --print-errorlogs "${test_args[@]}"; then
		summary+=("$name: passed in $((SECONDS - started))s: $(test_counts "$dir")")
	else
		summary+=("$name: TESTS FAILED in $((SECONDS - started))s: $(test_counts "$dir")"
			"      full log: $dir/meson-logs/testlog.txt")
		failed=1
	fi
}

# The data paths (DESIGN section 11).  As root every mount that does not choose a path takes
# the passthrough path (passthrough=auto, the default), so each build's run is a run on it.
# The normal build runs the whole mount and cache-program suites a second time on the
# classic path (VOLATILEFS_PASSTHROUGH=off: a user's mount, an older kernel), so both paths
# run every mount test.  The sanitizer builds run each test once, on the passthrough path
# (the newer code: the shared-memory store, the INIT and OPEN patching); the ASan build then
# runs CLASSIC_ASAN_TESTS again on the classic path, the tests that drive the arena store
# hardest, to keep the whole suite under 50 minutes.  mount-recency always takes the
# classic path (it tests the classic path's probe), mount-passthrough always the
# passthrough path.
readonly CLASSIC_ASAN_TESTS=(mount-fsops mount-limit mount-evict mount-stress
	mount-modelcheck mount-stress-purge mount-badinput)

# run_classic NAME DIR [MESON-TEST-ARGS]: the tests CLASSIC_TESTS selects, again on the
# classic path (skipped when the arguments select tests).
declare -a CLASSIC_TESTS=()
run_classic() {
	local name=$1 dir=$2 started=$SECONDS
	shift 2
	if [[ $# -gt 0 ]]; then
		summary+=("$name: skipped (arguments select tests)")
		return 0
	fi
	say "=== $name: meson test ${CLASSIC_TESTS[*]} with VOLATILEFS_PASSTHROUGH=off"
	rm -f "$dir/meson-logs/classic.json"
	if VOLATILEFS_PASSTHROUGH=off meson test -C "$dir" --print-errorlogs --logbase classic \
		"${CLASSIC_TESTS[@]}"; then
		summary+=("$name: passed in $((SECONDS - started))s: ${CLASSIC_TESTS[*]}")
	else
		summary+=("$name: TESTS FAILED in $((SECONDS - started))s: $(test_counts "$dir" classic)"
			"      full log: $dir/meson-logs/classic.txt")
		failed=1
	fi
}

main() {
	local here root
	here=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
	root=$(cd -- "$here/.." && pwd)
	cd -- "$root"
	[[ -f meson.build && -d src ]] || die "$root does not look like the volatilefs source tree"

	if [[ ! -c /dev/fuse ]]; then
		printf '%s: /dev/fuse is missing, so the mount tests cannot run here.\n' "$prog" >&2
		printf '%s: load the fuse module (modprobe fuse) or, in a container, pass the device\n' \
			"$prog" >&2
		printf '%s: through (docker run --device /dev/fuse --cap-add SYS_ADMIN ...), then try again.\n' \
			"$prog" >&2
		exit 1
	fi
	if [[ $(id -u) -ne 0 ]]; then
		say "note: not running as root; the mount tests need root (sudo $0)"
	fi

	install_missing "${BUILD_PKGS[@]}" "${RUN_PKGS[@]}" "${TEST_PKGS[@]}"

	# Nothing below may wait for input.
	exec </dev/null
	# ccache is installed for the cache-ccache test (which sets its own CCACHE_DIR and
	# clears this); the builds below compile without it, as before it was installed.
	export CCACHE_DISABLE=1

	run_build normal "$NORMAL_DIR" "$@" -- -Dtests=enabled -Dfiu=enabled -Db_sanitize=none
	CLASSIC_TESTS=(--suite mount)
	run_classic "classic path" "$NORMAL_DIR" "$@"

	if [[ ${VFS_TEST_SKIP_ASAN:-0} == 1 ]]; then
		summary+=("asan+ubsan: skipped (VFS_TEST_SKIP_ASAN=1)")
	else
		# Sanitized code runs slower and holds more memory: longer timeouts, a higher limit
		# for the ENOSPC test and a smaller fio file. This is the last build, so exporting
		# here affects nothing else.
		export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:quarantine_size_mb=8
		export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
		export VFS_FIO_SIZE=256M
		run_build asan+ubsan "$ASAN_DIR" --timeout-multiplier 3 "$@" -- \
			-Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false
		CLASSIC_TESTS=(--timeout-multiplier 3 "${CLASSIC_ASAN_TESTS[@]}")
		run_classic "asan+ubsan classic path" "$ASAN_DIR" "$@"
	fi

	# ThreadSanitizer: the unit suites that use threads and the tests that
	# drive the daemon from many threads and processes at once.  Not the RSS tests: TSan's
	# shadow memory counts in the daemon's RSS.  A race report goes to the
	# daemon's stderr, which with-mount.sh fails on.
	if [[ ${VFS_TEST_SKIP_TSAN:-0} == 1 || $# -gt 0 ]]; then
		summary+=("tsan: skipped")
	else
		export TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1
		# The notifier's parked replies under many reporters, with a smaller slow file.
		export VFS_REPORTERS_BIG_MIB=256
		# Not mount-concurrency any more: it requires that no write fail with
		# ENOSPC while volatile data exists, which depends on the daemon's
		# RSS; with the arena's UFFDIO_COPY fills the TSan daemon's RSS
		# outside the arena reached 253 MB of a 256M limit in 1 of 4-6 runs
		# (512M: the same once in 6).  The normal and ASan builds run it.
		run_build tsan "$TSAN_DIR" --timeout-multiplier 3 \
			unit-fs unit-vol unit-notify mount-libvol mount-reporters mount-passthrough -- \
			-Dtests=enabled -Db_sanitize=thread -Db_lundef=false
	fi

	# libFuzzer: the value parsers, the option parser and the volatile-range
	# maps against their model, 30 s each, and
	# every saved regression input (contrib/fuzz.sh builds with clang).
	if [[ ${VFS_TEST_SKIP_FUZZ:-0} == 1 || $# -gt 0 ]]; then
		summary+=("fuzz: skipped")
	elif FUZZ_SECONDS=${FUZZ_SECONDS:-30} FUZZ_FRESH=1 contrib/fuzz.sh fuzz_grammar fuzz_opts fuzz_volatile; then
		summary+=("fuzz: fuzz_grammar, fuzz_opts and fuzz_volatile, no crash, regressions pass")
	else
		summary+=("fuzz: FAILED (see build-fuzz/)")
		failed=1
	fi

	echo
	say "summary"
	printf '  %s\n' "${summary[@]}"
	if [[ $failed -ne 0 ]]; then
		say "FAILED"
		exit 1
	fi
	say "all tests passed"
}

# Sourcing the script (to test its functions) defines them without running anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
