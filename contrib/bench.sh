#!/usr/bin/env bash
# contrib/bench.sh: benchmarks of volatilefs against tmpfs and fuse-overlayfs.
#
#   contrib/bench.sh [--quick] [--reps N] [--only GROUP[,GROUP...]] [--out DIR]
#
# As root on Debian 12. Installs what is missing (Debian packages), builds volatilefs with
# optimisation in ./build-bench (meson release build, no tests) and the helpers of bench/ in
# ./build-bench/bench, mounts a tmpfs, a volatilefs (memory_limit=4G) and fuse-overlayfs over a
# tmpfs (lowerdir, upperdir and workdir on a separate tmpfs), and runs every workload on each,
# interleaved: for each repetition, for each workload, for each filesystem, the filesystems'
# order rotating by one each repetition (tmpfs first in the first, volatilefs first in the
# second...): how fast a file reads depends on which pages it got, and the file written second
# of two read up to 1.7x faster whatever its filesystem (bench/ptread.sh). Workloads that
# only volatilefs can run (marking, purging, the memory limit, unit scaling) run on it alone;
# some need a mount of their own (a smaller memory_limit, a tree of a million files).
# The memory-pressure section runs a plain program allocating at full speed in a v1 memory
# cgroup next to 1 GiB of MADV_FREE memory, then next to a volatilefs daemon holding 1 GiB of
# volatile data, and times the daemon's reaction (DESIGN section 10); then streams a 4 GiB file
# through such a cgroup next to 512 MiB of MADV_FREE memory, then next to the daemon holding
# 512 MiB of volatile data, and reports how much of each is kept (churn is no shortage).
#
# It prints the medians over the repetitions and the ratios volatilefs/tmpfs and
# volatilefs/fuse-overlayfs as a markdown table, and saves it, with the machine, the kernel,
# the date and the exact command, to bench/results/latest.md (the raw figures beside it in
# latest-raw.tsv), plus a plot of the daemon's RSS during a write flood of volatile data,
# bench/results/rss-flood.png.
#
# --quick: 3 repetitions and smaller sizes, under 2 minutes. The full run (5 repetitions)
# takes about 20 minutes on 2 cores. The figures are only as quiet as the machine: run it
# when nothing else runs, and compare ratios rather than absolute figures.
#
# GROUPs (for --only): fio small dirops glyph mark purge limit scale tree flood pressure mem.
#
# Both data paths (DESIGN section 11): the volatilefs column is the classic path
# (-o passthrough=off); the passthrough column a second volatilefs mount with -o
# passthrough=on, which runs the loop groups' workloads that do not need the classic mount
# (fio, small files, plain glyph frames, no-op round trips), and the directory operations of
# several threads in one directory (dirops), where the two mounts differ by more than the data
# path: the passthrough mount asks the kernel for parallel lookups and readdirs
# (FUSE_PARALLEL_DIROPS), the classic mount keeps libfuse's own /dev/fuse I/O, which never does.
# The mem group writes a 1 GiB file to tmpfs and to each path, reads it once, and reports
# what the machine holds for it (MemTotal - MemFree, after dropping caches before) and its
# parts: the daemon's VmRSS, shared memory (Shmem: tmpfs pages, backing files) and the FUSE
# file's own page cache (fincore of the FUSE file on the classic path; on the passthrough
# path fincore sees the backing file's pages, already in Shmem, so that part is left out),
# and their sum.  Memory
# freed late by the mount before (a private tmpfs goes with the daemon's last descriptor)
# would count against the file: the baseline is read after 2 s and a second drop of caches.
# Even so MemTotal - MemFree moved by 0.5-0.75 of the parts' sum in the runs of 2026-12-05
# here (a plain dd of 1 GiB into a tmpfs moves it by the full 1 GiB): the sum is the figure.
#
# Every mount is made under a fresh /tmp/vfsbench.XXXXXX and unmounted by an EXIT trap, also on
# failure or Ctrl-C; the trap then checks /proc/mounts and says if anything is left. The memory
# cgroups of the pressure section (/sys/fs/cgroup/memory/vfsbench-PID-*) are removed by the
# same trap, after killing whatever is left in them.
set -euo pipefail

readonly PKGS=(fio fuse-overlayfs gnuplot-nox jq meson ninja-build pkg-config gcc libfuse3-dev
	libbsd-dev check fuse3 attr)
readonly ALL_GROUPS="fio small dirops glyph mark purge limit scale tree flood pressure mem"

prog=${0##*/}
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $prog [--quick] [--reps N] [--only GROUP[,GROUP...]] [--out DIR]

Benchmark volatilefs against tmpfs and fuse-overlayfs (over tmpfs); print medians and
ratios as a markdown table, saved with the plot of an RSS flood in DIR (default
bench/results). Needs root. --quick: fewer repetitions and smaller sizes (under 2 minutes).
GROUPs: $ALL_GROUPS
EOF
}

# ---------------------------------------------------------------------------------------------
# Installing and building

build() {
	say "building volatilefs (release) in $BUILD"
	if [[ ! -f $BUILD/meson-private/coredata.dat ]]; then
		meson setup "$BUILD" -Dbuildtype=release -Dtests=disabled >"$WORK/build.log" 2>&1 ||
			{ cat "$WORK/build.log" >&2; die "meson setup failed"; }
	fi
	meson compile -C "$BUILD" >>"$WORK/build.log" 2>&1 ||
		{ tail -n 40 "$WORK/build.log" >&2; die "the build failed (log above)"; }
	VFS=$BUILD/src/daemon/volatilefs
	[[ -x $VFS ]] || die "the build did not produce $VFS"

	HB=$BUILD/bench
	mkdir -p "$HB"
	local p libs
	for p in smallfiles lookupbench glyphbench markbench purgebench rsswatch pressurebench fillbench nullfuse; do
		libs=()
		case $p in
		glyphbench | markbench | purgebench)
			# shellcheck disable=SC2054 # the commas belong to the linker option
			libs=(-L"$BUILD/src/lib" -lvolatilefs -Wl,-rpath,"$BUILD/src/lib")
			;;
		nullfuse)
			# shellcheck disable=SC2207 # pkg-config's words are the flags
			libs=($(pkg-config --cflags --libs fuse3))
			;;
		esac
		gcc -O2 -g -std=gnu11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 -Wall -Wextra -Werror \
			-I"$ROOT/include" -o "$HB/$p" "$ROOT/bench/$p.c" "${libs[@]}" -lpthread ||
			die "cannot compile bench/$p.c"
	done
}

# ---------------------------------------------------------------------------------------------
# Mounts: every one is recorded in MOUNTS (and its daemon in PIDS) and undone by cleanup.

MOUNTS=()
declare -A PID_OF=()
WATCH_PID=
WORK=

is_mounted() { awk -v mp="$1" '$2 == mp { found = 1 } END { exit !found }' /proc/mounts; }

# Wait for a FUSE daemon ($2) to have mounted $1.
wait_mounted() {
	local i
	for ((i = 0; i < 200; i++)); do
		is_mounted "$1" && return 0
		kill -0 "$2" 2>/dev/null || die "the daemon for $1 exited (see $WORK/daemons.log)"
		sleep 0.05
	done
	die "nothing mounted at $1 after 10 s"
}

mount_tmpfs() { # MOUNTPOINT SIZE
	mkdir -p "$1"
	mount -t tmpfs -o "size=$2,mode=1777" vfsbench "$1"
	MOUNTS+=("$1")
}

LAST_PID=
mount_vfs() { # MOUNTPOINT OPTIONS [CGROUP: the daemon runs in that v1 memory cgroup]
	mkdir -p "$1"
	echo "== volatilefs -o $2 $1${3:+ (in $3)}" >>"$WORK/daemons.log"
	if [[ -n ${3:-} ]]; then
		# shellcheck disable=SC2016 # for the inner sh, which becomes the daemon
		sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$3" \
			"$VFS" -f -o "$2" "$1" >>"$WORK/daemons.log" 2>&1 &
	else
		"$VFS" -f -o "$2" "$1" >>"$WORK/daemons.log" 2>&1 &
	fi
	LAST_PID=$!
	PID_OF[$1]=$LAST_PID
	MOUNTS+=("$1")
	wait_mounted "$1" "$LAST_PID"
}

mount_null() { # MOUNTPOINT: bench/nullfuse, a FUSE daemon that keeps nothing
	mkdir -p "$1"
	echo "== nullfuse $1" >>"$WORK/daemons.log"
	"$HB/nullfuse" "$1" >>"$WORK/daemons.log" 2>&1 &
	LAST_PID=$!
	PID_OF[$1]=$LAST_PID
	MOUNTS+=("$1")
	wait_mounted "$1" "$LAST_PID"
}

