#!/bin/bash
# ptread.sh - is a passthrough read slower than a tmpfs read, or is it where the pages are?
#
# contrib/bench.sh's cold and warm sequential reads on the passthrough path
# scattered from 0.6x to 1.3x tmpfs between rounds and runs, while no request
# reaches the daemon during them.  This script writes a 1 GiB file to tmpfs
# and one to a passthrough mount, in alternating order (odd rounds tmpfs
# first, even rounds passthrough first), then reads each 5 times over
# (warm, 1 MiB blocks), and prints per round the two speeds and which file
# was written second.  If the data path cost something, passthrough would
# trail in every round; if the pages' placement does (this is a VM: where
# the host backs the guest's pages differs between freshly allocated
# ranges), the file written second wins whatever it is.
#
# With PERF=1 it also samples one read of each file with perf (cpu-clock)
# and prints the share of samples in the copy to user space and in every
# FUSE or backing-file function: the passthrough path's own cost.
#
#   bench/ptread.sh BUILD_DIR           (as root; BUILD_DIR from contrib/bench.sh)
#   ROUNDS=8 PERF=1 bench/ptread.sh build-bench
set -euo pipefail

BUILD=$(readlink -f -- "${1:?usage: $0 BUILD_DIR (with src/daemon/volatilefs)}")
VFS=$BUILD/src/daemon/volatilefs
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 1; }
[[ -x $VFS ]] || { echo "no $VFS: run contrib/bench.sh --quick --only fio first" >&2; exit 1; }
ROUNDS=${ROUNDS:-8}
WORK=$(mktemp -d /tmp/ptread.XXXXXX)
mkdir "$WORK/t" "$WORK/p"
cleanup() {
	mountpoint -q "$WORK/t" && umount "$WORK/t"
	mountpoint -q "$WORK/p" && fusermount3 -u "$WORK/p"
	rm -rf -- "$WORK"
}
trap cleanup EXIT
mount -t tmpfs -o size=2G tmpfs "$WORK/t"
"$VFS" -o memory_limit=4G,passthrough=on "$WORK/p"

write_file() { # DIR
	fio --output-format=terse --name=w --ioengine=psync --fallocate=none --bs=1M \
		--size=1G --filename="$1/f" --rw=write --end_fsync=1 > /dev/null
}

read_mibs() { # DIR
	fio --output-format=json --name=r --ioengine=psync --bs=1M --size=1G --loops=5 \
		--invalidate=0 --filename="$1/f" --rw=read |
		jq -r '.jobs[0].read.bw_bytes / 1048576 | floor'
}

printf 'round\twritten_second\ttmpfs_MiBs\tpassthrough_MiBs\tratio\n'
for r in $(seq 1 "$ROUNDS"); do
	if ((r % 2)); then
		write_file "$WORK/t"; write_file "$WORK/p"; second=passthrough
	else
		write_file "$WORK/p"; write_file "$WORK/t"; second=tmpfs
	fi
	t=$(read_mibs "$WORK/t")
	p=$(read_mibs "$WORK/p")
	printf '%s\t%s\t%s\t%s\t%s\n' "$r" "$second" "$t" "$p" \
		"$(awk -v p="$p" -v t="$t" 'BEGIN { printf "%.2f", p / t }')"
	rm -f -- "$WORK/t/f" "$WORK/p/f"
done

if [[ ${PERF:-0} == 1 ]]; then
	command -v perf > /dev/null || { echo "PERF=1 needs perf (linux-perf)" >&2; exit 1; }
	write_file "$WORK/t"
	write_file "$WORK/p"
	for fs in t p; do
		perf record -q -e cpu-clock -o "$WORK/perf.data" -- fio --output-format=terse \
			--name=r --ioengine=psync --bs=1M --size=1G --loops=10 --invalidate=0 \
			--filename="$WORK/$fs/f" --rw=read > /dev/null 2>&1
		perf report -i "$WORK/perf.data" --stdio --sort sym 2> /dev/null |
			awk -v fs="$fs" '
				/^#/ || NF < 3 { next }
				{ p = $1; sub(/%/, "", p); s = $NF }
				s == "_copy_to_iter" { copy += p }
				s ~ /fuse|backing/ { pt += p }
				END { printf "perf %s: copy to user %.1f%% of samples, fuse/backing functions %.2f%%\n",
					fs == "t" ? "tmpfs" : "passthrough", copy, pt }'
	done
fi
