#!/bin/bash
# with-mount.sh - run one command against a freshly mounted volatilefs.
#
#   with-mount.sh DAEMON [DAEMON-OPTION...] -- COMMAND [ARG...]
#
# The contract every mount test relies on (libfuse's own, see STYLE.md):
#   1. make a mountpoint with mktemp -d;
#   2. start `DAEMON -f DAEMON-OPTION... MNT` in the background, its stdout and
#      stderr captured to a file;
#   3. poll /proc/mounts until MNT appears (fail at once if the daemon died,
#      give up after $VFS_MOUNT_TIMEOUT seconds, default 10);
#   4. run COMMAND with VFS_TEST_DIR=MNT and VFS_DAEMON_PID=PID exported;
#   5. unmount with `fusermount3 -u`, wait for the daemon, require status 0;
#   6. fail if the daemon printed anything (unless -d was given: debug output
#      is expected then), and show what it printed.
# An EXIT trap unmounts lazily (fusermount3 -uz, then umount -l) and kills the
# daemon whenever we leave any other way, so no mount is left behind.
#
# Exit status: COMMAND's when it failed, else 1 when the harness found a
# problem (each reported on stderr as "with-mount: FAIL: ..."), else 0.
# 130/143 after SIGINT/SIGTERM.
#
# Example session:
#   $ tests/mount/with-mount.sh build/src/daemon/volatilefs -o memory_limit=64M \
#         -- sh -c 'echo hi > "$VFS_TEST_DIR/f" && cat "$VFS_TEST_DIR/f"'
#   with-mount: mounted /tmp/volatilefs-test.Xa1b2C (daemon pid 4242)
#   hi
#   with-mount: command exited 0; daemon exited 0 after fusermount3 -u

set -euo pipefail

prog=with-mount

usage()
{
	echo "usage: $0 DAEMON [DAEMON-OPTION...] -- COMMAND [ARG...]" >&2
	exit 2
}

say() { printf '%s: %s\n' "$prog" "$*" >&2; }