mount_peer() { # MOUNTPOINT LAYERDIR (lower, upper and work are made in LAYERDIR)
	mkdir -p "$1" "$2/lower" "$2/upper" "$2/work"
	echo "== fuse-overlayfs $1" >>"$WORK/daemons.log"
	fuse-overlayfs -f -o "lowerdir=$2/lower,upperdir=$2/upper,workdir=$2/work" "$1" \
		>>"$WORK/daemons.log" 2>&1 &
	LAST_PID=$!
	PID_OF[$1]=$LAST_PID
	MOUNTS+=("$1")
	wait_mounted "$1" "$LAST_PID"
}

# Unmount $1 (FUSE or not) and wait for its daemon; lazily if it is busy.
unmount_one() {
	local mp=$1 pid i
	if is_mounted "$mp"; then
		if [[ -n ${PID_OF[$mp]:-} ]]; then
			fusermount3 -u -- "$mp" 2>/dev/null || umount -- "$mp" 2>/dev/null ||
				umount -l -- "$mp" || true
		else
			umount -- "$mp" 2>/dev/null || umount -l -- "$mp" || true
		fi
	fi
	pid=${PID_OF[$mp]:-}
	if [[ -n $pid ]]; then
		for ((i = 0; i < 200; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "daemon $pid of $mp still running after unmount: SIGTERM"
			kill -TERM "$pid" 2>/dev/null || true
		fi
		wait "$pid" 2>/dev/null || true
		unset "PID_OF[$mp]"
	fi
	local -a rest=()
	for i in "${MOUNTS[@]}"; do [[ $i == "$mp" ]] || rest+=("$i"); done
	MOUNTS=("${rest[@]}")
}

# Memory cgroups (v1) of the pressure section: every one is recorded in CGROUPS and removed
# by cleanup.
readonly CGROOT=/sys/fs/cgroup/memory
CGROUPS=()
LAST_CG=
cg_make() { # NAME LIMIT: a fresh memory cgroup, its path in LAST_CG
	LAST_CG=$CGROOT/vfsbench-$$-$1
	mkdir "$LAST_CG"
	CGROUPS+=("$LAST_CG")
	echo "$2" >"$LAST_CG/memory.limit_in_bytes"
}

# Kill whatever is left in cgroup $1 and remove it.
cg_remove() {
	local cg=$1 i p
	if [[ -d $cg ]]; then
		for ((i = 0; i < 50; i++)); do
			[[ -s $cg/cgroup.procs ]] || break
			for p in $(<"$cg/cgroup.procs"); do kill -KILL "$p" 2>/dev/null || true; done
			sleep 0.1
		done
		rmdir -- "$cg" 2>/dev/null || say "could not remove the cgroup $cg"
	fi
	local -a rest=()
	for i in "${CGROUPS[@]}"; do [[ $i == "$cg" ]] || rest+=("$i"); done
	CGROUPS=("${rest[@]}")
}

# The 4 GiB file the churn rows stream (on the disk, under /var/tmp), removed by cleanup.
STREAM_FILE=

cleanup() {
	local rc=$? i left
	trap - EXIT INT TERM
	if [[ -n $WATCH_PID ]]; then
		kill "$WATCH_PID" 2>/dev/null || true
		wait "$WATCH_PID" 2>/dev/null || true
	fi
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		unmount_one "${MOUNTS[i]}"
	done
	for ((i = ${#CGROUPS[@]} - 1; i >= 0; i--)); do
		cg_remove "${CGROUPS[i]}"
	done
	[[ -z $STREAM_FILE ]] || rm -f -- "$STREAM_FILE"
	if [[ $rc -ne 0 && -n $WORK ]]; then
		for i in daemons helpers; do
			[[ -s $WORK/$i.log ]] || continue
			say "last lines of the $i log:"
			tail -n 15 "$WORK/$i.log" >&2
		done
	fi
	if [[ -n $WORK ]]; then
		left=$(awk -v w="$WORK/" 'index($2, w) == 1 { print $2 }' /proc/mounts)
		if [[ -n $left ]]; then
			say "still mounted (not removing $WORK): $left"
			rc=1
		else
			rm -rf -- "$WORK"
		fi
	fi
	exit "$rc"
}

# ---------------------------------------------------------------------------------------------
# Recording

RAW=
REP=0
rec() { # KEY FS VALUE
	[[ $3 =~ ^-?[0-9]+([.][0-9]+)?([eE][-+]?[0-9]+)?$ ]] || die "not a number for $1 on $2: '$3'"
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$REP" "$3" >>"$RAW"
}

# Run a helper; its "key value" lines land in $WORK/out.
helper() {
	if ! "$@" >"$WORK/out" 2>>"$WORK/helpers.log"; then
		cat "$WORK/out" >&2
		tail -n 5 "$WORK/helpers.log" >&2
		die "failed: $*"
	fi
}
val() { # KEY: the value of KEY in $WORK/out
	awk -v k="$1" '$1 == k { print $2; f = 1; exit } END { exit !f }' "$WORK/out" ||
		die "no $1 in the output of a helper"
}

drop_caches() { # 3: page cache, dentries and inodes; 2: dentries and inodes
	sync
	echo "$1" >/proc/sys/vm/drop_caches
}

declare -A MNT=()
FSES=(tmpfs vfs pt peer)
VFS_PID=

# ---------------------------------------------------------------------------------------------
# Workloads. Each takes the filesystem key (tmpfs, vfs, peer) and works in its mount.

fio_json() { # FIELD (jq path below .jobs[0])
	jq -r ".jobs[0].$1" "$WORK/fio.json"
}

run_fio() {
	fio --output-format=json --output="$WORK/fio.json" --name=bench --ioengine=psync \
		--fallocate=none "$@" >/dev/null 2>>"$WORK/helpers.log" ||
		die "fio failed: $*"
}

wl_fio() {
	local fs=$1 d=${MNT[$1]}/fio
	mkdir -p "$d"
	run_fio --filename="$d/f" --size="$FIO_SIZE" --rw=write --bs=1M --end_fsync=1
	rec seqwrite "$fs" "$(fio_json write.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
	drop_caches 3
	run_fio --filename="$d/f" --size="$FIO_SIZE" --rw=read --bs=1M
	rec seqread_cold "$fs" "$(fio_json read.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
	run_fio --filename="$d/f" --size="$FIO_SIZE" --rw=read --bs=1M --invalidate=0
	rec seqread_warm "$fs" "$(fio_json read.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
	drop_caches 3
	run_fio --filename="$d/f" --size="$FIO_SIZE" --rw=randread --bs=4k --time_based \
		--runtime="$RAND_SECS"
	rec randread "$fs" "$(fio_json read.iops | awk '{ printf "%.1f", $1 }')"
	rec randread_p50 "$fs" "$(fio_json 'read.clat_ns.percentile."50.000000"' |
		awk '{ printf "%.2f", $1 / 1000 }')"
	rec randread_p99 "$fs" "$(fio_json 'read.clat_ns.percentile."99.000000"' |
		awk '{ printf "%.2f", $1 / 1000 }')"
	rm -rf -- "$d"
	if [[ $fs == vfs ]]; then
		# What filling fresh memory costs here, by each way (the write path's bound).
		helper "$HB/fillbench" 3
		rec fill_populate "$fs" "$(val anon_populate_memcpy_mib_s)"
		rec fill_uffd "$fs" "$(val anon_uffdio_copy_mib_s)"
		rec fill_memfd "$fs" "$(val memfd_pwrite_populate_read_mib_s)"
		# The same sequential rows on a FUSE daemon that keeps nothing: the bound.
		local null=$WORK/null vw vr
		vw=$(awk -F'\t' -v r="$REP" '$1 == "seqwrite" && $2 == "vfs" && $3 == r { v = $4 }
			END { print v }' "$RAW")
		vr=$(awk -F'\t' -v r="$REP" '$1 == "seqread_cold" && $2 == "vfs" && $3 == r { v = $4 }
			END { print v }' "$RAW")
		mount_null "$null"
		run_fio --filename="$null/f" --size="$FIO_SIZE" --rw=write --bs=1M --end_fsync=1
		rec null_seqwrite "$fs" "$(fio_json write.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
		rec null_seqwrite_ratio "$fs" "$(fio_json write.bw_bytes |
			awk -v v="$vw" '{ printf "%.3f", v / ($1 / 1048576) }')"
		drop_caches 3
		run_fio --filename="$null/f" --size="$FIO_SIZE" --rw=read --bs=1M
		rec null_seqread_cold "$fs" "$(fio_json read.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
		rec null_seqread_cold_ratio "$fs" "$(fio_json read.bw_bytes |
			awk -v v="$vr" '{ printf "%.3f", v / ($1 / 1048576) }')"
		unmount_one "$null"
	fi
	if [[ $fs == pt ]]; then
		# On a mount that holds a marked file (of its own): a file with no mark,
		# which the kernel writes itself, then a file marked whole, whose write(2)s
		# go through the daemon (a write into a volatile range: volatilefs(8),
		# PASSTHROUGH).
		local mk=$WORK/ptmarked
		mount_vfs "$mk" memory_limit=2G,passthrough=on
		: >"$mk/m"
		setfattr -n user.volatile.mark -v all "$mk/m"
		run_fio --filename="$mk/f" --size="$FIO_SIZE" --rw=write --bs=1M --end_fsync=1
		rec seqwrite_marked_mount "$fs" "$(fio_json write.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
		rm -f "$mk/f"
		# fio unlinks and creates again a file shorter than --size, which would
		# drop the mark: the file has its size before it is marked.
		truncate -s "$FIO_SIZE" "$mk/v"
		setfattr -n user.volatile.mark -v all "$mk/v"
		run_fio --filename="$mk/v" --size="$FIO_SIZE" --rw=write --bs=1M --end_fsync=1
		rec seqwrite_volatile "$fs" "$(fio_json write.bw_bytes | awk '{ printf "%.1f", $1 / 1048576 }')"
		unmount_one "$mk"
	fi
}

mem_used_kib() { awk '/^MemTotal:/ { t = $2 } /^MemFree:/ { f = $2 } END { print t - f }' /proc/meminfo; }
shmem_kib() { awk '/^Shmem:/ { print $2 }' /proc/meminfo; }
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# The mem group: per filesystem, a 1 GiB file written and read once, what the machine holds.
phase_mem() {
	local fs mp pid u0 u1 s0 s1 r0 r1 cache rep
	for ((rep = 1; rep <= REPS; rep++)); do
		REP=$rep
		for fs in tmpfs vfs pt; do
			mp=$WORK/mem-$fs pid=
			case $fs in
			tmpfs) mount_tmpfs "$mp" 2G ;;
			vfs) mount_vfs "$mp" memory_limit=2G,passthrough=off && pid=$LAST_PID ;;
			pt) mount_vfs "$mp" memory_limit=2G,passthrough=on && pid=$LAST_PID ;;
			esac
			drop_caches 3
			sleep 2
			drop_caches 3
			u0=$(mem_used_kib) s0=$(shmem_kib) r0=0 r1=0 cache=0
			[[ -z $pid ]] || r0=$(rss_kib "$pid")
			dd if=/dev/zero of="$mp/f" bs=1M count=1024 status=none
			cat "$mp/f" >/dev/null
			sleep 1 # the daemon's monitor and the kernel settle
			u1=$(mem_used_kib) s1=$(shmem_kib)
			[[ -z $pid ]] || r1=$(rss_kib "$pid")
			[[ $fs != vfs ]] || cache=$(fincore --bytes --noheadings --output RES "$mp/f" |
				awk '{ print $1 / 1024 }')
			rec mem1g_total "$fs" $(((u1 - u0) / 1024))
			rec mem1g_parts "$fs" "$(awk -v r=$((r1 - r0)) -v s=$((s1 - s0)) -v c="$cache" \
				'BEGIN { printf "%d", (r + s + c) / 1024 }')"
			[[ $fs == tmpfs ]] || rec mem1g_rss "$fs" $(((r1 - r0) / 1024))
			rec mem1g_shmem "$fs" $(((s1 - s0) / 1024))
			[[ $fs != vfs ]] || rec mem1g_fusecache "$fs" "$(awk -v c="$cache" 'BEGIN { printf "%d", c / 1024 }')"
			rm -f -- "$mp/f"
			unmount_one "$mp"
		done
	done
}

