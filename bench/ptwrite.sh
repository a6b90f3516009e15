#!/bin/bash
# ptwrite.sh - what one write(2) costs on the passthrough path beyond tmpfs.
#
# The kernel writes a passthrough file's data into the backing file itself,
# but before each write(2) it asked the daemon for the file's
# security.capability (file_remove_privs: a FUSE superblock has no
# SB_NOSEC unless FUSE_HANDLE_KILLPRIV_V2 is negotiated, so no FUSE inode
# got S_NOSEC): one GETXATTR round trip per write(2), whatever its size.
# Passthrough mounts negotiate it since 19c6dbc; COUNT=1 shows how many
# are left.  This script writes 1 GiB with fio in blocks of
# 1, 4 and 16 MiB to tmpfs and to a passthrough mount, interleaved, and
# prints per-round ratios: if the round trip is the cost, the ratio rises
# with the block size.  With COUNT=1 it also counts the requests one
# 256 MiB write in 1 MiB blocks sends (the daemon run with -d).
#
#   bench/ptwrite.sh BUILD_DIR           (as root; BUILD_DIR from contrib/bench.sh)
#   ROUNDS=5 COUNT=1 bench/ptwrite.sh build-bench
set -euo pipefail

BUILD=$(readlink -f -- "${1:?usage: $0 BUILD_DIR (with src/daemon/volatilefs)}")
VFS=$BUILD/src/daemon/volatilefs
[[ $(id -u) == 0 ]] || { echo "needs root" >&2; exit 1; }
[[ -x $VFS ]] || { echo "no $VFS: run contrib/bench.sh --quick --only fio first" >&2; exit 1; }
ROUNDS=${ROUNDS:-5}
WORK=$(mktemp -d /tmp/ptwrite.XXXXXX)
mkdir "$WORK/t" "$WORK/p"
cleanup() {
	mountpoint -q "$WORK/t" && umount "$WORK/t"
	mountpoint -q "$WORK/p" && fusermount3 -u "$WORK/p"
	rm -rf -- "$WORK"
}
trap cleanup EXIT
mount -t tmpfs -o size=2G tmpfs "$WORK/t"
"$VFS" -o memory_limit=4G,passthrough=on "$WORK/p"

write_mibs() { # DIR BS
	fio --output-format=json --name=w --ioengine=psync --fallocate=none --bs="$2" \
		--size=1G --filename="$1/f" --rw=write --end_fsync=1 |
		jq -r '.jobs[0].write.bw_bytes / 1048576 | floor'
	rm -f -- "$1/f"
}

printf 'bs\tround\ttmpfs_MiBs\tpassthrough_MiBs\tratio\n'
for r in $(seq 1 "$ROUNDS"); do
	for bs in 1M 4M 16M; do
		t=$(write_mibs "$WORK/t" "$bs")
		p=$(write_mibs "$WORK/p" "$bs")
		printf '%s\t%s\t%s\t%s\t%s\n' "$bs" "$r" "$t" "$p" \
			"$(awk -v p="$p" -v t="$t" 'BEGIN { printf "%.2f", p / t }')"
	done
done

if [[ ${COUNT:-0} == 1 ]]; then
	fusermount3 -u "$WORK/p"
	"$VFS" -d -o memory_limit=4G,passthrough=on "$WORK/p" > "$WORK/debug" 2>&1 &
	for _ in $(seq 50); do mountpoint -q "$WORK/p" && break; sleep 0.1; done
	fio --output-format=json --name=w --ioengine=psync --fallocate=none --bs=1M \
		--size=256M --filename="$WORK/p/f" --rw=write --end_fsync=1 > /dev/null
	fusermount3 -u "$WORK/p"
	wait
	echo "requests during 256 writes of 1 MiB (opcode: count):"
	grep -aoE 'opcode: [A-Z_]+' "$WORK/debug" | sort | uniq -c
fi
