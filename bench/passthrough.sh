#!/bin/bash
# passthrough.sh - the passthrough data path of volatilefs against its
# classic path and tmpfs: sequential write, cold sequential read, mmap read
# of a 1 GiB file, and the memory a 1 GiB file written and read once costs.
#
#   bench/passthrough.sh /path/to/volatilefs            (as root)
#   ROUNDS=5 MEMREPS=3 OUT=/tmp/ptres bench/passthrough.sh build/src/daemon/volatilefs
#
# Rounds are interleaved: tmpfs, classic (passthrough=off), passthrough
# (passthrough=on), each on a fresh mount, then the next round.  Ratios are
# taken to tmpfs of the same round; the summary gives medians.  Everything is
# mounted under a fresh /tmp/ptbench.XXXXXX and unmounted in an EXIT trap.
# Raw figures: $OUT/passthrough-raw.tsv and $OUT/passthrough-mem-raw.tsv.
set -euo pipefail

DAEMON=${1:?usage: $0 /path/to/volatilefs}
DAEMON=$(readlink -f -- "$DAEMON")
[ -x "$DAEMON" ] || { echo "not executable: $DAEMON" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (mounts, drop_caches)" >&2; exit 1; }
for t in fio fincore fusermount3 getfattr jq cc python3; do
	command -v "$t" >/dev/null || { echo "missing: $t (apt-get install -y fio ...)" >&2; exit 1; }
done

ROUNDS=${ROUNDS:-5}
MEMREPS=${MEMREPS:-3}
SIZE_MIB=1024
OPTS_COMMON="memory_limit=8G,pressure=off"
WORK=$(mktemp -d /tmp/ptbench.XXXXXX)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
RAW=$OUT/passthrough-raw.tsv
MEMRAW=$OUT/passthrough-mem-raw.tsv

MOUNTS=()
cleanup() {
	local rc=$? mp
	set +e
	for mp in "${MOUNTS[@]}"; do
		if mountpoint -q -- "$mp"; then
			fusermount3 -u -- "$mp" 2>/dev/null || umount -- "$mp" 2>/dev/null ||
				umount -l -- "$mp"
		fi
	done
	# the results stay when OUT is outside WORK
	find "$WORK" -mindepth 1 -maxdepth 1 ! -name out -exec rm -rf {} + 2>/dev/null
	[ "$OUT" = "$WORK/out" ] || rmdir "$WORK" 2>/dev/null
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

drop_caches() { sync; echo "$1" >/proc/sys/vm/drop_caches; }

# The mmap reader: maps the whole file shared and read-only, adds up every
# 8-byte word (every page faulted in), unmaps; MiB/s from open to munmap.
cat >"$WORK/mmapread.c" <<'EOF'
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	struct rusage ru;
	struct stat st;
	volatile uint64_t sink;
	uint64_t sum = 0;
	const uint64_t *p;
	size_t n, i;
	int fd;

	if (argc != 2)
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &a);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		perror(argv[1]);
		return 1;
	}
	n = (size_t)st.st_size;
	p = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (i = 0; i < n / 8; i++)
		sum += p[i];
	sink = sum;
	(void)sink;
	munmap((void *)p, n);
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.1f %ld\n", (double)n / 1048576.0 /
			     ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9),
	       ru.ru_minflt);
	return 0;
}
EOF
cc -O2 -Wall -o "$WORK/mmapread" "$WORK/mmapread.c"

# fio, one job; prints MiB/s of the direction asked for ($1: read|write).
run_fio() {
	local dir=$1
	shift
	fio --output-format=json --output="$WORK/fio.json" --name=pt --ioengine=psync \
		--fallocate=none "$@" >/dev/null 2>>"$WORK/fio.log" || die "fio failed: $*"
	jq -r ".jobs[0].$dir.bw_bytes / 1048576 | . * 10 | round / 10" "$WORK/fio.json"
}

stats() { getfattr --absolute-names --only-values -n user.volatile.stats -- "$1"; }
stat_field() { stats "$1" | sed -n "s/^$2=//p"; }