wl_small() {
	local fs=$1 k
	helper "$HB/smallfiles" phases "${MNT[$fs]}" "$SF_N"
	for k in create stat restat read unlink; do rec "sf_$k" "$fs" "$(val "$k")"; done
}

wl_dirops() {
	local fs=$1 d=${MNT[$1]}/dirops mode t
	for mode in miss hit readdir; do
		for t in 1 4; do
			rm -rf -- "$d"
			mkdir -p "$d"
			helper "$HB/lookupbench" "$d" "$mode" "$t" "$DIROPS_SECS" 2000
			rec "dirops_${mode}_$t" "$fs" "$(val ops_per_s)"
		done
	done
	rm -rf -- "$d"
}

wl_glyph() {
	local fs=$1 f=${MNT[$1]}/atlas plain vol noop
	helper "$HB/glyphbench" "$f" "$GLYPH_FRAMES" plain "$REP"
	plain=$(val frames_per_s)
	rec glyph_plain "$fs" "$plain"
	if [[ $fs == vfs ]]; then
		# Batched, as a compositor would: per frame one unmark, one purged listing, one mark.
		helper "$HB/glyphbench" "$f" "$GLYPH_FRAMES" volatile "$REP"
		vol=$(val ns_per_call)
		rec glyph_vol "$fs" "$(val frames_per_s)"
		rec glyph_vol_ratio "$fs" "$(awk -v a="$(val frames_per_s)" -v b="$plain" \
			'BEGIN { printf "%.3f", a / b }')"
		rec glyph_calls "$fs" "$(val vol_calls_per_s)"
		rec glyph_calls_frame "$fs" "$(val calls_per_frame)"
		rec glyph_call_ns "$fs" "$vol"
		# The same frames with a no-op round trip in place of each of those calls.
		helper "$HB/glyphbench" "$f" "$GLYPH_FRAMES" noop "$REP"
		noop=$(val ns_per_call)
		rec glyph_noop_ns "$fs" "$noop"
		rec glyph_call_noops "$fs" "$(awk -v a="$vol" -v b="$noop" \
			'BEGIN { printf "%.3f", a / b }')"
		# One volatilefs_batch ioctl a frame: its unmarks with a purged bit each,
		# and the marks of the entries that went idle.
		helper "$HB/glyphbench" "$f" "$GLYPH_FRAMES" batch "$REP"
		rec glyph_batch "$fs" "$(val frames_per_s)"
		rec glyph_batch_ratio "$fs" "$(awk -v a="$(val frames_per_s)" -v b="$plain" \
			'BEGIN { printf "%.3f", a / b }')"
		rec glyph_batch_call_ns "$fs" "$(val ns_per_call)"
		rec glyph_batch_call_noops "$fs" "$(awk -v a="$(val ns_per_call)" -v b="$noop" \
			'BEGIN { printf "%.3f", a / b }')"
		# One ioctl per entry, as the benchmark did before.
		helper "$HB/glyphbench" "$f" "$GLYPH_FRAMES" each "$REP"
		rec glyph_each "$fs" "$(val frames_per_s)"
		rec glyph_each_call_ns "$fs" "$(val ns_per_call)"
		# Batched, on a mount whose limit is below the atlas: purges, regenerations.
		helper "$HB/glyphbench" "${MNT[glyphlim]}/atlas" "$GLYPH_FRAMES" volatile "$REP"
		rec glyph_purge "$fs" "$(val frames_per_s)"
		rec glyph_purge_ratio "$fs" "$(awk -v a="$(val frames_per_s)" -v b="$plain" \
			'BEGIN { printf "%.3f", a / b }')"
		rec glyph_purge_regen "$fs" "$(awk -v a="$(val regenerated)" -v b="$GLYPH_FRAMES" \
			'BEGIN { printf "%.2f", a / b }')"
		rec glyph_purge_regen_ns "$fs" "$(val ns_per_regen)"
		rm -f -- "${MNT[glyphlim]}/atlas"
		helper "$HB/glyphbench" "${MNT[glyphlim]}/atlas" "$GLYPH_FRAMES" batch "$REP"
		rec glyph_batch_purge "$fs" "$(val frames_per_s)"
		rec glyph_batch_purge_ratio "$fs" "$(awk -v a="$(val frames_per_s)" -v b="$plain" \
			'BEGIN { printf "%.3f", a / b }')"
		rec glyph_batch_purge_regen "$fs" "$(awk -v a="$(val regenerated)" \
			-v b="$GLYPH_FRAMES" 'BEGIN { printf "%.2f", a / b }')"
		rm -f -- "${MNT[glyphlim]}/atlas"
	fi
	rm -f -- "$f"
}

wl_mark() {
	local fs=$1 f=${MNT[$1]}/markbench
	if [[ $fs == vfs ]]; then
		helper "$HB/markbench" pairs "$f" "$PAIR_SECS"
		rec noop "$fs" "$(val noop_per_s)"
		rec noop_ioctl "$fs" "$(val ioctl_noop_per_s)"
		rec mark_ioctl "$fs" "$(val ioctl_pairs_per_s)"
		rec mark_xattr "$fs" "$(val xattr_pairs_per_s)"
		rec mark_ioctl_noops "$fs" "$(val ioctl_pair_in_noops)"
		rec mark_xattr_noops "$fs" "$(val xattr_pair_in_noops)"
	else
		helper "$HB/markbench" noop "$f" "$PAIR_SECS"
		rec noop "$fs" "$(val noop_per_s)"
	fi
}

