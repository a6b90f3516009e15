#!/bin/bash
# faults.sh DAEMON - faults around the daemon: clients killed in the middle of
# their calls, the daemon stopped under load, a tiny memory limit, and the
# kernel connection aborted (DESIGN sections 3 and 9).
#
# Each scenario mounts the daemon by hand (as with-mount.sh does) and checks:
#  1. clients killed with SIGKILL: dd writing 4 GiB (buffered, O_DIRECT, and
#     into a volatile file while purges run) after 0.2 s; fio's mmap engine
#     faulting pages of a file that a loop keeps marking and purging; loops of
#     setfattr/getfattr on the user.volatile names plus stress-ng's xattr
#     stressor; a create/write/unlink loop.  After each kill the daemon is
#     alive and answers (stat, write and read back a file, stats readable),
#     and once everything is removed, the files and data_bytes counters come
#     back to where they were (nothing leaked by the interrupted calls);
#  2. `fusermount3 -u` while a load keeps files open fails with EBUSY and the
#     mount keeps working; with the load killed, it succeeds, and the daemon
#     exits 0, silent;
#  3. 80 clients asking for purge reports (more than the daemon's 64 worker
#     threads) while a file's mapping is dirty and the file is purged in a
#     loop: the mount keeps answering for 8 s (no deadlock);
#  4. SIGTERM while a writer loop, writes through a mapping, purges, purge
#     reports and reads run: exit status 0 within 10 s, the mount gone,
#     nothing printed (five times);
#  5. -o memory_limit=4M: volatile writes far beyond the limit succeed by
#     purging; a non-volatile fill ends in ENOSPC, and what was stored before
#     (the fill's first bytes, and an older non-volatile file) reads back
#     intact; the daemon stays alive and exits 0 on unmount.  When the
#     daemon's own RSS, once warm, leaves less than 3 MiB under 4 MiB (it
#     does on some machines, and in sanitizer builds), the limit is raised at
#     run time to that RSS + 4 MiB, and the test says so;
#  6. the connection aborted through /sys/fs/fuse/connections/N/abort (N from
#     the mount's device number), under the load of 4. (writes, a mapping,
#     purges, reports, reads, opens): the daemon exits within 10 s
#     with status 0 or 1 (no signal, no core), without sanitizer reports, and
#     the dead mount is taken down (three times; needs root; fusectl is
#     mounted if needed and unmounted again).
# VFS_FAULTS="kills busy reporters term tiny abort" (the default) picks and
# orders the scenarios.
# An EXIT trap kills every load this test started (the whole process tree of
# each), unmounts lazily and stops the daemon (aborting its connection if it
# hangs, as root), so no mount is left behind.
#
#   $ tests/mount/faults.sh build/src/daemon/volatilefs
#   faults: ok - dd (buffered) killed in a 4 GiB write: daemon 1234 alive, mount answers, stats readable
#   ...

# The loads are bash -c scripts in single quotes: they expand in there.
# shellcheck disable=SC2016
# errtrace: lib.sh's ERR trap names the failing line inside the scenarios too.
set -Eeuo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
need fusermount3 fuse3
need setfattr attr
need getfattr attr
need fio fio
need stress-ng stress-ng
need setsid util-linux
daemon=$(daemon_path "$1")

hmnt=
hpid=
hconn=
loads=()
fusectl_mounted=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-faults.XXXXXX")
hlog=$tmp/daemon.log

# descendants PID...: the processes below the PIDs, at any depth, from one
# snapshot of the process table (one ps, not a pgrep per process: with 80
# loads on a busy machine that made stopping them take minutes).
descendants()
{
	ps -e -o pid= -o ppid= | awk -v roots="$*" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) want[r[i]] = 1 }
		{ parent[$1] = $2 }
		END {
			do {
				grew = 0
				for (p in parent)
					if (!(p in want) && (parent[p] in want)) { want[p] = 1; grew = 1; print p }
			} while (grew)
		}'
}

