#!/bin/bash
# recency.sh - what each way of seeing reads on the passthrough path would
# cost and see (DESIGN section 11, recency), against a plain passthrough
# mount and tmpfs in the same rounds:
#
#   none      the daemon's rule: nothing watches reads (an open file counts
#             as used every second);
#   fanotify  FAN_ACCESS on the daemon's private tmpfs (FAN_MARK_FILESYSTEM,
#             through /proc/PID/fd/N of its root), events read and counted
#             by bench/accesswatch;
#   inotify   IN_ACCESS on the backing file itself;
#   dio       reads sent through the daemon (FOPEN_DIRECT_IO, what a
#             writable open gets from the mount's first mark on: fio opens
#             O_RDWR with rw=rw,rwmixread=100 and only reads).
#
# Workloads: fio sequential reads of a 1 GiB file, 1 MiB and 4 KiB blocks,
# warm (3 s each), and glyph frames (bench/glyphbench plain: reads through a
# shared mapping).  Prints per-round ratios to "none" and the events each
# watcher saw.
#
#   bench/recency.sh BUILD_DIR          (as root; BUILD_DIR from contrib/bench.sh:
#                                        build-bench, with build-bench/bench)
#   ROUNDS=5 OUT=/tmp/rec bench/recency.sh build-bench
set -euo pipefail

BUILD=$(readlink -f -- "${1:?usage: $0 BUILD_DIR (with src/daemon/volatilefs and bench/)}")
VFS=$BUILD/src/daemon/volatilefs
HB=$BUILD/bench
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 1; }
[[ -x $VFS && -x $HB/glyphbench ]] ||
	{ echo "no $VFS or $HB/glyphbench: run contrib/bench.sh --quick --only fio first" >&2; exit 1; }
here=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
gcc -O2 -std=gnu11 -Wall -Wextra -Werror -o "$HB/accesswatch" "$here/accesswatch.c"