wl_purge() {
	[[ $1 == vfs ]] || return 0
	local d=${MNT[vfs]}/purge
	mkdir -p "$d"
	helper "$HB/purgebench" fill "$d" "$PURGE_SIZE" 16 1M
	helper "$HB/purgebench" purge "${MNT[vfs]}" "$VFS_PID" "$PURGE_SIZE"
	rec purge "$1" "$(val gib_per_s)"
	rec purge_rss_fell "$1" "$(val rss_fell)"
	rec purge_rss_freed "$1" "$(awk '$1 == "rss_before" { b = $2 } $1 == "rss_after" { a = $2 }
		END { printf "%.1f", (b - a) / 1048576 }' "$WORK/out")"
	rm -rf -- "$d"
}

wl_limit() {
	[[ $1 == vfs ]] || return 0
	local mp=$WORK/vlimit
	mount_vfs "$mp" memory_limit=512M,passthrough=off
	helper "$HB/purgebench" fill "$mp" 400M 8 1M
	helper "$HB/purgebench" limit "$mp" "$LAST_PID" 256M
	rec limit_ms "$1" "$(val under_ms)"
	rec limit_set_ms "$1" "$(val setxattr_ms)"
	unmount_one "$mp"
}

wl_scale() {
	[[ $1 == vfs ]] || return 0
	local n
	for n in "${SCALE_SIZES[@]}"; do
		helper "$HB/markbench" scale "${MNT[vfs]}/scale" "${MNT[vfs]}" "$n" "$SCALE_SAMPLE" \
			"$VFS_PID"
		rec "scale_build_$n" vfs "$(val build_ns)"
		rec "scale_mark_$n" vfs "$(val mark_ns)"
		rec "scale_unmark_$n" vfs "$(val unmark_ns)"
		rec "scale_purge_$n" vfs "$(val purge_ns)"
		# VmRSS moves in steps too coarse for a thousand units of ~100 bytes
		((n < 10000)) || rec "scale_mem_$n" vfs "$(val bytes_per_unit)"
	done
}

# A tree of TREE_N empty files in 16 directories on each filesystem, on mounts of their own;
# then, each repetition, stat of random names after dropping dentries and inodes. The
# fuse-overlayfs tree is made in its upperdir (on tmpfs) before it is mounted: through FUSE it
# would take longer than the whole benchmark (about 2,500 creates/s); the files are then upper
# files, exactly as if created through the mount.
phase_tree() {
	local fs rep tree_pid
	MNT[tmpfs]=$WORK/ttree MNT[vfs]=$WORK/vtree MNT[peer]=$WORK/ptree
	mount_tmpfs "$WORK/ttree" 16G
	mount_vfs "$WORK/vtree" memory_limit=4G,passthrough=off
	tree_pid=$LAST_PID
	mount_tmpfs "$WORK/ptree-layers" 16G
	mkdir -p "$WORK/ptree-layers/upper"
	REP=1
	say "tree: creating $TREE_N files on tmpfs"
	helper "$HB/smallfiles" mktree "$WORK/ttree" "$TREE_N" 16
	rec tree_create tmpfs "$(val mktree)"
	say "tree: creating $TREE_N files on volatilefs"
	helper "$HB/smallfiles" mktree "$WORK/vtree" "$TREE_N" 16
	rec tree_create vfs "$(val mktree)"
	say "tree: creating $TREE_N files in the fuse-overlayfs upperdir (tmpfs)"
	helper "$HB/smallfiles" mktree "$WORK/ptree-layers/upper" "$TREE_N" 16
	mount_peer "$WORK/ptree" "$WORK/ptree-layers"
	for ((rep = 1; rep <= REPS; rep++)); do
		REP=$rep
		for fs in tmpfs vfs peer; do # the tree is on the classic path only
			drop_caches 2
			sleep 1 # let the daemons take the FORGETs that follow
			helper "$HB/smallfiles" stattree "${MNT[$fs]}" "$TREE_N" 16 "$TREE_STATS" "$rep"
			rec tree_stat "$fs" "$(val stattree)"
		done
		# purge all with files but no volatile unit at all: what does the file count cost?
		helper "$HB/purgebench" purge "$WORK/vtree" "$tree_pid" 0
		rec tree_purge_ms vfs "$(awk '$1 == "purge_s" { printf "%.3f", $2 * 1000 }' "$WORK/out")"
	done
	unmount_one "$WORK/ptree"
	unmount_one "$WORK/ptree-layers"
	unmount_one "$WORK/vtree"
	unmount_one "$WORK/ttree"
}

# The daemon's VmRSS every 10 ms while FLOOD_SIZE of volatile files is written under a 256M
# limit, plotted with the limit and the low mark.
phase_flood() {
	local mp=$WORK/vflood tsv=$OUT/rss-flood.tsv limit low t0 ts te
	mount_vfs "$mp" memory_limit=256M,passthrough=off
	limit=$(getfattr --absolute-names --only-values -n user.volatile.stats "$mp" | awk -F= '$1 == "memory_limit" { print $2 / 1048576 }')
	low=$(getfattr --absolute-names --only-values -n user.volatile.stats "$mp" | awk -F= '$1 == "memory_low" { print $2 / 1048576 }')
	t0=$(date +%s.%N)
	"$HB/rsswatch" "$LAST_PID" 10 >"$tsv" &
	WATCH_PID=$!
	sleep 0.5
	ts=$(date +%s.%N)
	REP=1
	helper "$HB/purgebench" flood "$mp" "$FLOOD_SIZE" 16M
	te=$(date +%s.%N)
	sleep 1
	kill "$WATCH_PID"
	wait "$WATCH_PID" 2>/dev/null || true
	WATCH_PID=
	rec flood_rate vfs "$(val flood_mib_per_s)"
	rec flood_errors vfs "$(val write_errors)"
	rec flood_peak vfs "$(awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { printf "%.1f", m }' "$tsv")"
	rec flood_over_ms vfs "$(awk -v l="$limit" '$2 > l { n++ } END { printf "%d", n * 10 }' "$tsv")"
	unmount_one "$mp"
	FLOOD_START=$(awk -v a="$t0" -v b="$ts" 'BEGIN { printf "%.3f", b - a }')
	FLOOD_END=$(awk -v a="$t0" -v b="$te" 'BEGIN { printf "%.3f", b - a }')
	plot_flood "$tsv" "$limit" "$low"
}

