#!/bin/bash
# pressure.sh DAEMON - volatile data goes first when the daemon's memory cgroup
# runs short, before anything is killed (SPEC section 10), on a real cgroup v1
# memory controller.
#
# Each case makes its own memory cgroup under /sys/fs/cgroup/memory with
# memory.limit_in_bytes 1536M, starts the daemon inside it (-o memory_limit=4G,
# far above, so only the cgroup can make it purge), writes from outside the
# cgroup a 64 MiB ordinary file and 1 GiB in 16 files of 64 MiB, then runs
# memhog (a plain program: malloc and touch, nothing else) inside the cgroup,
# asking for 900 MiB.  Together that is 400 MiB over the limit.
#   1. volatile: the 16 files are marked volatile.  memhog must complete,
#      memory.oom_control must count no OOM kill, the daemon must be alive, the
#      ordinary file intact byte for byte, and purged_bytes_total and
#      pressure_bytes_total must show that some but not all of the volatile
#      gigabyte was purged; pressure_sources names cgroup1.
#   2. nothing volatile: the same files, not marked.  It must end the way it
#      would without volatilefs: the OOM killer acts (oom_kill >= 1).
#   3. pressure=off: marked as in 1, but the daemon does not watch the cgroup:
#      the OOM killer acts, as before SPEC section 10.
# Every case removes its cgroup and unmounts, on failure too.  Needs root and
# the v1 memory controller mounted at /sys/fs/cgroup/memory (this machine and
# CI have both); elsewhere it is skipped (exit 77) saying why.
# memhog's path comes in $MEMHOG.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
daemon=$(daemon_path "$1")
memhog=${MEMHOG:?MEMHOG must name the memhog program}
cgroot=/sys/fs/cgroup/memory
mib=$((1024 * 1024))

if [[ $(id -u) -ne 0 ]]; then
	echo "pressure: skipped: needs root to make memory cgroups" >&2
	exit 77
fi
if [[ ! -w $cgroot/cgroup.procs || ! -e $cgroot/memory.limit_in_bytes ]]; then
	echo "pressure: skipped: no v1 memory controller at $cgroot" >&2
	exit 77
fi
need getfattr attr
need setfattr attr
need cmp diffutils

work=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-pressure.XXXXXX")
cg= mnt= pid=

# Kill everything left in the cgroup, unmount, remove the cgroup.
teardown()
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
			for p in $(cat "$cg/cgroup.procs"); do
				kill -KILL "$p" 2> /dev/null || true
			done
			sleep 0.1
		done
		rmdir "$cg" 2> /dev/null || echo "pressure: could not remove $cg" >&2
	fi
	if [[ -n $pid ]]; then
		wait "$pid" 2> /dev/null || true
	fi
	cg= mnt= pid=
	return 0
}
trap 'teardown; rm -rf "$work"' EXIT

# in_cgroup COMMAND...: run COMMAND as a member of the case's cgroup.
in_cgroup()
{
	# shellcheck disable=SC2016 # for the inner sh
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$cg" "$@"
}

