# lib.sh - helpers shared by the mount tests; sourced, never run.
#
# Each test is `TEST.sh DAEMON`: run that way, it re-executes itself under
# with-mount.sh (vfs_run_mounted) with `--mounted` as its first argument, and
# the checks run with the mount in $VFS_TEST_DIR. Every check prints one line,
# "ok - WHAT" on stdout or "FAIL - WHAT: WHY" on stderr, and the first failure
# ends the test with status 1.
# shellcheck shell=bash

vfs_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
vfs_test=$(basename "${BASH_SOURCE[1]}" .sh)

ok() { printf '%s: ok - %s\n' "$vfs_test" "$*"; }

fail()
{
	printf '%s: FAIL - %s\n' "$vfs_test" "$*" >&2
	exit 1
}

# A command that fails outside a condition ends the test (set -e) with a
# line that names it, instead of the tool's message alone.
vfs_on_err()
{
	fail "line $2: '$3' exited with status $1"
}
trap 'vfs_on_err $? $LINENO "$BASH_COMMAND"' ERR

# need TOOL PACKAGE: fail loudly when a tool the test drives is missing.
need()
{
	command -v "$1" > /dev/null || fail "$1 not installed (Debian package $2)"
}

# vfs_run_mounted SCRIPT DAEMON [DAEMON-OPTION...] [-- ARG...]: run
# `SCRIPT --mounted ARG...` inside with-mount.sh. Does not return.
vfs_run_mounted()
{
	local script=$1 daemon=$2 opts=()
	shift 2
	while [[ $# -gt 0 && $1 != -- ]]; do
		opts+=("$1")
		shift
	done
	if [[ $# -gt 0 ]]; then shift; fi
	exec bash "$vfs_dir/with-mount.sh" "$daemon" "${opts[@]}" -- \
		bash "$script" --mounted "$@"
}

# vfs_usage_check "$@": the standalone command line is exactly `TEST.sh DAEMON`.
vfs_usage_check()
{
	if [[ $# -ne 1 || $1 == -* ]]; then
		echo "usage: $0 DAEMON   (path of the volatilefs binary)" >&2
		exit 2
	fi
	if [[ $1 == */* && ! -x $1 ]]; then
		fail "daemon $1 is not an executable file"
	fi
}

# expect_fail WHAT MESSAGE COMMAND...: COMMAND must fail and its stderr must
# contain MESSAGE (e.g. "No such attribute").
expect_fail()
{
	local what=$1 msg=$2 err status=0
	shift 2
	err=$("$@" 2>&1 > /dev/null) || status=$?
	if [[ $status -eq 0 ]]; then
		fail "$what: '$*' succeeded, want failure with '$msg'"
	fi
	if [[ $err != *"$msg"* ]]; then
		fail "$what: '$*' failed (status $status) with '$err', want '$msg'"
	fi
	ok "$what"
}

# short STRING: STRING cut to 80 characters, for messages.
short()
{
	if ((${#1} > 80)); then
		printf '%s... (%d chars)' "${1:0:72}" "${#1}"
	else
		printf '%s' "$1"
	fi
}

# vis STRING: newlines and tabs shown as \n and \t.
vis()
{
	local s=${1//$'\n'/\\n}
	printf '%s' "${s//$'\t'/\\t}"
}

# eq WHAT GOT WANT
eq()
{
	if [[ $2 != "$3" ]]; then
		fail "$1: got '$(short "$2")', want '$(short "$3")'"
	fi
	ok "$1: $(short "$3")"
}

# daemon_rss_kib: VmRSS of the daemon under test, in KiB.
daemon_rss_kib()
{
	local kib
	kib=$(awk '/^VmRSS:/ { print $2 }' "/proc/$VFS_DAEMON_PID/status") ||
		fail "cannot read /proc/$VFS_DAEMON_PID/status: daemon gone?"
	[[ -n $kib ]] || fail "no VmRSS in /proc/$VFS_DAEMON_PID/status"
	echo "$kib"
}

# mount_answers: the daemon is alive and the mount serves a stat, a write and
# a read within 10 seconds each.
mount_answers()
{
	local f=$VFS_TEST_DIR/.alive.$$ got
	kill -0 "$VFS_DAEMON_PID" 2> /dev/null || fail "daemon $VFS_DAEMON_PID is gone"
	timeout 10 stat "$VFS_TEST_DIR" > /dev/null || fail "stat of the mount root failed or hung"
	# shellcheck disable=SC2016 # $1 is for the inner sh
	timeout 10 sh -c 'echo alive > "$1"' sh "$f" || fail "write to the mount failed or hung"
	got=$(timeout 10 cat "$f") || fail "read from the mount failed or hung"
	[[ $got == alive ]] || fail "read back '$got' from $f, want 'alive'"
	rm -f "$f"
	ok "daemon $VFS_DAEMON_PID alive and mount answers"
}

# daemon_path DAEMON: DAEMON as an absolute path (a bare name is looked up in PATH),
# valid whatever directory the test moves to.
daemon_path()
{
	local d=$1
	if [[ $d != */* ]]; then
		d=$(command -v "$d") || fail "daemon $1 not found"
	elif [[ $d != /* ]]; then
		d=$PWD/$d
	fi
	printf '%s\n' "$d"
}

# is_mounted DIR: DIR is a mount point now (/proc/mounts escapes space, tab,
# newline and backslash in octal; matched through the environment, since awk -v
# would undo the escapes).
is_mounted()
{
	local m=$1
	m=${m//\\/\\134}
	m=${m// /\\040}
	m=${m//$'\t'/\\011}
	m=${m//$'\n'/\\012}
	M=$m awk '$2 == ENVIRON["M"] { found = 1 } END { exit !found }' /proc/mounts
}

# pid_running PID: PID is a process that has not exited (kill -0 also succeeds
# on a zombie, which has).
pid_running()
{
	local st
	st=$(awk '/^State:/ { print $2 }' "/proc/$1/status" 2> /dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

# start_daemon DAEMON LOG [OPTION...]: mount by hand, as with-mount.sh does:
# `DAEMON -f OPTION... DIR` on a new directory DIR, in the background, its
# output in LOG.  Sets hmnt to DIR and hpid to the daemon's pid (both before
# waiting, so that a test's cleanup finds them) and returns once DIR is
# mounted; fails the test if the daemon exits first or 10 s pass.
start_daemon()
{
	local daemon=$1 log=$2 deadline st
	shift 2
	hmnt=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-test.XXXXXX")
	"$daemon" -f "$@" "$hmnt" > "$log" 2>&1 < /dev/null &
	hpid=$!
	deadline=$((SECONDS + 10))
	until is_mounted "$hmnt"; do
		if ! pid_running "$hpid"; then
			st=0
			wait "$hpid" || st=$?
			hpid=
			fail "daemon${*:+ $*} exited with status $st before mounting: $(cat "$log")"
		fi
		((SECONDS < deadline)) || fail "daemon${*:+ $*}: $hmnt not mounted after 10 s"
		sleep 0.05
	done
}

# end_daemon: for a test's cleanup, after start_daemon: unmount hmnt (lazily),
# stop hpid (SIGTERM, and SIGKILL if it still runs 3 s later), unmount again in
# case the daemon went without unmounting, and remove the directory.  Prints
# nothing and always succeeds.
end_daemon()
{
	local i
	if [[ -n $hmnt ]] && is_mounted "$hmnt"; then
		fusermount3 -uz "$hmnt" 2> /dev/null || umount -l "$hmnt" 2> /dev/null
	fi
	if [[ -n $hpid ]] && pid_running "$hpid"; then
		kill -TERM "$hpid" 2> /dev/null
		for ((i = 0; i < 30; i++)); do
			pid_running "$hpid" || break
			sleep 0.1
		done
		kill -KILL "$hpid" 2> /dev/null
		wait "$hpid" 2> /dev/null
	fi
	if [[ -n $hmnt ]] && is_mounted "$hmnt"; then
		fusermount3 -uz "$hmnt" 2> /dev/null || umount -l "$hmnt" 2> /dev/null
	fi
	[[ -z $hmnt ]] || rmdir "$hmnt" 2> /dev/null || true
}

# stat_of KEY [DIR]: KEY's value in user.volatile.stats of the mount root DIR
# ($VFS_TEST_DIR by default); empty when there is no such key.  A read that
# fails, or hangs for 10 s, prints getfattr's message on stderr and gives the
# pipeline's failure.
stat_of()
{
	timeout 10 getfattr --absolute-names --only-values -n user.volatile.stats "${2:-$VFS_TEST_DIR}" |
		awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2) }'
}

# stat_num KEY [DIR]: as stat_of, but a value that is not a number (or no
# value) is an error: a message with all the stats on stderr, and status 1.
stat_num()
{
	local all v
	all=$(timeout 10 getfattr --absolute-names --only-values -n user.volatile.stats \
		"${2:-$VFS_TEST_DIR}") || return 1
	v=$(awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2) }' <<< "$all")
	[[ $v =~ ^[0-9]+$ ]] || {
		echo "no numeric $1 in user.volatile.stats: $(vis "$all")" >&2
		return 1
	}
	echo "$v"
}