# DESIGN section 10 on a v1 memory cgroup limited to PRESS_LIMIT_MIB: the time of a plain program
# allocating PRESS_HOG MiB at full speed (bench/pressurebench.c, the allocation of
# tests/mount/memhog.c) alone in the cgroup, next to 1 GiB of MADV_FREE memory, and next to a
# volatilefs daemon (memory_limit=4G, far above: only the cgroup can make it purge) holding
# 1 GiB of volatile data in 16 files of 64 MiB plus a 64 MiB ordinary file, all written from
# outside the cgroup; with the daemon, how fast it gets the cgroup back out of its headroom.
# A fresh cgroup for each run, a fresh daemon each repetition.
# Churn, in the same repetitions: a 4 GiB file written on the disk (/var/tmp), dropped from the
# page cache and streamed by a child in the cgroup (what `cat` does) next to 512 MiB of MADV_FREE
# memory, then next to a volatilefs daemon holding 512 MiB of volatile data in 8 files of
# 64 MiB and the 64 MiB ordinary file: the fraction of each kept afterwards.
phase_pressure() {
	local rep mp=$WORK/vpress madv vfs churn=1
	if [[ ! -w $CGROOT/cgroup.procs || ! -e $CGROOT/memory.limit_in_bytes ]]; then
		say "pressure: skipped: no v1 memory controller at $CGROOT"
		return 0
	fi
	head -c 64M /dev/urandom >"$WORK/ordinary"
	: >"$WORK/pressure.txt"
	case $(stat -f -c %T /var/tmp) in
	tmpfs | ramfs)
		say "pressure: no churn rows: /var/tmp is not on a disk"
		churn=0
		;;
	*)
		STREAM_FILE=$(mktemp /var/tmp/vfsbench-stream.XXXXXX)
		say "pressure: writing the 4 GiB file to stream, $STREAM_FILE"
		dd if=/dev/zero of="$STREAM_FILE" bs=1M count=4096 conv=fsync status=none
		;;
	esac
	for ((rep = 1; rep <= PRESS_REPS; rep++)); do
		REP=$rep
		say "pressure: repetition $rep of $PRESS_REPS"
		cg_make "alone-$rep" $((PRESS_LIMIT_MIB << 20))
		press_helper madvfree "$LAST_CG" 0 "$PRESS_HOG"
		press_hog alone
		cg_remove "$LAST_CG"

		cg_make "madvfree-$rep" $((PRESS_LIMIT_MIB << 20))
		press_helper madvfree "$LAST_CG" 1024 "$PRESS_HOG"
		press_hog madv
		madv=$HOG_MS
		rec press_madv_reclaimed vfs "$(val reclaimed_mib)"
		cg_remove "$LAST_CG"

		cg_make "vfs-$rep" $((PRESS_LIMIT_MIB << 20))
		mount_vfs "$mp" memory_limit=4G,passthrough=off "$LAST_CG"
		cp "$WORK/ordinary" "$mp/ordinary"
		mkdir "$mp/vol"
		helper "$HB/purgebench" fill "$mp/vol" 1G 16 64M
		press_helper react "$LAST_CG" "$mp" 0 "$PRESS_HOG"
		press_hog vfs
		vfs=$HOG_MS
		[[ -n $madv && -n $vfs ]] &&
			rec press_ratio vfs "$(awk -v a="$vfs" -v b="$madv" 'BEGIN { printf "%.3f", a / b }')"
		[[ $(val entries) -eq 0 ]] || rec press_up_ms vfs "$(val up_ms)"
		[[ $(val first_purge_ms) == -1.000 ]] || rec press_purge_ms vfs "$(val first_purge_ms)"
		[[ $(val out_ms) == -1.000 ]] || rec press_out_ms vfs "$(val out_ms)"
		[[ $(val out_max_ms) == -1.000 ]] || rec press_out_max_ms vfs "$(val out_max_ms)"
		rec press_entries vfs "$(val entries)"
		rec press_purged_mib vfs "$(val pressure_mib)"
		rec press_poll_max_ms vfs "$(val poll_max_ms)"
		say "pressure: memhog $PRESS_HOG MiB: $(awk -v r="$REP" '$3 == r && $1 ~ /^press_(alone|madv|vfs)_ms$/ { printf "%s %s ms  ", $1, $4 }' "$RAW")" \
			"ratio $(awk -v r="$REP" '$3 == r && $1 == "press_ratio" { print $4 }' "$RAW");" \
			"into the headroom -> first purge $(val first_purge_ms) ms, -> back out $(val out_ms) ms" \
			"(longest $(val out_max_ms) ms, $(val entries) times), OOM kills $(val oom_kills)"
		kill -0 "$LAST_PID" 2>/dev/null || say "pressure: the daemon died (see $WORK/daemons.log)"
		cmp -s "$WORK/ordinary" "$mp/ordinary" || say "pressure: the 64 MiB ordinary file changed"
		unmount_one "$mp"
		cg_remove "$LAST_CG"
		((churn)) || continue

		cg_make "churn-madv-$rep" $((PRESS_LIMIT_MIB << 20))
		press_helper churn "$LAST_CG" "$STREAM_FILE" 512
		press_churn madv
		cg_remove "$LAST_CG"

		cg_make "churn-vfs-$rep" $((PRESS_LIMIT_MIB << 20))
		mount_vfs "$mp" memory_limit=4G,passthrough=off "$LAST_CG"
		cp "$WORK/ordinary" "$mp/ordinary"
		mkdir "$mp/vol"
		helper "$HB/purgebench" fill "$mp/vol" 512M 8 64M
		press_helper churn-vfs "$LAST_CG" "$STREAM_FILE" "$mp"
		press_churn vfs
		say "pressure: 4 GiB streamed through the cgroup: $(awk -v r="$REP" '$3 == r && $1 ~ /^press_churn_(madv|vfs)_kept$/ { printf "%s %s  ", $1, $4 }' "$RAW")" \
			"(volatilefs pressure purges $(val pressure_purges), OOM kills $(val oom_kills))"
		kill -0 "$LAST_PID" 2>/dev/null || say "pressure: the daemon died (see $WORK/daemons.log)"
		cmp -s "$WORK/ordinary" "$mp/ordinary" || say "pressure: the 64 MiB ordinary file changed"
		unmount_one "$mp"
		cg_remove "$LAST_CG"
	done
	cp "$WORK/pressure.txt" "$OUT/pressure-raw.txt"
	if [[ -n $STREAM_FILE ]]; then
		rm -f -- "$STREAM_FILE"
		STREAM_FILE=
	fi
}

# Record the churn figures of the last helper output as press_churn_KEY_*.
press_churn() { # KEY
	rec "press_churn_$1_kept" vfs "$(awk -v k="$(val kept)" 'BEGIN { printf "%.2f", k * 100 }')"
	rec "press_churn_$1_oom" vfs "$(val oom_kills)"
	rec "press_churn_$1_stream_ms" vfs "$(val stream_ms)"
	[[ $(val failcnt) -gt 0 ]] || say "pressure: the stream never filled the cgroup ($1): no churn"
}

# pressurebench ARGS..., its output kept in $WORK/pressure.txt too.
press_helper() {
	helper "$HB/pressurebench" "$@"
	{
		echo "== repetition $REP: pressurebench $*"
		cat "$WORK/out"
	} >>"$WORK/pressure.txt"
}

# Record the hog's figures of the last helper output as press_KEY_*; HOG_MS: its time when it
# completed, empty when it did not (killed, or malloc failed).
HOG_MS=
press_hog() { # KEY
	rec "press_$1_oom" vfs "$(val oom_kills)"
	HOG_MS=
	if [[ $(val hog_ok) == 1 ]]; then
		HOG_MS=$(val hog_ms)
		rec "press_$1_ms" vfs "$HOG_MS"
	else
		rec "press_$1_failed" vfs 1
		say "pressure: memhog did not complete ($1)"
	fi
}

plot_flood() { # TSV LIMIT_MIB LOW_MIB
	local term='pngcairo size 1100,600 font "DejaVu Sans,11"'
	gnuplot -e 'set terminal pngcairo' >/dev/null 2>&1 || term='png size 1100,600'
	gnuplot >>"$WORK/helpers.log" 2>&1 <<EOF || die "gnuplot failed (see $WORK/helpers.log)"
set terminal $term
set output '$OUT/rss-flood.png'
set title "volatilefs: daemon VmRSS while writing $FLOOD_SIZE of volatile files (16 MiB each, marked whole)\\nmemory\\\\_limit=${2} MiB, sampled every 10 ms"
set xlabel 'time (s)'
set ylabel 'VmRSS (MiB)'
set grid
set key bottom right box opaque
set yrange [0:${2} * 1.4]
set arrow 1 from $FLOOD_START, graph 0 to $FLOOD_START, graph 1 nohead dt 3 lc rgb 'gray40'
set arrow 2 from $FLOOD_END, graph 0 to $FLOOD_END, graph 1 nohead dt 3 lc rgb 'gray40'
set label 1 'writing starts' at $FLOOD_START, graph 0.96 offset 0.5,0 font ',9'
set label 2 'writing ends' at $FLOOD_END, graph 0.96 offset 0.5,0 font ',9'
plot '$1' using 1:2 with lines lw 2 lc rgb '#1f5fa8' title 'daemon VmRSS', \
     ${2} with lines dt 2 lw 2 lc rgb '#c0392b' title sprintf('memory\\_limit (%.0f MiB)', ${2}), \
     ${3} with lines dt 4 lw 2 lc rgb '#e67e22' title sprintf('memory\\_low (%.1f MiB)', ${3})
EOF
}

# ---------------------------------------------------------------------------------------------
# The table

