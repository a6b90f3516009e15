#!/usr/bin/env bash
# bench/smallfiles.sh: the memory and time N small files cost in each place their data could
# live (DESIGN section 11, passthrough): volatilefs's arena as today, a plain tmpfs, and one
# backing file per file on a private tmpfs.
#
#   bench/smallfiles.sh [--reps R] [--models M[,M...]] [--ndirs D] [--out DIR] COUNTS SIZES
#
#   COUNTS  comma-separated numbers of files, e.g. 100000,1000000
#   SIZES   comma-separated file sizes in bytes, e.g. 0,100,4096
#   --reps R          repetitions of each (model, count, size), interleaved (default 3)
#   --models M,...    any of (default all):
#       volatilefs  build/src/daemon/volatilefs -f -o memory_limit=8G,pressure=off MNT;
#                   N files spread over D directories (bench/mkfiles.c "named")
#       tmpfs       the same files on mount -t tmpfs -o size=8G
#       backing     the backing files of the passthrough model as a daemon could keep them
#                   without descriptors: named files on a private tmpfs (size=8G), in 256
#                   directories (D if fewer), written and closed, reopened by name when needed; nothing
#                   registered with FUSE
#       tmpfile     O_TMPFILE files on a private tmpfs, each descriptor kept open (what keeps
#                   an unnamed backing file alive; a registered backing id keeps a struct file
#                   the same way); N is capped under the hard RLIMIT_NOFILE
#   --ndirs D         directories the files are spread over (default 1000)
#   --out DIR         raw snapshots and the summary (default a fresh /tmp/smallfiles.XXXXXX)
#
# Each run: mount, sync, drop caches (echo 3), wait 2 s, snapshot; create the files (timed
# inside mkfiles); snapshot again at once; then sync + drop caches again and take a third
# snapshot (what stays when the kernel reclaims what it can: the FUSE page cache, FUSE dentries
# and inodes); unmount. A snapshot is /proc/meminfo, /proc/slabinfo, the daemon's VmRSS and,
# where the v1 memory controller is mounted, the usage, kmem usage and memory.stat of two
# fresh memory cgroups made for the run under the script's own: one for mkfiles (charged with
# the kernel objects it makes -- FUSE or tmpfs inodes, dentries, files -- and with the page
# cache or shmem pages it writes) and one for the daemon. Those two are the figures to trust
# on a shared machine; meminfo and slabinfo are machine-wide (other programs move them).
# Figures are deltas over the run; the summary (medians over the repetitions, bytes per file)
# is printed as markdown and saved with a TSV of every run in DIR.
#
# Needs root (mounts, drop_caches). Builds volatilefs in ./build if it is not built, and
# mkfiles in DIR. Every mount is under DIR/mnt and is unmounted by an EXIT trap, also on
# failure or Ctrl-C; the daemons and holders it started are ended by their pids.
#
# Noise: on machines with a DAMON "pageout" scheme (see
# /sys/kernel/mm/damon/admin), idle page cache is reclaimed after a while: a run longer than
# that loses part of its FUSE page cache before the snapshot after creation.
set -euo pipefail

prog=${0##*/}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../contrib/lib.sh
. "$root/contrib/lib.sh"

readonly PKGS=(meson ninja-build pkg-config gcc libfuse3-dev libbsd-dev check fuse3 attr python3)

REPS=3
MODELS=volatilefs,tmpfs,backing,tmpfile
NDIRS=1000
OUT=
VFS=${VOLATILEFS:-$root/build/src/daemon/volatilefs}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '/^set -euo/d' -e 's/^# \{0,1\}//'
}

while [[ $# -gt 0 ]]; do
	case $1 in
	--reps) REPS=$2; shift 2 ;;
	--models) MODELS=$2; shift 2 ;;
	--ndirs) NDIRS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) usage; exit 0 ;;
	--) shift; break ;;
	-*) usage >&2; exit 2 ;;
	*) break ;;
	esac