[[ $# -ge 3 ]] || usage
daemon=$1
shift
daemon_opts=()
while [[ $# -gt 0 && $1 != -- ]]; do
	daemon_opts+=("$1")
	shift
done
[[ $# -ge 2 && $1 == -- ]] || usage
shift

# A relative daemon path stays valid whatever directory the command uses.
if [[ $daemon == */* && $daemon != /* ]]; then
	daemon=$PWD/$daemon
fi

mount_timeout=${VFS_MOUNT_TIMEOUT:-10}
exit_timeout=${VFS_EXIT_TIMEOUT:-10}

debug=0
for o in "${daemon_opts[@]}"; do
	case $o in
	-d | *debug*) debug=1 ;;
	esac
done

for tool in fusermount3 mktemp awk; do
	if ! command -v "$tool" > /dev/null; then
		say "FAIL: $tool not found (Debian package fuse3 / coreutils)"
		exit 1
	fi
done
if [[ ! -c /dev/fuse ]]; then
	say "FAIL: /dev/fuse is missing: FUSE mounts are impossible here"
	exit 1
fi

mnt=
log=
pid=
cmd_pid=
state=setup # setup -> mounted -> unmounted -> finished

# /proc/mounts escapes space, tab, newline and backslash in octal.
mnt_escaped()
{
	local s=$1
	s=${s//\\/\\134}
	s=${s// /\\040}
	s=${s//$'\t'/\\011}
	s=${s//$'\n'/\\012}
	printf '%s' "$s"
}

is_mounted()
{
	# Through the environment: awk -v would undo the escapes.
	M=$(mnt_escaped "$1") awk '$2 == ENVIRON["M"] { found = 1 } END { exit !found }' /proc/mounts
}

# True while the daemon process exists and is not a zombie.
daemon_alive()
{
	local st
	[[ -n $pid ]] || return 1
	st=$(awk '/^State:/ { print $2 }' "/proc/$pid/status" 2> /dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

# kill_tree PID: SIGTERM to PID and all its descendants, leaves first.
# shellcheck disable=SC2317 # only ever called from cleanup
kill_tree()
{
	local child
	for child in $(pgrep -P "$1" 2> /dev/null); do
		kill_tree "$child"
	done
	kill -TERM "$1" 2> /dev/null
}

show_log()
{
	if [[ -s $log ]]; then
		say "daemon output ($log):"
		sed 's/^/    | /' "$log" >&2
	fi
}

# shellcheck disable=SC2317 # only ever called by the EXIT trap
cleanup()
{
	local status=$? i
	trap - EXIT INT TERM HUP
	set +e
	if [[ $state != finished ]]; then
		say "cleaning up after a failure or interrupt (state: $state)"
		# Take the command out first so it stops touching the mount.
		if [[ -n $cmd_pid ]] && kill -0 "$cmd_pid" 2> /dev/null; then
			kill_tree "$cmd_pid"
		fi
		if [[ -n $mnt ]] && is_mounted "$mnt"; then
			fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null
		fi
		if daemon_alive; then
			kill -TERM "$pid" 2> /dev/null
			for ((i = 0; i < 30; i++)); do
				daemon_alive || break
				sleep 0.1
			done
			if daemon_alive; then
				say "daemon $pid ignored SIGTERM: SIGKILL"
				kill -KILL "$pid" 2> /dev/null
			fi
		fi
		# Killed with SIGKILL, the daemon leaves a dead mount behind until its
		# auto_unmount watcher (fusermount3) takes it away, or for good with
		# auto_unmount=off: take it away now either way.
		if [[ -n $mnt ]] && is_mounted "$mnt"; then
			fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null
		fi
		if [[ -n $mnt ]] && is_mounted "$mnt"; then
			say "FAIL: could not unmount $mnt: remove it by hand (umount -l)"
		fi
		[[ -n $log ]] && show_log
		[[ $status -eq 0 ]] && status=1
	fi
	[[ -n $mnt ]] && rmdir "$mnt" 2> /dev/null
	[[ -n $log ]] && rm -f "$log"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

mnt=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-test.XXXXXX")
mnt=$(realpath "$mnt")
log=$(mktemp "${TMPDIR:-/tmp}/volatilefs-test.log.XXXXXX")

"$daemon" -f "${daemon_opts[@]}" "$mnt" > "$log" 2>&1 < /dev/null &
pid=$!
cmdline="$daemon -f ${daemon_opts[*]:+${daemon_opts[*]} }$mnt"

deadline=$((SECONDS + mount_timeout))
until is_mounted "$mnt"; do
	if ! daemon_alive; then
		dstatus=0
		wait "$pid" || dstatus=$?
		pid=
		say "FAIL: daemon exited with status $dstatus before mounting: $cmdline"
		exit 1
	fi
	if ((SECONDS > deadline)); then
		say "FAIL: $mnt not mounted after ${mount_timeout}s: $cmdline"
		exit 1
	fi
	sleep 0.05
done
state=mounted
say "mounted $mnt (daemon pid $pid)"

export VFS_TEST_DIR=$mnt VFS_DAEMON_PID=$pid

# In the background, so that a signal reaches our trap at once even when the
# command hangs on the mount; stdin is passed through explicitly.
set +e
"$@" <&0 &
cmd_pid=$!
wait "$cmd_pid"
cmd_status=$?
set -e
cmd_pid=
harness_fail=0

if [[ $cmd_status -ne 0 ]]; then
	say "FAIL: command exited with status $cmd_status: $*"
fi

died=0
if ! daemon_alive; then
	died=1
	harness_fail=1
fi

# The command may have left a process with a file open on the mount for a
# moment; retry EBUSY for a while before giving up.
umount_err=
for ((i = 0; i < 50; i++)); do
	if umount_err=$(fusermount3 -u "$mnt" 2>&1); then
		break
	fi
	is_mounted "$mnt" || break
	sleep 0.1
done
if is_mounted "$mnt"; then
	say "FAIL: fusermount3 -u $mnt failed: $umount_err"
	exit 1
fi
state=unmounted

deadline=$((SECONDS + exit_timeout))
while daemon_alive && ((SECONDS < deadline)); do
	sleep 0.05
done
if daemon_alive; then
	say "FAIL: daemon $pid still running ${exit_timeout}s after fusermount3 -u"
	exit 1
fi
dstatus=0
wait "$pid" || dstatus=$?
pid=
if [[ $died -eq 1 ]]; then
	say "FAIL: daemon died while the command ran, exit status $dstatus"
elif [[ $dstatus -ne 0 ]]; then
	say "FAIL: daemon exited with status $dstatus after fusermount3 -u (want 0)"
	harness_fail=1
fi

if [[ -s $log ]]; then
	if [[ $debug -eq 1 ]]; then
		say "daemon debug output: $(wc -l < "$log") lines (not checked)"
	else
		say "FAIL: daemon wrote unexpected output:"
		harness_fail=1
	fi
	show_log
fi

state=finished
if [[ $cmd_status -ne 0 ]]; then
	exit "$cmd_status"
fi
if [[ $harness_fail -ne 0 ]]; then
	exit 1
fi
say "command exited 0; daemon exited 0 after fusermount3 -u"
exit 0