# The pid of the daemon serving mount point $1 (its last argument).
daemon_pid() {
	local p args
	for p in /proc/[0-9]*; do
		[ -r "$p/cmdline" ] || continue
		mapfile -d '' -t args <"$p/cmdline" 2>/dev/null || continue
		[ "${#args[@]}" -gt 0 ] || continue
		if [ "${args[0]}" = "$DAEMON" ] && [ "${args[-1]}" = "$1" ]; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

# mount_fs KIND MP: KIND is tmpfs, classic or passthrough.
mount_fs() {
	local kind=$1 mp=$2 want
	mkdir -p -- "$mp"
	MOUNTS+=("$mp")
	case $kind in
	tmpfs) mount -t tmpfs -o size=2G,mode=1777 tmpfs "$mp" ;;
	classic | passthrough)
		[ "$kind" = classic ] && want=off || want=on
		"$DAEMON" -o "$OPTS_COMMON,passthrough=$want" "$mp"
		[ "$(stat_field "$mp" passthrough)" = "$want" ] ||
			die "$mp: stats say passthrough=$(stat_field "$mp" passthrough), not $want"
		;;
	esac
}

umount_fs() {
	local kind=$1 mp=$2 pid="" i
	if [ "$kind" = tmpfs ]; then
		umount -- "$mp"
		return
	fi
	pid=$(daemon_pid "$mp") || true
	fusermount3 -u -- "$mp"
	# wait for the daemon to go, so that its memory is back before the next mount
	for i in $(seq 100); do
		[ -n "$pid" ] && [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null ||
			break
		sleep 0.1
	done
}

FS_KINDS="tmpfs classic passthrough"

log "daemon $DAEMON; $ROUNDS rounds; work dir $WORK; results in $OUT"
printf 'round\tfs\ttest\tmib_s\n' >"$RAW"
for r in $(seq "$ROUNDS"); do
	for kind in $FS_KINDS; do
		mp=$WORK/$kind-r$r
		load=$(cut -d' ' -f1 /proc/loadavg)
		mount_fs "$kind" "$mp"
		f=$mp/F
		w=$(run_fio write --filename="$f" --size=${SIZE_MIB}M --rw=write --bs=1M --end_fsync=1)
		drop_caches 1
		rd=$(run_fio read --filename="$f" --size=${SIZE_MIB}M --rw=read --bs=1M)
		drop_caches 1
		read -r mm mmflt < <("$WORK/mmapread" "$f")
		drop_caches 1
		fm=$(run_fio read --filename="$f" --size=${SIZE_MIB}M --rw=read --bs=1M --ioengine=mmap)
		printf '%s\t%s\t%s\t%s\n' "$r" "$kind" seqwrite "$w" "$r" "$kind" seqread_cold "$rd" \
			"$r" "$kind" mmap_read "$mm" "$r" "$kind" fio_mmap_read "$fm" \
			"$r" "$kind" mmap_minflt "$mmflt" "$r" "$kind" loadavg1 "$load" >>"$RAW"
		log "round $r $kind: write $w, cold read $rd, mmap $mm ($mmflt minor faults), fio mmap $fm MiB/s; load $load"
		rm -f -- "$f"
		umount_fs "$kind" "$mp"
	done
done

# Memory: MemTotal-MemFree (and Shmem, Cached) after sync + drop_caches 3
# before mounting, and after writing the file and reading it once.
kib() { sed -n "s/^$1: *\([0-9]*\) kB/\1/p" /proc/meminfo; }
used_kib() { echo $(($(kib MemTotal) - $(kib MemFree))); }
status_mib() { echo $(($(sed -n "s/^$2:[[:space:]]*\([0-9]*\) kB/\1/p" "/proc/$1/status") / 1024)); }
tmpfs_used_mib() { stat -f -c '%b %f %S' -- "$1" | awk '{ printf "%d", ($1 - $2) * $3 / 1048576 }'; }
# The daemon's private tmpfs (passthrough backing files; fsmount, in no
# mount table): the fd it holds on its root, seen through /proc.
private_tmpfs_mib() {
	local fd
	for fd in /proc/"$1"/fd/*; do
		if [ "$(readlink -- "$fd")" = / ] && [ "$(stat -f -c %T -- "$fd")" = tmpfs ]; then
			tmpfs_used_mib "$fd"
			return
		fi
	done
	echo -
}
printf 'rep\tfs\tdelta_used_mib\tdelta_shmem_mib\tdelta_cached_mib\tdelta_anon_mib\tdaemon_vmrss_mib\tdaemon_rssanon_mib\tdaemon_rssshmem_mib\tshared_bytes_mib\tdata_bytes_mib\ttmpfs_used_mib\tfincore_mib\n' >"$MEMRAW"
for r in $(seq "$MEMREPS"); do
	for kind in $FS_KINDS; do
		mp=$WORK/mem-$kind-r$r
		mkdir -p -- "$mp"
		drop_caches 3
		sleep 1
		u0=$(used_kib) s0=$(kib Shmem) c0=$(kib Cached) a0=$(kib AnonPages)
		mount_fs "$kind" "$mp"
		f=$mp/F
		run_fio write --filename="$f" --size=${SIZE_MIB}M --rw=write --bs=1M --end_fsync=1 >/dev/null
		run_fio read --filename="$f" --size=${SIZE_MIB}M --rw=read --bs=1M >/dev/null
		u1=$(used_kib) s1=$(kib Shmem) c1=$(kib Cached) a1=$(kib AnonPages)
		rss=- ranon=- rshm=- shared=- data=- tmpused=-
		if [ "$kind" = tmpfs ]; then
			tmpused=$(tmpfs_used_mib "$mp")
		else
			pid=$(daemon_pid "$mp") || die "no daemon pid for $mp"
			rss=$(status_mib "$pid" VmRSS) ranon=$(status_mib "$pid" RssAnon)
			rshm=$(status_mib "$pid" RssShmem)
			shared=$(($(stat_field "$mp" shared_bytes) / 1048576))
			data=$(($(stat_field "$mp" data_bytes) / 1048576))
			tmpused=$(private_tmpfs_mib "$pid")
		fi
		fin=$(($(fincore --bytes --noheadings -o RES -- "$f") / 1048576))
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$kind" \
			$(((u1 - u0) / 1024)) $(((s1 - s0) / 1024)) $(((c1 - c0) / 1024)) \
			$(((a1 - a0) / 1024)) "$rss" "$ranon" "$rshm" "$shared" "$data" "$tmpused" "$fin" >>"$MEMRAW"
		log "memory rep $r $kind: used +$(((u1 - u0) / 1024)) MiB, Shmem +$(((s1 - s0) / 1024)), Cached +$(((c1 - c0) / 1024)), daemon VmRSS $rss, shared_bytes $shared, data_bytes $data, tmpfs used $tmpused, fincore $fin"
		rm -f -- "$f"
		umount_fs "$kind" "$mp"
	done
done

# Summary: medians over rounds, ratios per round then their median.
python3 - "$RAW" "$MEMRAW" <<'EOF'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
v = {(r['round'], r['fs'], r['test']): float(r['mib_s']) for r in rows}
rounds = sorted({r['round'] for r in rows}, key=int)
names = {'seqwrite': 'sequential write 1 MiB, 1 GiB (MiB/s)',
         'seqread_cold': 'cold sequential read 1 MiB (MiB/s)',
         'mmap_read': 'mmap read, whole file mapped (MiB/s)',
         'fio_mmap_read': 'fio mmap read 1 MiB (MiB/s)'}
print('| test | tmpfs | classic | passthrough | classic/tmpfs | passthrough/tmpfs |')
print('|---|---:|---:|---:|---:|---:|')
for t in names:
    med = {fs: st.median(v[(r, fs, t)] for r in rounds) for fs in ('tmpfs', 'classic', 'passthrough')}
    rat = {fs: st.median(v[(r, fs, t)] / v[(r, 'tmpfs', t)] for r in rounds) for fs in ('classic', 'passthrough')}
    print(f"| {names[t]} | {med['tmpfs']:.0f} | {med['classic']:.0f} | {med['passthrough']:.0f} "
          f"| {rat['classic']:.2f}x | {rat['passthrough']:.2f}x |")
print()
print('per round (MiB/s, tmpfs / classic / passthrough):')
for t in list(names) + ['mmap_minflt', 'loadavg1']:
    print(f'  {t}: ' + '  '.join('/'.join(f"{v[(r, fs, t)]:g}" for fs in ('tmpfs', 'classic', 'passthrough')) for r in rounds))
print()
mem = list(csv.DictReader(open(sys.argv[2]), delimiter='\t'))
cols = [c for c in mem[0] if c not in ('rep', 'fs')]
print('memory medians (MiB):')
print('| fs | ' + ' | '.join(cols) + ' |')
print('|---|' + '---:|' * len(cols))
for fs in ('tmpfs', 'classic', 'passthrough'):
    out = []
    for c in cols:
        xs = [m[c] for m in mem if m['fs'] == fs]
        out.append('-' if '-' in xs else f"{st.median(float(x) for x in xs):.0f}")
    print(f'| {fs} | ' + ' | '.join(out) + ' |')
EOF