# key|label|unit|better (up: more is better, down: less is better)
rows() {
	local n
	cat <<EOF
seqwrite|fio sequential write, $FIO_SIZE in 1 MiB blocks|MiB/s|up
mem1g_parts|memory for a 1 GiB file written and read once: daemon VmRSS + Shmem + FUSE page cache|MiB|down
mem1g_total|... MemTotal - MemFree, after|MiB|down
mem1g_rss|... of it the daemon's VmRSS|MiB|down
mem1g_shmem|... shared memory (Shmem: tmpfs pages, backing files)|MiB|down
mem1g_fusecache|... the FUSE file's own page cache (classic path)|MiB|down
seqread_cold|fio sequential read, 1 MiB blocks, cold page cache|MiB/s|up
seqread_warm|fio sequential read, 1 MiB blocks, warm page cache|MiB/s|up
randread|fio random read 4 KiB, cold page cache, ${RAND_SECS} s|IOPS|up
randread_p50|... median latency of one read|µs|down
randread_p99|... 99th percentile latency|µs|down
null_seqwrite|a FUSE daemon that keeps nothing (bench/nullfuse.c): sequential write, 1 MiB blocks|MiB/s|up
null_seqwrite_ratio|... volatilefs's sequential write over it, same repetition|x|up
null_seqread_cold|... sequential read, cold page cache|MiB/s|up
null_seqread_cold_ratio|... volatilefs's cold sequential read over it, same repetition|x|up
fill_populate|fresh memory, 512 MiB: MADV_POPULATE_WRITE + memcpy (the arena before)|MiB/s|up
fill_uffd|... UFFDIO_COPY into a userfaultfd range (the arena now)|MiB/s|up
fill_memfd|... pwrite into a memfd + MADV_POPULATE_READ (a shmem arena)|MiB/s|up
sf_create|small files: create + write 4 KiB + close ($SF_N)|ops/s|up
sf_stat|small files: stat ($SF_N, right after the writes)|ops/s|up
sf_restat|small files: stat again ($SF_N, attributes cached)|ops/s|up
sf_read|small files: open + read 4 KiB + close ($SF_N)|ops/s|up
sf_unlink|small files: unlink ($SF_N)|ops/s|up
dirops_miss_1|one directory, 1 thread: stat of missing names (each a LOOKUP)|ops/s|up
dirops_miss_4|... 4 threads|ops/s|up
dirops_hit_1|one directory of 2000 files, 1 thread: stat of each, dentries dropped before (each a LOOKUP)|ops/s|up
dirops_hit_4|... 4 threads|ops/s|up
dirops_readdir_1|one directory of 2000 files, 1 thread: list it whole, again and again|lists/s|up
dirops_readdir_4|... 4 threads|lists/s|up
glyph_plain|glyph atlas 64 MiB: frames, mmap reads only|frames/s|up
glyph_vol|glyph atlas: frames, volatile while idle, batched (1 unmark + 1 purged listing + 1 mark a frame)|frames/s|up
glyph_vol_ratio|... volatile frames/s over plain frames/s, same repetition (aim >= 0.5)|x|up
glyph_calls|glyph atlas: volatilefs calls in those frames|calls/s|up
glyph_calls_frame|... volatilefs calls per frame|calls|down
glyph_call_ns|... one batched call (xattr, about 24 entries)|ns/op|down
glyph_noop_ns|... a no-op round trip in place of each of those calls, same frames|ns/op|down
glyph_call_noops|... one batched call, in no-op round trips at the same points (aim <= 1.5)|x|down
glyph_batch|glyph atlas: frames, volatile while idle, one volatilefs_batch ioctl a frame (unmarks + purged bits + marks)|frames/s|up
glyph_batch_ratio|... batch frames/s over plain frames/s, same repetition (aim >= 0.5)|x|up
glyph_batch_call_ns|... one volatilefs_batch call|ns/op|down
glyph_batch_call_noops|... one volatilefs_batch call, in no-op round trips at the same points|x|down
glyph_batch_purge|glyph atlas, volatilefs_batch, memory_limit=48M (below the atlas): frames with purges|frames/s|up
glyph_batch_purge_ratio|... over plain frames/s (4G mount), same repetition|x|up
glyph_batch_purge_regen|... entries found purged and regenerated per frame|entries|down
glyph_each|glyph atlas: frames, one ioctl per entry (unmark before use, mark when idle)|frames/s|up
glyph_each_call_ns|... one mark or unmark ioctl (4-64 KiB)|ns/op|down
glyph_purge|glyph atlas, batched, memory_limit=48M (below the atlas): frames with purges|frames/s|up
glyph_purge_ratio|... over plain frames/s (4G mount), same repetition|x|up
glyph_purge_regen|... entries found purged and regenerated per frame|entries|down
glyph_purge_regen_ns|... one regeneration (pwrite of the entry, purging for room)|ns/op|down
noop|no-op round trip: fgetxattr of a missing user.* name|ops/s|up
noop_ioctl|refused ioctl round trip (mark with reserved != 0: EINVAL)|ops/s|up
mark_ioctl|mark + unmark pair of 4 KiB, ioctl (libvolatilefs)|pairs/s|up
mark_xattr|mark + unmark pair of 4 KiB, fsetxattr|pairs/s|up
mark_ioctl_noops|ioctl pair, in no-op round trips|x|down
mark_xattr_noops|fsetxattr pair, in no-op round trips|x|down
purge|purge all: $PURGE_SIZE marked in 1 MiB units, setxattr purge=all|GiB/s|up
purge_rss_freed|purge all: daemon VmRSS freed|MiB|up
limit_ms|memory_limit 512M -> 256M with 400M volatile: until VmRSS <= 256M|ms|down
limit_set_ms|... the setxattr itself|ms|down
EOF
	for n in "${SCALE_SIZES[@]}"; do
		cat <<EOF
scale_build_$n|$(human "$n") units: building them (batched setxattr)|ns/unit|down
scale_mark_$n|$(human "$n") units: mark one more (ioctl)|ns/op|down
scale_unmark_$n|$(human "$n") units: unmark one (ioctl)|ns/op|down
scale_purge_$n|$(human "$n") units: purge all|ns/unit|down
scale_mem_$n|$(human "$n") units: daemon memory per unit|B/unit|down
EOF
	done
	cat <<EOF
tree_create|$(human "$TREE_N") empty files in 16 dirs: create (mknod)|files/s|up
tree_stat|$(human "$TREE_N") files: stat of $(human "$TREE_STATS") random names, cold dcache|stat/s|up
tree_purge_ms|$(human "$TREE_N") files, no volatile unit: setxattr purge=all|ms|down
flood_rate|RSS flood: write $FLOOD_SIZE volatile under memory_limit=256M|MiB/s|up
flood_peak|RSS flood: peak daemon VmRSS|MiB|down
flood_over_ms|RSS flood: time VmRSS was over the limit (10 ms samples)|ms|down
flood_errors|RSS flood: failed writes|count|down
press_alone_ms|pressure: memhog $PRESS_HOG MiB alone in a $PRESS_LIMIT_MIB MiB memory cgroup|ms|down
press_madv_ms|pressure: memhog $PRESS_HOG MiB there next to 1 GiB of MADV_FREE memory|ms|down
press_vfs_ms|pressure: memhog $PRESS_HOG MiB there next to volatilefs with 1 GiB volatile|ms|down
press_ratio|pressure: memhog next to volatilefs / next to MADV_FREE (aim <= 1.5)|x|down
press_churn_madv_kept|pressure, churn: 4 GiB file streamed through the cgroup: MADV_FREE memory kept, of 512 MiB|%|up
press_churn_vfs_kept|pressure, churn: the same stream: volatile data kept by volatilefs, of 512 MiB (aim >= 90)|%|up
press_churn_madv_stream_ms|pressure, churn: the stream's time next to MADV_FREE memory|ms|down
press_churn_vfs_stream_ms|pressure, churn: the stream's time next to volatilefs|ms|down
press_churn_vfs_oom|pressure, churn: OOM kills next to volatilefs|count|down
press_madv_oom|pressure: OOM kills next to MADV_FREE|count|down
press_vfs_oom|pressure: OOM kills next to volatilefs|count|down
press_madv_reclaimed|pressure: MADV_FREE memory the kernel took back|MiB|down
press_purged_mib|pressure: volatile data purged for memhog (pressure_bytes_total)|MiB|down
press_up_ms|pressure: memhog start -> cgroup into the daemon's headroom|ms|down
press_purge_ms|pressure: into the headroom -> first purge seen in user.volatile.stats|ms|down
press_out_ms|pressure: into the headroom -> back out of it (first time)|ms|down
press_out_max_ms|pressure: longest stay in the headroom|ms|down
press_entries|pressure: times into the headroom during the run|count|down
press_poll_max_ms|pressure: longest user.volatile.stats read while polling|ms|down
EOF
}

human() { # 1000 -> 1k, 1000000 -> 1M
	awk -v n="$1" 'BEGIN { if (n >= 1e6 && n % 1e6 == 0) printf "%dM", n / 1e6;
		else if (n >= 1e3 && n % 1e3 == 0) printf "%dk", n / 1e3; else printf "%d", n }'
}

# Medians per (key, fs) from the raw file: "key fs median min max count" lines.
medians() {
	sort -t $'\t' -k1,1 -k2,2 -k4,4g "$RAW" | awk -F'\t' '
		function flush() {
			if (!n) return
			m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
			printf "%s %s %s %s %s %d\n", pk, pf, m, v[1], v[n], n
			n = 0
		}
		{ if ($1 != pk || $2 != pf) { flush(); pk = $1; pf = $2 } v[++n] = $4 }
		END { flush() }'
}