done
[[ $# -eq 2 ]] || { usage >&2; exit 2; }
IFS=, read -r -a COUNTS <<<"$1"
IFS=, read -r -a SIZES <<<"$2"
IFS=, read -r -a MODEL_LIST <<<"$MODELS"
[[ $(id -u) -eq 0 ]] || die "needs root (mount, drop_caches)"

install_missing "${PKGS[@]}"
if [[ ! -x $VFS ]]; then
	say "building volatilefs in $root/build"
	[[ -d $root/build ]] || meson setup "$root/build" >&2
	ninja -C "$root/build" >&2
fi
[[ -x $VFS ]] || die "no daemon at $VFS"

if [[ -z $OUT ]]; then
	OUT=$(mktemp -d /tmp/smallfiles.XXXXXX)
else
	mkdir -p "$OUT"
fi
OUT=$(cd "$OUT" && pwd)
MKFILES=$OUT/mkfiles
cc -std=gnu11 -O2 -Wall -Wextra -Werror -o "$MKFILES" "$here/mkfiles.c"

# What is running and must be ended, unmounted or removed on exit.
MOUNTED=()
DAEMON_PID=
HOLDER_PID=
CGROUPS=()

# The memory cgroup (v1) this script runs in; runs get children of it.
CGBASE=
if [[ -f /sys/fs/cgroup/memory/memory.usage_in_bytes ]]; then
	CGBASE=/sys/fs/cgroup/memory$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
	CGBASE=${CGBASE%/}
	[[ -w $CGBASE ]] || CGBASE=
fi
[[ -n $CGBASE ]] || say "no writable v1 memory cgroup: machine-wide figures only (noisy)"
CG_MK=
CG_DAEMON=

cg_make() { # NAME: a fresh memory cgroup, its path in LAST_CG
	LAST_CG=$CGBASE/smallfiles-$$-$1
	if [[ -d $LAST_CG ]]; then rmdir -- "$LAST_CG"; fi
	mkdir -- "$LAST_CG"
	CGROUPS+=("$LAST_CG")
}

cg_remove_all() {
	local cg i
	for cg in "${CGROUPS[@]}"; do
		for ((i = 0; i < 50; i++)); do
			[[ -s $cg/cgroup.procs ]] || break
			sleep 0.1
		done
		rmdir -- "$cg" 2>/dev/null || say "could not remove the cgroup $cg"
	done
	CGROUPS=()
}

# in_cg CG COMMAND...: run COMMAND in memory cgroup CG (or where we are, when CG is empty).
# The shell execs COMMAND: "in_cg ... &" must not be used ($! would be a subshell of this
# script); background commands are started as "sh -c "$IN_CG" sh CG COMMAND... &".
# shellcheck disable=SC2016 # expanded by sh -c, not here
readonly IN_CG='if [ -n "$1" ]; then echo $$ >"$1/cgroup.procs" || exit 1; fi; shift; exec "$@"'
in_cg() {
	sh -c "$IN_CG" sh "$@"
}

unmount_all() {
	local mp i
	for mp in "${MOUNTED[@]}"; do
		if mountpoint -q -- "$mp"; then
			fusermount3 -u -- "$mp" 2>/dev/null || umount -- "$mp" 2>/dev/null ||
				umount -l -- "$mp" || say "could not unmount $mp"
		fi
	done
	MOUNTED=()
	if [[ -n $DAEMON_PID ]]; then
		# Freeing a million nodes takes the daemon a while after the unmount.
		for ((i = 0; i < 1200; i++)); do
			kill -0 "$DAEMON_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$DAEMON_PID" 2>/dev/null; then
			say "daemon $DAEMON_PID still running after its unmount: SIGTERM"
			kill -TERM "$DAEMON_PID" 2>/dev/null || true
		fi
		wait "$DAEMON_PID" 2>/dev/null || true
		DAEMON_PID=
	fi
}

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $HOLDER_PID ]]; then
		kill -TERM "$HOLDER_PID" 2>/dev/null || true
		wait "$HOLDER_PID" 2>/dev/null || true
	fi
	unmount_all
	cg_remove_all
	if grep -qF " $OUT/mnt" /proc/mounts; then
		say "still mounted under $OUT/mnt:"
		grep -F " $OUT/mnt" /proc/mounts >&2 || true
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

drop_caches() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# snap RUNDIR NAME: /proc/meminfo, /proc/slabinfo, the daemon's VmRSS (or 0) and the two
# cgroups' usage (memory.usage_in_bytes, memory.kmem.usage_in_bytes, memory.stat).
snap() {
	local which cg
	cat /proc/meminfo >"$1/$2.meminfo"
	cat /proc/slabinfo >"$1/$2.slabinfo"
	if [[ -n $DAEMON_PID ]]; then
		awk '/^VmRSS:/ { printf "%.0f\n", $2 * 1024 }' "/proc/$DAEMON_PID/status" >"$1/$2.rss"
	else
		echo 0 >"$1/$2.rss"
	fi
	for which in mk daemon; do
		[[ $which == mk ]] && cg=$CG_MK || cg=$CG_DAEMON
		[[ -n $cg ]] || continue
		{
			echo "usage $(<"$cg/memory.usage_in_bytes")"
			echo "kmem $(<"$cg/memory.kmem.usage_in_bytes")"
			cat "$cg/memory.stat"
		} >"$1/$2.cg-$which"
	done
}