stat_of() { getfattr --only-values -n user.volatile.stats "$mnt" 2> /dev/null | sed -n "s/^$1=//p"; }
oom_kills() { awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control"; }

# setup NAME MARK OPTIONS: cgroup, daemon in it, files written from out here.
setup()
{
	local name=$1 mark=$2 opts=$3 i
	cg=$cgroot/volatilefs-pressure-$$-$name
	mkdir "$cg"
	echo $((1536 * mib)) > "$cg/memory.limit_in_bytes"
	mnt=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-pressure-mnt.XXXXXX")
	in_cgroup "$daemon" -f -o "memory_limit=4G$opts" "$mnt" > "$work/$name.log" 2>&1 &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		is_mounted "$mnt" && break
		kill -0 "$pid" 2> /dev/null || fail "$name: daemon exited: $(cat "$work/$name.log")"
		sleep 0.05
	done
	is_mounted "$mnt" || fail "$name: $mnt not mounted after 10 s"
	cp "$work/ordinary" "$mnt/ordinary"
	for ((i = 0; i < 16; i++)); do
		dd if="$work/block" of="$mnt/v$i" bs=1M count=64 status=none
		if [[ $mark == yes ]]; then
			setfattr -n user.volatile.mark -v all "$mnt/v$i"
		fi
	done
	# Nothing in the kernel's page cache of the mount is charged to the cgroup:
	# the writer was out here.
	[[ $(oom_kills) == 0 ]] || fail "$name: OOM kill while setting up"
}

# The reference data: random, so a lost or shifted page cannot go unseen.
head -c $((64 * mib)) /dev/urandom > "$work/ordinary"
head -c $((64 * mib)) /dev/urandom > "$work/block"

# --- 1. volatile data: it is purged and nobody is killed ---------------------
setup volatile yes ""
eq "volatile: 1 GiB of volatile data held" "$(stat_of volatile_bytes)" $((1024 * mib))
eq "volatile: pressure sources include the v1 cgroup" \
	"$(stat_of pressure_sources | grep -o cgroup1)" cgroup1
status=0
ms=$(in_cgroup "$memhog" 900) || status=$?
eq "volatile: memhog 900 completed next to the daemon (exit status)" "$status" 0
ok "volatile: memhog took $ms ms"
eq "volatile: memory.oom_control counts no OOM kill" "$(oom_kills)" 0
kill -0 "$pid" 2> /dev/null || fail "volatile: the daemon died"
ok "volatile: the daemon is alive"
cmp "$work/ordinary" "$mnt/ordinary" || fail "volatile: the ordinary file changed"
ok "volatile: the 64 MiB ordinary file is intact byte for byte"
purged=$(stat_of purged_bytes_total)
pbytes=$(stat_of pressure_bytes_total)
((purged > 0)) || fail "volatile: purged_bytes_total=$purged: nothing was purged"
((purged < 1024 * mib)) || fail "volatile: purged_bytes_total=$purged: all of it went"
ok "volatile: purged_bytes_total=$purged: some, not all, of the volatile GiB"
((pbytes > 0 && pbytes <= purged)) ||
	fail "volatile: pressure_bytes_total=$pbytes against purged_bytes_total=$purged"
ok "volatile: pressure_bytes_total=$pbytes, pressure_purges_total=$(stat_of pressure_purges_total)"
# What was not purged still reads back.
kept=0
for ((i = 0; i < 16; i++)); do
	if [[ -z $(getfattr --only-values -n user.volatile.purged "$mnt/v$i") ]]; then
		cmp "$work/block" "$mnt/v$i" || fail "volatile: unpurged v$i changed"
		kept=$((kept + 1))
	fi
done
((kept > 0)) || fail "volatile: every file reports a purge"
ok "volatile: $kept unpurged files read back intact"
teardown

# --- 2. nothing volatile: the OOM killer acts, as without volatilefs ----------
setup nothing no ""
eq "nothing: no volatile data held" "$(stat_of volatile_bytes)" 0
in_cgroup "$memhog" 900 > /dev/null 2>&1 || true
kills=$(oom_kills)
((kills >= 1)) || fail "nothing: oom_kill=$kills: the OOM killer did not act"
ok "nothing: with no volatile data the OOM killer acts (oom_kill=$kills)"
teardown

# --- 3. pressure=off: today's behaviour, the OOM killer acts ------------------
setup off yes ",pressure=off"
eq "off: pressure_sources" "$(stat_of pressure_sources)" none
in_cgroup "$memhog" 900 > /dev/null 2>&1 || true
kills=$(oom_kills)
((kills >= 1)) || fail "off: oom_kill=$kills: the OOM killer did not act"
ok "off: with pressure=off the OOM killer acts although 1 GiB was volatile (oom_kill=$kills)"
teardown
