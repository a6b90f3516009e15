#!/bin/bash
# pressure-churn.sh DAEMON - a neighbour streaming a file through the daemon's
# memory cgroup is no shortage: volatile data stays; a program that needs
# memory while the stream runs still gets it (DESIGN section 10), on a real
# cgroup v1 memory controller.
#
# One cgroup with memory.limit_in_bytes 1536M and the daemon inside it
# (-o memory_limit=4G, far above), holding a 64 MiB ordinary file and 512 MiB
# of volatile data in 8 files of 64 MiB, all written from outside the cgroup
# (pressurelib.sh).  The stream: `dd` of a 4 GiB file in $VFS_STREAM_DIR
# (default /var/tmp; it must be a disk filesystem, not tmpfs), read in the
# cgroup after its pages were dropped from the page cache, so that each page
# read is new clean page cache charged to the cgroup.  The file is sparse: its
# pages are clean page cache like those of a written file (measured with
# bench/pressuresignals.py: usage less clean cache at most 582 MiB with it,
# 596 with a 4 GiB file written on the disk; "low" pressure-level events
# only, for both), and it costs no disk space or write time.
#   1. churn: the stream alone.  It must have filled the cgroup to its limit
#      (memory.failcnt grew: the kernel reclaimed page cache), and then at
#      least 90% of the volatile data is still held, no OOM kill, the daemon
#      alive, the ordinary file and every unpurged file intact byte for byte.
#   2. mixed: the stream again, endlessly (each pass drops the file's pages
#      first), and once it has filled the cgroup, memhog asking for 1000 MiB
#      in the cgroup.  With the daemon's 576 MiB that is more than the limit:
#      without purging, the OOM killer would kill (measured: memhog killed with
#      pressure=off).  memhog must complete, with no OOM kill, the stream still
#      running when it ends, the daemon alive, some volatile data purged
#      (pressure_bytes_total grew: memhog needed it), the ordinary file and
#      every unpurged file intact.
# No assertion on times: memhog's is printed.  The cgroup, the mount and the
# stream file are removed on exit, on failure too.  Needs root and the v1
# memory controller at /sys/fs/cgroup/memory; elsewhere skipped (exit 77).
# memhog's path comes in $MEMHOG.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
daemon=$(daemon_path "$1")
memhog=${MEMHOG:?MEMHOG must name the memhog program}
hog_mib=${VFS_CHURN_HOG_MIB:-1000}
stream_dir=${VFS_STREAM_DIR:-/var/tmp}
# shellcheck source-path=SCRIPTDIR source=pressurelib.sh
. "$(dirname "${BASH_SOURCE[0]}")/pressurelib.sh"

case $(stat -f -c %T "$stream_dir") in
tmpfs | ramfs)
	echo "$vfs_test: skipped: $stream_dir is $(stat -f -c %T "$stream_dir"): reading it makes no page cache" >&2
	exit 77
	;;
esac
pressure_init
stream=$(mktemp "$stream_dir/volatilefs-stream.XXXXXX")
pressure_cleanup+=("$stream")
truncate -s 4G "$stream"

# drop_stream: the stream file's pages out of the page cache.
drop_stream() { dd if="$stream" iflag=nocache count=0 status=none; }

# --- 1. churn: the stream alone ----------------------------------------------
pressure_setup churn yes "" 8
vol0=$(stat_of volatile_bytes)
eq "churn: 512 MiB of volatile data held" "$vol0" $((512 * mib))
eq "churn: pressure sources include the v1 cgroup" \
	"$(stat_of pressure_sources | grep -o cgroup1)" cgroup1
drop_stream
echo 0 > "$cg/memory.failcnt"
echo 0 > "$cg/memory.max_usage_in_bytes"
in_cgroup dd if="$stream" of=/dev/null bs=1M status=none ||
	fail "churn: the stream failed (status $?)"
fails=$(cat "$cg/memory.failcnt")
((fails > 0)) || fail "churn: memory.failcnt=0: the stream never filled the cgroup (no churn)"
ok "churn: the 4 GiB stream filled the cgroup (memory.failcnt=$fails," \
	"max usage $(($(cat "$cg/memory.max_usage_in_bytes") / mib)) MiB of 1536)"
eq "churn: memory.oom_control counts no OOM kill" "$(oom_kills)" 0
daemon_alive || fail "churn: the daemon died"
vol=$(stat_of volatile_bytes)
((vol * 10 >= vol0 * 9)) ||
	fail "churn: volatile_bytes=$vol: less than 90% of $vol0 kept" \
		"(pressure_purges_total=$(stat_of pressure_purges_total))"
ok "churn: $((vol * 100 / vol0))% of the volatile data kept (volatile_bytes=$vol," \
	"pressure_purges_total=$(stat_of pressure_purges_total))"
check_files churn 8
ok "churn: the ordinary file and the $kept unpurged files read back intact"

# --- 2. mixed: memhog while the stream runs ------------------------------------
pbytes0=$(stat_of pressure_bytes_total)
fails0=$(cat "$cg/memory.failcnt")
# The stream loop runs in the cgroup; so does every dd it starts.
# shellcheck disable=SC2016 # for the inner bash
in_cgroup bash -c 'while :; do
	dd if="$1" iflag=nocache count=0 status=none
	dd if="$1" of=/dev/null bs=1M status=none
done' stream "$stream" &
spid=$!
# stop_stream: kill the loop and what it runs: everything in the cgroup but the daemon.
stop_stream()
{
	local i p
	kill -KILL "$spid" 2> /dev/null || true
	for ((i = 0; i < 50; i++)); do
		local left=0
		while read -r p; do
			[[ " $daemon_pids " == *" $p "* ]] && continue
			kill -KILL "$p" 2> /dev/null || true
			left=1
		done < "$cg/cgroup.procs"
		((left)) || break
		sleep 0.1
	done
	wait "$spid" 2> /dev/null || true
}
for ((i = 0; i < 600; i++)); do
	(($(cat "$cg/memory.failcnt") > fails0)) && break
	kill -0 "$spid" 2> /dev/null || fail "mixed: the stream ended"
	sleep 0.1
done
(($(cat "$cg/memory.failcnt") > fails0)) || fail "mixed: the stream did not fill the cgroup in 60 s"
ok "mixed: the stream fills the cgroup"
status=0
ms=$(in_cgroup "$memhog" "$hog_mib") || status=$?
running=0
kill -0 "$spid" 2> /dev/null && running=1
stop_stream
eq "mixed: memhog $hog_mib completed while the stream ran (exit status)" "$status" 0
ok "mixed: memhog took $ms ms"
eq "mixed: the stream was still running when memhog ended" "$running" 1
eq "mixed: memory.oom_control counts no OOM kill" "$(oom_kills)" 0
daemon_alive || fail "mixed: the daemon died"
ok "mixed: the daemon is alive"
pbytes=$(stat_of pressure_bytes_total)
((pbytes > pbytes0)) || fail "mixed: pressure_bytes_total=$pbytes: nothing purged for memhog"
ok "mixed: $(((pbytes - pbytes0) / mib)) MiB of volatile data purged for memhog" \
	"($((vol / mib)) MiB were held)"
check_files mixed 8
ok "mixed: the ordinary file and the $kept unpurged files read back intact"