ROUNDS=${ROUNDS:-5}
WORK=$(mktemp -d /tmp/recbench.XXXXXX)
OUT=${OUT:-$WORK/out}
mkdir -p "$OUT"
RAW=$OUT/recency-raw.tsv
: > "$RAW"
MOUNTS=()
WATCH=
cleanup() {
	local rc=$? mp
	set +e
	[[ -n $WATCH ]] && kill "$WATCH" 2> /dev/null
	for mp in "${MOUNTS[@]}"; do
		mountpoint -q -- "$mp" && { umount -- "$mp" 2> /dev/null || umount -l -- "$mp"; }
	done
	find "$WORK" -mindepth 1 -maxdepth 1 ! -name out -exec rm -rf {} + 2> /dev/null
	[[ $OUT == "$WORK/out" ]] || rmdir "$WORK" 2> /dev/null
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/t" "$WORK/p"
mount -t tmpfs -o size=2g recbench "$WORK/t"
MOUNTS+=("$WORK/t")
"$VFS" -o memory_limit=4G,passthrough=on,pressure=off "$WORK/p"
MOUNTS+=("$WORK/p")
pid=$(pgrep -n -f -- "$VFS -o memory_limit=4G,passthrough=on,pressure=off $WORK/p")
# The private tmpfs's root: the daemon's one descriptor of a directory on a tmpfs.
root=
for f in /proc/"$pid"/fd/*; do
	[[ $(stat -f -c %T "$f/" 2> /dev/null) == tmpfs ]] && { root=$f; break; }
done
[[ -n $root ]] || { echo "cannot find the daemon's private tmpfs" >&2; exit 1; }
# From the mount's first mark on, writable opens read through the daemon (dio).
touch "$WORK/p/marker"
head -c 4096 /dev/zero > "$WORK/p/marker"
setfattr -n user.volatile.mark -v all "$WORK/p/marker"

fio_bw() { # FILE BS RW [extra fio options]: MiB/s
	local f=$1 bs=$2 rw=$3
	shift 3
	fio --name=r --filename="$f" --size=1G --bs="$bs" --rw="$rw" --time_based --runtime=3 \
		--ioengine=psync --invalidate=0 --output-format=json "$@" 2> /dev/null |
		jq -r '.jobs[0].read.bw_bytes / 1048576 | floor'
}

watch_start() { # fanotify|inotify TARGET
	"$HB/accesswatch" "$1" "$2" > "$WORK/watch.out" &
	WATCH=$!
	for _ in $(seq 100); do grep -q ready "$WORK/watch.out" 2> /dev/null && return; sleep 0.02; done
	echo "accesswatch did not start" >&2
	exit 1
}
watch_stop() { # prints the events seen
	kill -TERM "$WATCH"
	wait "$WATCH" || true
	WATCH=
	awk '$1 == "events" { print $2 }' "$WORK/watch.out"
}

fio --name=w --filename="$WORK/t/f" --size=1G --bs=1M --rw=write --ioengine=psync > /dev/null
fio --name=w --filename="$WORK/p/f" --size=1G --bs=1M --rw=write --ioengine=psync > /dev/null
backing=$root/$(printf '%x' "$(stat -c %i "$WORK/p/f")")
[[ -f $backing ]] || { echo "no backing file $backing" >&2; exit 1; }

for ((r = 1; r <= ROUNDS; r++)); do
	echo "round $r of $ROUNDS" >&2
	for bs in 1M 4k; do
		printf '%s\tfio%s\ttmpfs\t%s\t-\n' "$r" "$bs" "$(fio_bw "$WORK/t/f" "$bs" read)" >> "$RAW"
		printf '%s\tfio%s\tnone\t%s\t-\n' "$r" "$bs" "$(fio_bw "$WORK/p/f" "$bs" read)" >> "$RAW"
		watch_start fanotify "$root"
		v=$(fio_bw "$WORK/p/f" "$bs" read)
		printf '%s\tfio%s\tfanotify\t%s\t%s\n' "$r" "$bs" "$v" "$(watch_stop)" >> "$RAW"
		watch_start inotify "$backing"
		v=$(fio_bw "$WORK/p/f" "$bs" read)
		printf '%s\tfio%s\tinotify\t%s\t%s\n' "$r" "$bs" "$v" "$(watch_stop)" >> "$RAW"
		v=$(fio_bw "$WORK/p/f" "$bs" rw --rwmixread=100)
		printf '%s\tfio%s\tdio\t%s\t-\n' "$r" "$bs" "$v" >> "$RAW"
	done
	g() { "$HB/glyphbench" "$1" 2000 plain "$r" 2> /dev/null | awk '$1 == "frames_per_s" { print $2 }'; }
	printf '%s\tglyph\ttmpfs\t%s\t-\n' "$r" "$(g "$WORK/t/atlas")" >> "$RAW"
	printf '%s\tglyph\tnone\t%s\t-\n' "$r" "$(g "$WORK/p/atlas")" >> "$RAW"
	watch_start fanotify "$root"
	v=$(g "$WORK/p/atlas")
	printf '%s\tglyph\tfanotify\t%s\t%s\n' "$r" "$v" "$(watch_stop)" >> "$RAW"
	# The atlas is made again by each run: a watch on the file made before it.
	printf '%s\tglyph\tinotify\tn/a\tn/a\n' "$r" >> "$RAW"
	printf '%s\tglyph\tdio\tn/a\tn/a\n' "$r" >> "$RAW"
done

python3 - "$RAW" << 'EOF'
import collections, statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
val = collections.defaultdict(dict)
ev = collections.defaultdict(list)
for r, w, k, v, e in rows:
    if v != "n/a":
        val[(w, k)][r] = float(v)
    if e not in ("-", "n/a"):
        ev[(w, k)].append(int(e))
print("| workload | way | median | per-round ratio to none (median) | ratio to tmpfs (median) | events per run (median) |")
print("|---|---|---:|---:|---:|---:|")
for w in ("fio1M", "fio4k", "glyph"):
    for k in ("tmpfs", "none", "fanotify", "inotify", "dio"):
        d = val.get((w, k))
        if not d:
            print(f"| {w} | {k} | n/a | n/a | n/a | n/a |")
            continue
        med = statistics.median(d.values())
        rn = statistics.median(d[r] / val[(w, "none")][r] for r in d)
        rt = statistics.median(d[r] / val[(w, "tmpfs")][r] for r in d)
        e = statistics.median(ev[(w, k)]) if ev.get((w, k)) else "-"
        print(f"| {w} | {k} | {med:.0f} | {rn:.2f} | {rt:.2f} | {e} |")
EOF
echo "raw: $RAW" >&2