table() {
	local med
	med=$(medians)
	rows | awk -F'|' -v med="$med" '
		function fmt(x) {
			if (x == "") return "n/a"
			x += 0
			if (x == int(x)) return sprintf("%d", x)
			if (x >= 100 || x <= -100) return sprintf("%.0f", x)
			if (x >= 10 || x <= -10) return sprintf("%.1f", x)
			return sprintf("%.2f", x)
		}
		function ratio(a, b) {
			if (a == "" || b == "" || b + 0 == 0) return "n/a"
			return sprintf("%.2f", a / b)
		}
		BEGIN {
			n = split(med, L, "\n")
			for (i = 1; i <= n; i++) {
				split(L[i], f, " ")
				m[f[1], f[2]] = f[3]; lo[f[1], f[2]] = f[4]; hi[f[1], f[2]] = f[5]
				cnt[f[1], f[2]] = f[6]
			}
			print "| workload | unit | tmpfs | volatilefs | passthrough | fuse-overlayfs | volatilefs/tmpfs | passthrough/tmpfs | volatilefs/fuse-overlayfs | volatilefs min-max (n) |"
			print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
		}
		{
			k = $1
			if (!((k, "tmpfs") in m) && !((k, "vfs") in m) && !((k, "pt") in m) &&
			    !((k, "peer") in m)) next
			t = (k, "tmpfs") in m ? m[k, "tmpfs"] : ""
			v = (k, "vfs") in m ? m[k, "vfs"] : ""
			q = (k, "pt") in m ? m[k, "pt"] : ""
			p = (k, "peer") in m ? m[k, "peer"] : ""
			spread = v == "" ? "" : fmt(lo[k, "vfs"]) "-" fmt(hi[k, "vfs"]) " (" cnt[k, "vfs"] ")"
			printf "| %s | %s %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $2, $3,
				$4 == "up" ? "↑" : "↓", fmt(t), fmt(v), fmt(q), fmt(p), ratio(v, t),
				ratio(q, t), ratio(v, p), spread
		}'
}

# ---------------------------------------------------------------------------------------------