# kill_group [nowait] PID...: SIGKILL to the loads PID... lead and everything
# below them, then reap them (unless nowait).  Loads run in their own process
# group (setsid), but some tools make sessions of their own (fio's job
# processes do), so the trees are stopped first (a stopped process forks no
# more), until no new process turns up, then killed.
kill_group()
{
	local wait=1 p tree=() n=-1
	if [[ ${1:-} == nowait ]]; then
		wait=0
		shift
	fi
	(($# > 0)) || return 0
	for p in "$@"; do kill -STOP -- "-$p" 2> /dev/null || true; done
	while ((${#tree[@]} != n)); do
		n=${#tree[@]}
		mapfile -t tree < <(descendants "$@")
		((${#tree[@]} == 0)) || kill -STOP "${tree[@]}" 2> /dev/null || true
	done
	for p in "$@"; do kill -KILL -- "-$p" 2> /dev/null || true; done
	kill -KILL "$@" "${tree[@]}" 2> /dev/null || true
	((wait == 0)) || for p in "$@" "${tree[@]}"; do gone "$p"; done
}

# gone PID: wait up to 5 s for a (disowned) load to be gone.
gone()
{
	local i
	for ((i = 0; i < 50; i++)); do
		kill -0 "$1" 2> /dev/null || return 0
		sleep 0.1
	done
	return 1
}

daemon_alive()
{
	[[ -n $hpid ]] && pid_running "$hpid"
}

unmount_lazy()
{
	if [[ -n $hmnt ]] && is_mounted "$hmnt"; then
		fusermount3 -uz "$hmnt" 2> /dev/null || umount -l "$hmnt" 2> /dev/null || true
	fi
}

cleanup()
{
	local status=$? p i
	trap - ERR EXIT
	set +e
	# Not reaped yet: a load stuck on a hung daemon dies only once the
	# daemon is dealt with.
	kill_group nowait "${loads[@]}"
	unmount_lazy
	if daemon_alive; then
		kill -TERM "$hpid"
		for ((i = 0; i < 20; i++)); do
			daemon_alive || break
			sleep 0.1
		done
	fi
	# A daemon hung on its connection (a thread in D state ignores even
	# SIGKILL) is freed only by aborting the connection.
	if daemon_alive && [[ -n $hconn && -w $hconn/abort ]]; then
		echo "$vfs_test: daemon $hpid still runs: aborting its connection ($hconn)" >&2
		echo 1 > "$hconn/abort"
		sleep 0.5
	fi
	if daemon_alive; then
		kill -KILL "$hpid" 2> /dev/null
		sleep 0.5
	fi
	unmount_lazy
	for p in "${loads[@]}"; do
		gone "$p" || echo "$vfs_test: load $p does not die" >&2
	done
	if [[ -n $hmnt ]] && is_mounted "$hmnt"; then
		echo "$vfs_test: could not unmount $hmnt: remove it by hand (umount -l)" >&2
		status=1
	fi
	[[ -n $hmnt ]] && rmdir "$hmnt" 2> /dev/null
	if [[ $fusectl_mounted -eq 1 ]]; then
		umount /sys/fs/fuse/connections 2> /dev/null
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_daemon_with_conn [OPTION...]: start_daemon, then find the mount's
# connection in the fuse control filesystem (hconn); VFS_TEST_DIR and
# VFS_DAEMON_PID name the new mount and daemon for lib.sh's checks.
start_daemon_with_conn()
{
	start_daemon "$daemon" "$hlog" "$@"
	# The kernel connection is named by the minor number of the mount's device.
	local dev
	dev=$(awk -v m="$hmnt" '$5 == m { print $3 }' /proc/self/mountinfo)
	[[ $dev == 0:* ]] || fail "no device number for $hmnt in /proc/self/mountinfo (got '$dev')"
	hconn=/sys/fs/fuse/connections/${dev#0:}
	export VFS_TEST_DIR=$hmnt VFS_DAEMON_PID=$hpid
}

# load NAME COMMAND: run bash -c COMMAND in the background in its own process
# group, in the mount; prints nothing; its pid (= pgid) goes into $load_pid.
load()
{
	local name=$1
	shift
	(cd "$hmnt" && exec setsid bash -c "$1") > "$tmp/load-$name.log" 2>&1 < /dev/null &
	load_pid=$!
	# Out of the job table: no "Killed" or "Segmentation fault" notices when
	# the loads are killed or their mappings die with an aborted connection.
	disown "$load_pid"
	loads+=("$load_pid")
}

stop_loads()
{
	kill_group "${loads[@]}"
	loads=()
}

sanitizer_check()
{
	if grep -qE 'AddressSanitizer|LeakSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer|runtime error:' "$hlog"; then
		fail "$1: sanitizer report from the daemon: $(head -c 4000 "$hlog")"
	fi
}

# healthy WHAT: the daemon is alive, stat/write/read work, stats can be read,
# and it printed nothing.
healthy()
{
	local what=$1 s
	daemon_alive || fail "$what: daemon $hpid died; output: $(cat "$hlog")"
	mount_answers > /dev/null
	s=$(timeout 10 getfattr --absolute-names --only-values -n user.volatile.stats "$hmnt") ||
		fail "$what: user.volatile.stats cannot be read"
	[[ $s == *rss=* && $s == *data_bytes=* ]] || fail "$what: stats look wrong: $s"
	sanitizer_check "$what"
	[[ ! -s $hlog ]] || fail "$what: daemon printed: $(head -c 4000 "$hlog")"
	ok "$what: daemon $hpid alive, mount answers, stats readable"
}

# kill_after SECONDS NAME COMMAND: start COMMAND as a load, SIGKILL it (its whole
# process group) after SECONDS.  Fails when it ended by itself before that.
kill_after()
{
	local secs=$1 name=$2
	load "$name" "$3"
	local p=$load_pid
	sleep "$secs"
	kill -0 "$p" 2> /dev/null || fail "$name ended before it was killed: $(cat "$tmp/load-$name.log")"
	kill_group "$p"
	forget_load "$p"
}

# forget_load PID: drop a load that is gone from the list.
forget_load()
{
	local q keep=()
	for q in "${loads[@]}"; do
		[[ $q == "$1" ]] || keep+=("$q")
	done
	loads=("${keep[@]}")
}

# expect_clean_exit WHAT: the daemon exits 0 within 10 s, unmounted, silent.
expect_clean_exit()
{
	local what=$1 st=0 deadline=$((SECONDS + 10))
	while daemon_alive; do
		if ((SECONDS >= deadline)); then
			fail "$what: daemon still running 10 s later (a hang; daemon threads: $(stacks_of_daemon))"
		fi
		sleep 0.05
	done
	wait "$hpid" || st=$?
	hpid=
	sanitizer_check "$what"
	[[ $st -eq 0 ]] || fail "$what: daemon exited with status $st, want 0; output: $(cat "$hlog")"
	! is_mounted "$hmnt" || fail "$what: daemon exited 0 but $hmnt is still mounted"
	[[ ! -s $hlog ]] || fail "$what: daemon printed: $(head -c 4000 "$hlog")"
	rmdir "$hmnt"
	hmnt=
	ok "$what: exit status 0 within 10 s, mount gone, nothing printed"
}

# What the daemon's threads wait on (kernel side), for hang reports.
stacks_of_daemon()
{
	local t
	{
		for t in /proc/"$hpid"/task/*; do
			printf '%s ' "$(awk '{ print $3 }' "$t/stat" 2> /dev/null)/$(cat "$t/wchan" 2> /dev/null)"
		done | tr ' ' '\n' | sort | uniq -c | tr '\n' ' '
		cat /proc/"$hpid"/task/*/stack 2> /dev/null |
			grep -oE 'fuse_reverse_inval_inode|fuse_launder_folio|folio_wait_writeback' | sort -u | tr '\n' ' '
	} || true
}

stop_daemon()
{
	local what=$1 out
	out=$(fusermount3 -u "$hmnt" 2>&1) || fail "$what: fusermount3 -u failed: $out"
	expect_clean_exit "$what"
}

# The connections' control files: to abort a connection (scenario 5), and to
# free a daemon that hangs on its connection (cleanup).
if [[ $EUID -eq 0 ]] && ! awk '$2 == "/sys/fs/fuse/connections" { f = 1 } END { exit !f }' /proc/mounts; then
	mount -t fusectl fusectl /sys/fs/fuse/connections ||
		fail "cannot mount fusectl on /sys/fs/fuse/connections"
	fusectl_mounted=1
fi

# ---------------------------------------------------------------------------
# 1. Clients killed with SIGKILL in the middle of their calls.

scenario_kills()
{
	local base_files base_data size purger marker xloop deadline
	start_daemon_with_conn
	base_files=$(stat_of files)
	base_data=$(stat_of data_bytes)

	kill_after 0.2 dd 'exec dd if=/dev/zero of=big bs=1M count=4096 status=none'
	healthy "dd (buffered) killed in a 4 GiB write"
	size=$(stat -c %s "$hmnt/big")
	((size < 4096 * 1024 * 1024)) || fail "dd wrote all 4 GiB before its kill: the kill came too late to test anything"
	cmp -n "$size" "$hmnt/big" /dev/zero || fail "what dd wrote before its kill does not read back as written"
	ok "the $size bytes dd wrote before its kill read back"
	rm "$hmnt/big"

	kill_after 0.2 dd-direct 'exec dd if=/dev/zero of=big bs=1M count=4096 oflag=direct status=none'
	healthy "dd (O_DIRECT) killed in a 4 GiB write"
	rm "$hmnt/big"

	# A volatile file, written while another loop purges the whole mount.
	: > "$hmnt/vbig"
	setfattr -n user.volatile.mark -v all "$hmnt/vbig"
	load purger 'while :; do setfattr -n user.volatile.purge -v all . 2> /dev/null; sleep 0.01; done'
	purger=$load_pid
	kill_after 0.2 dd-volatile 'exec dd if=/dev/zero of=vbig bs=1M count=4096 status=none'
	kill_group "$purger"
	forget_load "$purger"
	healthy "dd killed in a 4 GiB volatile write while purges run"
	rm "$hmnt/vbig"

	# mmap faults (fio's mmap engine memcpy()s through a shared mapping) while a
	# loop marks the file volatile and purges it: faults race invalidations.
	truncate -s 64M "$hmnt/mm"
	load marker 'while :; do setfattr -n user.volatile.mark -v "0:32M priority=0" mm; setfattr -n user.volatile.purge -v all mm; getfattr -n user.volatile.purged mm > /dev/null; done'
	marker=$load_pid
	kill_after 0.5 fio-mmap 'exec fio --name=mmap --filename=mm --size=64M --bs=4k --rw=randrw --ioengine=mmap --time_based --runtime=60 --numjobs=2 --output=/dev/null'
	kill_group "$marker"
	forget_load "$marker"
	healthy "fio (mmap engine) killed in its fault loop while purges run"
	rm "$hmnt/mm"

	# setxattr and getxattr loops on the volatile names, and stress-ng's xattr
	# stressor, killed together.
	printf 'x%.0s' $(seq 1 1000) > "$hmnt/xf"
	mkdir "$hmnt/xdir"
	load xloop 'i=0; while :; do
		setfattr -n user.volatile.mark -v "$((i % 16 * 4096)):8K priority=$((i % 8))" xf
		setfattr -n user.volatile.unmark -v "$((i % 5 * 4096)):4K" xf
		setfattr -n user.volatile.purge -v all xf
		getfattr -n user.volatile.ranges xf > /dev/null
		setfattr -x user.volatile.purged xf
		setfattr -n user.volatile.purge -v 1 . 2> /dev/null
		i=$((i + 1))
	done'
	xloop=$load_pid
	kill_after 1 stress-xattr "exec stress-ng --xattr 2 --temp-path xdir --timeout 60s --quiet"
	kill_group "$xloop"
	forget_load "$xloop"
	healthy "setxattr loops and stress-ng --xattr killed"
	rm -rf "$hmnt/xf" "$hmnt/xdir"

	# Creating, writing, renaming and unlinking: a kill can land between a create
	# and its reply, or in an open.
	mkdir "$hmnt/cdir"
	kill_after 1 creator 'cd cdir; i=0; while :; do
		echo data > "f$((i % 50))"; mv "f$((i % 50))" "g$((i % 50))"; exec 3< "g$((i % 50))"; exec 3<&-
		rm -f "g$(((i + 25) % 50))"; i=$((i + 1))
	done'
	healthy "a create/rename/unlink loop killed"
	rm -rf "$hmnt/cdir"

	# Nothing leaked: with everything removed and the kernel's caches dropped (so
	# it forgets the inodes), the counters are back where they started.
	sync
	[[ $EUID -eq 0 ]] && echo 2 > /proc/sys/vm/drop_caches
	deadline=$((SECONDS + 10))
	until [[ $(stat_of files) == "$base_files" && $(stat_of data_bytes) == "$base_data" ]]; do
		((SECONDS < deadline)) || fail "after the kills and removing everything: files=$(stat_of files) data_bytes=$(stat_of data_bytes), want files=$base_files data_bytes=$base_data (a leak)"
		sleep 0.2
		[[ $EUID -eq 0 ]] && echo 2 > /proc/sys/vm/drop_caches
	done
	ok "after the kills: files=$base_files data_bytes=$base_data again, nothing leaked"
	stop_daemon "fusermount3 -u after the client kills"
}

# ---------------------------------------------------------------------------
# 2. fusermount3 -u while files are open: EBUSY; with the load gone, success.

scenario_busy()
{
	local holder st out
	start_daemon_with_conn
	load holder 'exec 3> held; exec 4< held; while :; do echo x >&3; head -c 10 <&4 > /dev/null; done'
	holder=$load_pid
	# Until the holder has both files open (a fixed 0.3 s was not always
	# enough on a loaded machine, and fusermount3 -u then succeeded).
	local deadline=$((SECONDS + 60))
	until [[ $(readlink "/proc/$holder/fd/3" 2> /dev/null) == */held &&
		$(readlink "/proc/$holder/fd/4" 2> /dev/null) == */held ]]; do
		kill -0 "$holder" 2> /dev/null || fail "the holder ended: $(cat "$tmp/load-holder.log")"
		((SECONDS < deadline)) || fail "the holder has not opened $hmnt/held after 60 s"
		sleep 0.05
	done
	st=0
	out=$(fusermount3 -u "$hmnt" 2>&1) || st=$?
	[[ $st -ne 0 ]] || fail "fusermount3 -u with files open succeeded, want EBUSY"
	[[ $out == *"busy"* ]] || fail "fusermount3 -u with files open: '$out', want 'Device or resource busy'"
	is_mounted "$hmnt" || fail "the mount is gone after a failed fusermount3 -u"
	ok "fusermount3 -u with open files: EBUSY ($out)"
	healthy "after the refused unmount"
	kill_group "$holder"
	forget_load "$holder"
	stop_daemon "fusermount3 -u once the load is killed"
}

# ---------------------------------------------------------------------------
# 3. More clients asking for purge reports than the daemon has worker threads
# (64 by default), while a mapping of the purged file is dirty: a report waits
# until the kernel has dropped the purged pages, and dropping a dirty page
# means writing it back through the daemon.  The mount must keep answering.

scenario_reporters()
{
	local k s
	start_daemon_with_conn
	truncate -s 32M "$hmnt/mm"
	load mmap 'exec fio --name=mmap --filename=mm --size=32M --bs=4k --rw=randwrite --ioengine=mmap --time_based --runtime=60 --numjobs=2 --output=/dev/null'
	load purger 'while :; do setfattr -n user.volatile.mark -v all mm; setfattr -n user.volatile.purge -v all mm; done'
	for k in $(seq 1 80); do
		load "reporter$k" 'while :; do getfattr -n user.volatile.purged mm > /dev/null 2>&1; done'
	done
	for s in 1 2 3 4 5 6 7 8; do
		sleep 1
		if ! timeout -s KILL 10 stat "$hmnt/mm" > /dev/null ||
			! timeout -s KILL 10 getfattr --absolute-names -n user.volatile.stats "$hmnt" > /dev/null; then
			fail "80 clients asking for purge reports while a purged file's mapping is dirty: the mount stopped answering after ${s} s (a deadlock; daemon threads: $(stacks_of_daemon))"
		fi
	done
	ok "80 purge reporters, a dirty mapping and purges: the mount answered throughout"
	stop_loads
	healthy "after the purge reporters"
	stop_daemon "fusermount3 -u after the purge reporters"
}

# ---------------------------------------------------------------------------
# 4. SIGTERM under load: writes, writes through a mapping, purges of the mapped
# file (whose invalidations must write dirty pages back), purge reports (which
# wait for those invalidations) and reads, all at once.

scenario_term()
{
	local round
	for round in 1 2 3 4 5; do
		start_daemon_with_conn
		load writer 'i=0; while :; do dd if=/dev/zero of="w$((i % 4))" bs=64k count=16 status=none; i=$((i + 1)); done'
		load volatile ': > v; setfattr -n user.volatile.mark -v all v; while :; do
			dd if=/dev/zero of=v bs=64k count=16 conv=notrunc status=none
			setfattr -n user.volatile.purge -v all v
			getfattr -n user.volatile.purged v > /dev/null
			cat v > /dev/null
		done'
		truncate -s 32M "$hmnt/mm"
		load mmap 'exec fio --name=mmap --filename=mm --size=32M --bs=4k --rw=randwrite --ioengine=mmap --time_based --runtime=60 --numjobs=2 --output=/dev/null'
		load purger 'while :; do setfattr -n user.volatile.mark -v all mm; setfattr -n user.volatile.purge -v all mm; getfattr -n user.volatile.purged mm > /dev/null; done'
		sleep 1.5
		kill -TERM "$hpid"
		expect_clean_exit "SIGTERM under load (round $round)"
		stop_loads
	done
}

# ---------------------------------------------------------------------------
# 5. A tiny limit.

# room_for_data WHEN: the test's data (1 MiB writes, 256 KiB kept) needs about
# 3 MiB beside the daemon's own RSS; if the limit leaves less, raise it (in
# $limit) at run time to that RSS + 4 MiB, and say so.
room_for_data()
{
	local rss
	rss=$(stat_of rss)
	if ((rss + 3 * 1024 * 1024 > limit)); then
		echo "$vfs_test: note: the daemon's own RSS is $rss bytes $1: a $limit-byte limit leaves no room for 1 MiB writes; raised to $((rss + 4 * 1024 * 1024))"
		limit=$((rss + 4 * 1024 * 1024))
		setfattr -n user.volatile.memory_limit -v "$limit" "$hmnt"
	fi
}

scenario_tiny()
{
	local limit i purges st out enospc size
	start_daemon_with_conn -o memory_limit=4M
	limit=$((4 * 1024 * 1024))
	room_for_data "at the start"
	# Warm the daemon up (large writes and reads touch its request and reply
	# buffers): the test's data has to fit beside what it holds then.
	: > "$hmnt/warm"
	setfattr -n user.volatile.mark -v all "$hmnt/warm"
	dd if=/dev/zero of="$hmnt/warm" bs=256k count=8 status=none
	cat "$hmnt/warm" > /dev/null
	rm "$hmnt/warm"
	sleep 0.3
	room_for_data "once warm"
	# Non-volatile data that must survive all of it.
	head -c 256K /dev/urandom > "$tmp/keep"
	cp "$tmp/keep" "$hmnt/keep"
	mkdir "$hmnt/v"
	for i in $(seq 1 32); do
		: > "$hmnt/v/f$i"
		setfattr -n user.volatile.mark -v all "$hmnt/v/f$i"
		if ! dd if=/dev/zero of="$hmnt/v/f$i" bs=256k count=4 status=none; then
			# ENOSPC is right only when nothing volatile was left to purge.
			fail "writing 1 MiB of volatile data into v/f$i under a $limit-byte limit failed, want success by purging (volatile_bytes=$(stat_of volatile_bytes) left; stats: $(getfattr --absolute-names --only-values -n user.volatile.stats "$hmnt" | tr '\n' ' '))"
		fi
	done
	purges=$(stat_of purges_total)
	((purges > 0)) || fail "32 MiB of volatile data under a $limit-byte limit and no purge"
	ok "32 MiB of volatile writes under a $limit-byte limit succeed ($purges purges)"
	head -c 64M /dev/urandom > "$tmp/fill"
	st=0
	out=$(dd if="$tmp/fill" of="$hmnt/fill" bs=64k 2>&1) || st=$?
	[[ $st -ne 0 && $out == *"No space left on device"* ]] ||
		fail "a 64 MiB non-volatile fill under a $limit-byte limit: status $st '$out', want ENOSPC"
	# enospc_total counts the ENOSPCs the daemon answers: on the passthrough path the
	# kernel writes a file opened while it holds no volatile range itself, and its ENOSPC
	# is not seen; a fallocate always reaches the daemon.
	fallocate -l 64M "$hmnt/fill.falloc" 2> /dev/null &&
		fail "a 64 MiB fallocate under a $limit-byte limit succeeded, want ENOSPC"
	rm -f "$hmnt/fill.falloc"
	enospc=$(stat_of enospc_total)
	((enospc > 0)) || fail "ENOSPC but enospc_total is $enospc"
	size=$(stat -c %s "$hmnt/fill")
	cmp -n "$size" "$tmp/fill" "$hmnt/fill" || fail "the $size bytes stored before ENOSPC do not read back intact"
	cmp "$tmp/keep" "$hmnt/keep" || fail "the older non-volatile file changed under ENOSPC"
	ok "a non-volatile fill ends in ENOSPC after $size bytes; what was stored reads back intact"
	daemon_alive || fail "the daemon died after ENOSPC"
	[[ -n $(stat_of rss) ]] || fail "stats cannot be read after ENOSPC"
	rm "$hmnt/fill"
	healthy "after ENOSPC and removing the fill"
	echo again > "$hmnt/again" || fail "a write after removing the fill failed"
	ok "writes work again once the fill is removed"
	rm -rf "$hmnt/v" "$hmnt/again" "$hmnt/keep"
	stop_daemon "fusermount3 -u after the tiny limit"
}

# ---------------------------------------------------------------------------
# 6. The kernel connection aborted under load.

scenario_abort()
{
	local deadline st round
	if [[ $EUID -ne 0 ]]; then
		echo "$vfs_test: skipped - connection abort (needs root for /sys/fs/fuse/connections)"
		return 0
	fi
	for round in 1 2 3; do
		start_daemon_with_conn
		load writer 'i=0; while :; do dd if=/dev/zero of="w$((i % 4))" bs=64k count=16 status=none; i=$((i + 1)); done'
		load volatile ': > v; setfattr -n user.volatile.mark -v all v; while :; do
			dd if=/dev/zero of=v bs=64k count=16 conv=notrunc status=none
			setfattr -n user.volatile.purge -v all v; getfattr -n user.volatile.purged v > /dev/null
			cat v > /dev/null; done'
		# Opens and creates in flight when the connection goes: their replies fail.
		load opener 'i=0; while :; do exec 3< v; exec 3<&-; : > "c$((i % 8))"; i=$((i + 1)); done'
		truncate -s 32M "$hmnt/mm"
		load mmap 'exec fio --name=mmap --filename=mm --size=32M --bs=4k --rw=randrw --ioengine=mmap --time_based --runtime=60 --numjobs=2 --output=/dev/null'
		load purger 'while :; do setfattr -n user.volatile.mark -v all mm; setfattr -n user.volatile.purge -v all mm; getfattr -n user.volatile.purged mm > /dev/null; done'
		sleep 1
		[[ -w $hconn/abort ]] || fail "$hconn/abort is missing"
		echo 1 > "$hconn/abort"
		deadline=$((SECONDS + 10))
		while daemon_alive; do
			((SECONDS < deadline)) || fail "round $round: the daemon still runs 10 s after the connection was aborted"
			sleep 0.05
		done
		st=0
		wait "$hpid" || st=$?
		hpid=
		stop_loads
		((st == 0 || st == 1)) || fail "round $round: after the abort the daemon exited with status $st (a signal or a crash?); output: $(head -c 4000 "$hlog")"
		sanitizer_check "connection abort (round $round)"
		ok "connection aborted under load (round $round): the daemon exited with status $st within 10 s, no sanitizer report"
		if is_mounted "$hmnt"; then
			fusermount3 -uz "$hmnt" 2> /dev/null || umount -l "$hmnt"
		fi
		! is_mounted "$hmnt" || fail "the dead mount $hmnt could not be taken down"
		rmdir "$hmnt"
		hmnt=
		ok "the dead mount is gone"
	done
}

# ---------------------------------------------------------------------------

all_scenarios="kills busy reporters term tiny abort"
for sc in ${VFS_FAULTS:-$all_scenarios}; do
	[[ " $all_scenarios " == *" $sc "* ]] || fail "VFS_FAULTS: unknown scenario '$sc' (known: $all_scenarios)"
	"scenario_$sc"
done
