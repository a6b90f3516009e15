# pressurelib.sh - what pressure.sh and pressure-churn.sh share: a v1 memory
# cgroup of their own with a volatilefs daemon inside it; sourced after lib.sh,
# never run.
#
# pressure_init: skips the test (exit 77, saying why) without root or without
# the v1 memory controller at /sys/fs/cgroup/memory; makes $work and the EXIT
# trap that tears everything down (pressure_teardown, then rm -rf $work and
# whatever paths are in $pressure_cleanup), on failure too.
# pressure_setup NAME MARK OPTIONS NFILES: a cgroup of 1536M (in $cg), the
# daemon inside it (-o memory_limit=4G far above, so only the cgroup can make
# it purge; pid in $pid), mounted at $mnt; from out here (nothing of it
# charged to the cgroup) a 64 MiB ordinary file $work/ordinary copied in and
# NFILES of 64 MiB, v0..., copies of $work/block, marked volatile (`all`)
# when MARK is yes.  Both reference files are random, made by pressure_init.
# pressure_teardown: unmount, kill everything left in the cgroup, remove it.
# check_files NAME NFILES: the ordinary file and every unpurged v* intact.
# shellcheck shell=bash
# shellcheck disable=SC2154 # vfs_test (lib.sh) and daemon (the test) come from the sourcing script

cgroot=/sys/fs/cgroup/memory
mib=$((1024 * 1024))
cg='' mnt='' pid='' work='' daemon_pids=''
pressure_cleanup=()

pressure_init()
{
	if [[ $(id -u) -ne 0 ]]; then
		echo "$vfs_test: skipped: needs root to make memory cgroups" >&2
		exit 77
	fi
	if [[ ! -w $cgroot/cgroup.procs || ! -e $cgroot/memory.limit_in_bytes ]]; then
		echo "$vfs_test: skipped: no v1 memory controller at $cgroot" >&2
		exit 77
	fi
	need getfattr attr
	need setfattr attr
	need cmp diffutils
	work=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-$vfs_test.XXXXXX")
	trap 'pressure_teardown; rm -rf "$work" "${pressure_cleanup[@]}"' EXIT
	# The reference data: random, so a lost or shifted page cannot go unseen.
	head -c $((64 * mib)) /dev/urandom > "$work/ordinary"
	head -c $((64 * mib)) /dev/urandom > "$work/block"
}

# Kill everything left in the cgroup, unmount, remove the cgroup.
pressure_teardown()
{
	local i p
	if [[ -n $pid ]] && kill -0 "$pid" 2> /dev/null; then
		fusermount3 -u "$mnt" 2> /dev/null || true
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2> /dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2> /dev/null || true
	fi
	if [[ -n $mnt ]]; then
		if is_mounted "$mnt"; then
			fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null || true
		fi
		rmdir "$mnt" 2> /dev/null || true
	fi
	if [[ -n $cg && -d $cg ]]; then
		for ((i = 0; i < 50; i++)); do
			[[ -s $cg/cgroup.procs ]] || break
			while read -r p; do
				kill -KILL "$p" 2> /dev/null || true
			done < "$cg/cgroup.procs"
			sleep 0.1
		done
		rmdir "$cg" 2> /dev/null || echo "$vfs_test: could not remove $cg" >&2
	fi
	if [[ -n $pid ]]; then
		wait "$pid" 2> /dev/null || true
	fi
	cg='' mnt='' pid=''
	return 0
}

# in_cgroup COMMAND...: run COMMAND as a member of the case's cgroup.
in_cgroup()
{
	# shellcheck disable=SC2016 # for the inner sh
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
}

oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control"; }

pressure_setup()
{
	local name=$1 mark=$2 opts=$3 nfiles=$4 i
	cg=$cgroot/volatilefs-$vfs_test-$$-$name
	mkdir "$cg"
	echo $((1536 * mib)) > "$cg/memory.limit_in_bytes"
	mnt=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-$vfs_test-mnt.XXXXXX")
	# shellcheck disable=SC2034 # read by stat_of (lib.sh)
	VFS_TEST_DIR=$mnt
	in_cgroup "$daemon" -f -o "memory_limit=4G$opts" "$mnt" > "$work/$name.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		is_mounted "$mnt" && break
		kill -0 "$pid" 2> /dev/null || fail "$name: daemon exited: $(cat "$work/$name.log")"
		sleep 0.05
	done
	is_mounted "$mnt" || fail "$name: $mnt not mounted after 10 s"
	# On the passthrough path (DESIGN 11) file data is pages of the daemon's
	# private tmpfs, charged as tmpfs's are to the cgroup of the process that
	# wrote them (the daemon's, for writes that go through it): written from
	# inside the cgroup, all of it is the cgroup's, as the classic path's
	# arena is.  On the classic path the writer stays out here.
	writer=()
	[[ $(stat_of passthrough) != on ]] || writer=(in_cgroup)
	"${writer[@]}" cp "$work/ordinary" "$mnt/ordinary"
	for ((i = 0; i < nfiles; i++)); do
		"${writer[@]}" dd if="$work/block" of="$mnt/v$i" bs=1M count=64 status=none
		if [[ $mark == yes ]]; then
			setfattr -n user.volatile.mark -v all "$mnt/v$i"
		fi
	done
	# Nothing in the kernel's page cache of the mount is charged to the cgroup:
	# the classic path's writer was out here, and passthrough keeps no FUSE
	# page cache.
	[[ $(oom_kills) == 0 ]] || fail "$name: OOM kill while setting up"
	# Only the daemon is in the cgroup now ($pid may be a subshell of ours).
	daemon_pids=$(tr '\n' ' ' < "$cg/cgroup.procs")
}

# daemon_alive: the daemon's process is still there.
daemon_alive()
{
	local p
	for p in $daemon_pids; do
		kill -0 "$p" 2> /dev/null || return 1
	done
	[[ -n $daemon_pids ]]
}

# check_files NAME NFILES: the ordinary file is intact, and so is every file
# v0... that reports no purge; sets kept to how many of those there were.
kept=0
check_files()
{
	local name=$1 nfiles=$2 i
	kept=0
	cmp "$work/ordinary" "$mnt/ordinary" > /dev/null ||
		fail "$name: the ordinary file changed"
	for ((i = 0; i < nfiles; i++)); do
		if [[ -z $(getfattr --only-values -n user.volatile.purged "$mnt/v$i") ]]; then
			cmp "$work/block" "$mnt/v$i" > /dev/null || fail "$name: unpurged v$i changed"
			kept=$((kept + 1))
		fi
	done
}