main() {
	local quick=0 reps="" only=$ALL_GROUPS out="" cmd group fs rep start here
	cmd=$(printf '%q ' "$0" "$@")
	cmd=${cmd% }
	while [[ $# -gt 0 ]]; do
		case $1 in
		--quick) quick=1 ;;
		--reps)
			[[ ${2:-} =~ ^[1-9][0-9]*$ ]] || die "--reps needs a positive number"
			reps=$2
			shift
			;;
		--only)
			[[ -n ${2:-} ]] || die "--only needs a list of groups"
			only=${2//,/ }
			shift
			;;
		--out)
			[[ -n ${2:-} ]] || die "--out needs a directory"
			out=$2
			shift
			;;
		-h | --help)
			usage
			exit 0
			;;
		*)
			usage >&2
			exit 2
			;;
		esac
		shift
	done
	for group in $only; do
		[[ " $ALL_GROUPS " == *" $group "* ]] || die "unknown group '$group' (groups: $ALL_GROUPS)"
	done
	ONLY=$only

	[[ $(id -u) -eq 0 ]] || die "run as root: it mounts tmpfs and drops the kernel's caches"
	[[ -c /dev/fuse ]] || die "/dev/fuse is missing: nothing can be mounted with FUSE here"

	here=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
	ROOT=$(cd -- "$here/.." && pwd)
	BUILD=$ROOT/build-bench
	OUT=$(realpath -m -- "${out:-$ROOT/bench/results}")
	mkdir -p "$OUT"

	if ((quick)); then
		REPS=${reps:-3} FIO_SIZE=256M RAND_SECS=1 SF_N=2000 GLYPH_FRAMES=300 PAIR_SECS=0.3
		DIROPS_SECS=0.5
		PURGE_SIZE=256M SCALE_SIZES=(1000 10000 100000) SCALE_SAMPLE=1000
		TREE_N=100000 TREE_STATS=10000 FLOOD_SIZE=512M PRESS_REPS=${reps:-1}
	else
		REPS=${reps:-5} FIO_SIZE=1G RAND_SECS=5 SF_N=10000 GLYPH_FRAMES=2000 PAIR_SECS=2
		DIROPS_SECS=2
		PURGE_SIZE=1G SCALE_SIZES=(1000 100000 1000000) SCALE_SAMPLE=10000
		TREE_N=1000000 TREE_STATS=50000 FLOOD_SIZE=1G PRESS_REPS=${reps:-3}
	fi
	PRESS_LIMIT_MIB=1536 PRESS_HOG=900

	install_missing "${PKGS[@]}"
	WORK=$(mktemp -d /tmp/vfsbench.XXXXXX)
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	RAW=$WORK/raw.tsv
	: >"$RAW"
	build

	start=$(date +%s)
	local -a loop_groups=()
	for group in fio small dirops glyph mark purge limit scale; do
		[[ " $only " == *" $group "* ]] && loop_groups+=("$group")
	done
	if [[ ${#loop_groups[@]} -gt 0 ]]; then
		MNT[tmpfs]=$WORK/tmpfs MNT[vfs]=$WORK/vfs MNT[pt]=$WORK/pt MNT[peer]=$WORK/peer
		mount_tmpfs "$WORK/tmpfs" 8G
		mount_vfs "$WORK/vfs" memory_limit=4G,passthrough=off
		VFS_PID=$LAST_PID
		mount_vfs "$WORK/pt" memory_limit=4G,passthrough=on
		if [[ " $only " == *" glyph "* ]]; then
			# The glyph atlas (64 MiB) with purges: a limit below it.
			MNT[glyphlim]=$WORK/glyphlim
			mount_vfs "$WORK/glyphlim" memory_limit=48M,passthrough=off
		fi
		mount_tmpfs "$WORK/peer-layers" 8G
		mount_peer "$WORK/peer" "$WORK/peer-layers"
		for ((rep = 1; rep <= REPS; rep++)); do
			REP=$rep
			say "repetition $rep of $REPS: ${loop_groups[*]}"
			for group in "${loop_groups[@]}"; do
				for ((i = 0; i < ${#FSES[@]}; i++)); do
					"wl_$group" "${FSES[(i + rep - 1) % ${#FSES[@]}]}"
				done
			done
		done
		unmount_one "$WORK/peer"
		unmount_one "$WORK/peer-layers"
		[[ -n ${MNT[glyphlim]:-} ]] && unmount_one "$WORK/glyphlim"
		unmount_one "$WORK/pt"
		unmount_one "$WORK/vfs"
		unmount_one "$WORK/tmpfs"
	fi
	if [[ " $only " == *" tree "* ]]; then
		say "tree: $TREE_N files"
		phase_tree
	fi
	FLOOD_START=0 FLOOD_END=0
	if [[ " $only " == *" flood "* ]]; then
		say "RSS flood: $FLOOD_SIZE under memory_limit=256M"
		phase_flood
	fi
	if [[ " $only " == *" mem "* ]]; then
		say "memory for a 1 GiB file written and read once"
		phase_mem
	fi
	if [[ " $only " == *" pressure "* ]]; then
		say "memory pressure: memhog $PRESS_HOG MiB in a $PRESS_LIMIT_MIB MiB memory cgroup"
		phase_pressure
	fi
	report "$cmd" "$quick" "$(($(date +%s) - start))"
}

report() { # COMMAND QUICK SECONDS
	local md=$OUT/latest.md tbl cpu mem fusever ovlver commit
	tbl=$(table)
	cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	mem=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
	fusever=$(pkg-config --modversion fuse3 2>/dev/null || echo '?')
	ovlver=$(fuse-overlayfs --version 2>/dev/null | awk '/fuse-overlayfs/ { print $3; exit }')
	commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo '?')
	cp "$RAW" "$OUT/latest-raw.tsv"
	{
		echo "# volatilefs benchmarks"
		echo
		if (($2)); then
			echo "**Preliminary: a --quick run (fewer repetitions, smaller sizes).** Figures are"
			echo "only as quiet as the machine was; compare the ratios, not absolute figures."
		else
			echo "Figures are only as quiet as the machine was; compare the ratios, not absolute figures."
		fi
		echo
		echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- command: \`$1\` (workloads took $3 s)"
		# shellcheck disable=SC1091
		echo "- machine: $cpu, $(nproc) CPUs, $mem RAM; $(. /etc/os-release && echo "$PRETTY_NAME")"
		echo "- kernel: $(uname -r)"
		echo "- volatilefs: $commit (release build, memory_limit=4G unless stated); libfuse $fusever;" \
			"fuse-overlayfs $ovlver; $(fio --version)"
		echo "- repetitions: $REPS, interleaved (each repetition runs each workload on tmpfs," \
			"volatilefs, passthrough and fuse-overlayfs, the order rotating by one each repetition);" \
			"medians shown. Raw figures: [latest-raw.tsv](latest-raw.tsv)"
		echo
		echo "$tbl"
		echo
		echo "↑: more is better, ↓: less is better. n/a: the filesystem cannot run it (volatile ranges exist"
		echo "on volatilefs only) or it was not run."
		echo
		echo "## What each row measures"
		echo
		cat <<EOF
- **fio**: one job, \`ioengine=psync\`, \`fallocate=none\`; the write ends with an fsync. Cold reads
  follow \`sync; echo 3 > /proc/sys/vm/drop_caches\`; on tmpfs that changes nothing (its pages
  are the page cache), so there cold = warm. The random read runs for a fixed time over the
  whole file with readahead off (fio's \`fadvise_hint\`), so on FUSE nearly every read is a
  request to the daemon.
- **small files** (bench/smallfiles.c): in one fresh directory, N times create + write 4 KiB +
  close, then N stats, N stats again, N open + read + close, N unlinks, in creation order;
  the kernel caches stay as the phase before left them. The first stats follow the writes,
  which make the kernel drop the attributes it had (so a FUSE stat asks the daemon); the
  second find them cached. Rates from \`clock_gettime\` around each phase.
- **directory operations** (bench/lookupbench.c): 1 and 4 threads in one fresh directory:
  stat of names that do not exist (every one a LOOKUP: FUSE keeps no negative entry without
  a timeout); stat of each of 2000 files once between the threads, dentries dropped before
  each round (every stat a LOOKUP); and listing the 2000-file directory whole, over and over.
  Without \`FUSE_PARALLEL_DIROPS\` the kernel sends one LOOKUP or READDIR of a directory at a
  time: the classic mount goes without it (libfuse 3.14 never asks), the passthrough mount
  asks for it, so the 4-thread rows of the two show what it is worth.
- **glyph atlas** (bench/glyphbench.c): a 64 MiB file of entries of 4-64 KiB read through a
  shared mmap; 48 entry uses a frame, 80% from a hot tenth. "mmap reads only" on every
  filesystem. On volatilefs also with every entry marked volatile while idle (4 frames unused)
  and unmarked before use, batched as a compositor would: each frame one
  \`fsetxattr(user.volatile.unmark)\` naming the volatile entries it needs, one
  \`fgetxattr(user.volatile.purged)\` to learn which of them to regenerate (pwrite), one
  \`fsetxattr(user.volatile.mark)\` naming those gone idle. Nothing is purged on the 4G mount:
  it is the cost of the calls. "No-op round trip in place": the same frames with
  \`fgetxattr(user.bench.noop)\` where those calls were, timed the same way (a round trip
  made right after the frame's reads costs more than one in a tight loop: compare calls with
  these). "One volatilefs_batch ioctl a frame": the same work in one round trip, the
  unmarks with a purged bit each and the marks of the entries gone idle at the end of the
  frame before. "One ioctl per entry": libvolatilefs calls, one per entry, the old way.
  "With purges": the batched frames (xattrs, and volatilefs_batch) on a mount of its own with
  \`memory_limit=48M\`, below the atlas; entries are marked before they are written, so the
  writes purge older ones. Every use checks its data.
- **a FUSE daemon that keeps nothing** (bench/nullfuse.c): one 4 GiB file whose writes are
  answered without storing and whose reads come from one static buffer, mounted with the
  caching volatilefs uses (and its 1 MiB readahead window); the fio sequential rows against
  it are what the kernel's FUSE path alone costs on this machine, the bound for volatilefs.
- **fresh memory** (bench/fillbench.c): 512 MiB copied into fresh pages 1 MiB at a time, by
  the ways the arena could fill them, best of 3; not a filesystem figure: it shows what the
  write path costs on the machine.
- **no-op round trip**: \`fgetxattr(fd, "user.bench.noop")\` on an open file. The kernel caches
  no xattrs, so on FUSE each call is one request to the daemon, which answers ENODATA (on
  volatilefs from an atomic flag, without a lock). On tmpfs it stays in the kernel. The
  "refused ioctl" is a \`VOLATILEFS_IOC_MARK\` with its reserved field set, which the daemon
  answers EINVAL before doing anything: the floor for one ioctl round trip.
- **mark + unmark pairs** (bench/markbench.c): the same 4 KiB page of a 64 KiB file, marked and
  unmarked, by the ioctls and by \`fsetxattr\`. "In no-op round trips": the pair's time over the
  no-op's; 2.0 would mean each call costs no more than an empty round trip.
- **purge all** (bench/purgebench.c): $PURGE_SIZE written into 16 files and marked in 1 MiB units,
  then \`setxattr(root, "user.volatile.purge", "all")\` timed; GiB/s = the volatile bytes over
  that time; "VmRSS freed" is the daemon's VmRSS just before minus just after.
- **memory_limit**: a mount of its own with \`memory_limit=512M\`, 400 MiB written and marked in
  1 MiB units, then \`user.volatile.memory_limit\` set to 256M while a thread polls the daemon's
  VmRSS every millisecond: time from the start of the setxattr until VmRSS <= 256 MiB.
- **units** (bench/markbench.c scale): N units of one page with a page gap between them in one
  sparse file (bookkeeping only, no data), built with batched setxattr; then, at that size,
  ${SCALE_SAMPLE} random units unmarked and marked again with the ioctls (timed one by one), then
  purge all. Memory per unit: the daemon's VmRSS growth while building over N. The same
  no-op round trip above is the floor for one ioctl.
- **files** (bench/smallfiles.c mktree/stattree): $(human "$TREE_N") empty files in 16 directories on
  mounts of their own, made with mknod; fuse-overlayfs's are made directly in its upperdir on
  tmpfs before mounting (through FUSE it would take longer than the whole run), so it has no
  create figure. Each repetition drops dentries and inodes (\`echo 2 > drop_caches\`, then 1 s
  for the FORGETs) and stats $(human "$TREE_STATS") distinct random names by full path. tmpfs
  dentries cannot be dropped: its figure is a warm one. On the volatilefs tree, each
  repetition also times \`user.volatile.purge=all\` on the root with no volatile unit on the
  mount: nothing to purge, so any time it takes is the cost of the file count.
- **RSS flood**: a mount with \`memory_limit=256M\`; $FLOOD_SIZE written as 16 MiB files, each
  marked volatile whole (one unit, length 0) before it is written; the daemon's VmRSS sampled
  every 10 ms (bench/rsswatch.c).
- **pressure** (bench/pressurebench.c, DESIGN section 10): each repetition, fresh v1 memory
  cgroups limited to $PRESS_LIMIT_MIB MiB, and in each a plain program (memhog's allocation:
  malloc 1 MiB and write every page, $PRESS_HOG MiB at full speed) timed: alone; next to a
  process holding 1 GiB it wrote and then \`madvise(MADV_FREE)\`d (the baseline: the kernel
  takes that back itself); next to a volatilefs daemon (\`memory_limit=4G\`, so only the cgroup
  makes it purge) holding a 64 MiB ordinary file and 1 GiB of volatile data in 16 files of
  64 MiB, each one unit, written from outside the cgroup. The daemon's headroom is its
  default, the larger of 64 MiB and 5% of the limit. pressurebench registers usage thresholds
  of its own at the daemon's (limit - headroom) and 16 MiB under it, on
  \`memory.usage_in_bytes\` through \`cgroup.event_control\`, timestamped by a SCHED_FIFO
  thread: "into the headroom" is the first crossing of the first upwards, "back out" the
  next crossing of the second downwards (usage wobbles by about a MiB next to a threshold
  with nothing freed, so the first one alone would cross back and forth). "First purge seen"
  is when a thread reading \`user.volatile.stats\` back to back sees
  \`pressure_purges_total\` change; the daemon adds to it when a purge step ends. Churn, in the
  same repetitions and fresh cgroups of the same limit: a 4 GiB file written on the disk
  (/var/tmp), dropped from the page cache (\`posix_fadvise\` DONTNEED) and read to the end by a
  child in the cgroup (1 MiB reads, as \`cat\`), next to a process holding 512 MiB it wrote and
  \`MADV_FREE\`d (kept: its VmRSS after over before), then next to a volatilefs daemon holding
  512 MiB of volatile data in 8 files of 64 MiB and the 64 MiB ordinary file (kept:
  \`volatile_bytes\` after over before). Nothing in the cgroup needs anonymous memory then:
  whatever goes, goes for page cache. Raw output: [pressure-raw.txt](pressure-raw.txt).
EOF
		if [[ -f $OUT/rss-flood.png && " $ONLY " == *" flood "* ]]; then
			echo
			echo "## RSS during a write flood of volatile data"
			echo
			echo "![daemon VmRSS during the flood](rss-flood.png)"
			echo
			echo "Samples: [rss-flood.tsv](rss-flood.tsv) (seconds, MiB)."
		fi
	} >"$md"
	echo
	echo "$tbl"
	echo
	say "saved to $md"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