mount_tmpfs() { # MOUNTPOINT
	mkdir -p "$1"
	mount -t tmpfs -o size=8G,nr_inodes=0 tmpfs "$1"
	MOUNTED+=("$1")
}

mount_vfs() { # MOUNTPOINT LOGFILE
	local i
	mkdir -p "$1"
	sh -c "$IN_CG" sh "$CG_DAEMON" "$VFS" -f -o memory_limit=8G,pressure=off "$1" >>"$2" 2>&1 &
	DAEMON_PID=$!
	MOUNTED+=("$1")
	for ((i = 0; i < 100; i++)); do
		grep -qF " $1 fuse.volatilefs " /proc/mounts && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || die "volatilefs exited before mounting $1 (see $2)"
		sleep 0.1
	done
	die "volatilefs did not mount $1 in 10 s"
}

hard_nofile=$(ulimit -Hn)

# run MODEL N SIZE REP
run() {
	local model=$1 n=$2 size=$3 rep=$4 rd mp i line
	rd=$OUT/raw/$model-$n-$size-r$rep
	mp=$OUT/mnt/$model
	rm -rf "$rd"
	mkdir -p "$rd"
	if [[ $model == tmpfile && $hard_nofile != unlimited ]] && ((n > hard_nofile - 1000)); then
		n=$(((hard_nofile - 1000) / 1000 * 1000))
	fi
	echo "$n" >"$rd/n"
	if [[ -n $CGBASE ]]; then
		cg_make mk
		CG_MK=$LAST_CG
		if [[ $model == volatilefs ]]; then
			cg_make daemon
			CG_DAEMON=$LAST_CG
		fi
	fi
	case $model in
	volatilefs) mount_vfs "$mp" "$rd/daemon.log" ;;
	*) mount_tmpfs "$mp" ;;
	esac
	drop_caches
	sleep 2
	cat /proc/loadavg >"$rd/loadavg"
	snap "$rd" before
	case $model in
	volatilefs | tmpfs)
		in_cg "$CG_MK" "$MKFILES" named "$mp" "$n" "$size" "$NDIRS" >"$rd/mkfiles.out"
		snap "$rd" after
		;;
	backing)
		in_cg "$CG_MK" "$MKFILES" named "$mp" "$n" "$size" $((NDIRS < 256 ? NDIRS : 256)) \
			>"$rd/mkfiles.out"
		snap "$rd" after
		;;
	tmpfile)
		# The holder keeps its descriptors until its stdin closes or it is signalled.
		mkfifo "$rd/hold"
		sh -c "$IN_CG" sh "$CG_MK" "$MKFILES" tmpfile "$mp" "$n" "$size" <"$rd/hold" \
			>"$rd/mkfiles.out" &
		HOLDER_PID=$!
		exec 9>"$rd/hold"
		for ((i = 0; i < 6000; i++)); do
			grep -qx ready "$rd/mkfiles.out" 2>/dev/null && break
			kill -0 "$HOLDER_PID" 2>/dev/null || die "mkfiles tmpfile failed ($rd)"
			sleep 0.05
		done
		grep -qx ready "$rd/mkfiles.out" || die "mkfiles tmpfile did not finish in 300 s"
		snap "$rd" after
		;;
	esac
	if [[ $model == volatilefs ]]; then
		getfattr --absolute-names --only-values -n user.volatile.stats "$mp" >"$rd/stats" ||
			true
	fi
	drop_caches
	sleep 2
	snap "$rd" dropped
	if [[ $model == tmpfile ]]; then
		exec 9>&-
		wait "$HOLDER_PID" || die "mkfiles tmpfile failed ($rd)"
		HOLDER_PID=
	fi
	unmount_all
	cg_remove_all
	CG_MK=''
	CG_DAEMON=
	rm -f "$rd/hold"
	line=$(tr '\n' ' ' <"$rd/mkfiles.out")
	say "$model n=$n size=$size rep=$rep: $line"
}

{
	echo "date $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "kernel $(uname -r)"
	echo "cpus $(nproc)"
	echo "memtotal_kib $(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
	echo "hard_nofile $hard_nofile"
	echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "command $prog --reps $REPS --models $MODELS --ndirs $NDIRS $1 $2"
} >"$OUT/machine.txt"

start=$(date +%s)
for ((rep = 1; rep <= REPS; rep++)); do
	for n in "${COUNTS[@]}"; do
		for size in "${SIZES[@]}"; do
			for model in "${MODEL_LIST[@]}"; do
				run "$model" "$n" "$size" "$rep"
			done
		done
	done
done
say "all runs took $(($(date +%s) - start)) s; raw data in $OUT/raw"

python3 "$here/smallfiles-report.py" "$OUT" | tee "$OUT/summary.md"
