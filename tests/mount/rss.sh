#!/bin/bash
# rss.sh DAEMON - memory is held for data and given back on delete.
#
# Mounts with -o memory_limit=1G and checks (DESIGN sections 2-3, 11):
# - writing 200 MiB of random data raises the memory the daemon holds (its
#   VmRSS, plus shared_bytes on the passthrough path) by at least
#   150 MiB, and deleting the files makes it fall by at least 150 MiB (within
#   10 s: the kernel sends FORGET when it drops the inodes);
# - st_blocks counts memory held: 0 for a 1 GiB sparse file made by truncate,
#   2048 (1 MiB, du -k 1024) for a 1 MiB written file, 2048 for 1 MiB written
#   in the middle of the sparse file, 1024 after punching half of the 1 MiB
#   file, 0 after truncating it to 0.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o memory_limit=1G
fi

cd "$VFS_TEST_DIR"
mib_k=1024

blocks() { stat -c %b "$1"; }

# st_blocks first, on an otherwise empty mount.
eq "stat reports st_blocks in 512-byte units" "$(stat -c %B .)" 512
truncate -s 1G sparse
eq "sparse 1 GiB file (truncate): size" "$(stat -c %s sparse)" 1073741824
eq "sparse 1 GiB file (truncate): st_blocks 0" "$(blocks sparse)" 0
eq "sparse 1 GiB file (truncate): du -k 0" "$(du -k sparse | cut -f1)" 0

head -c 1M /dev/urandom > written
eq "1 MiB written file: st_blocks 2048" "$(blocks written)" 2048
eq "1 MiB written file: du -k 1024" "$(du -k written | cut -f1)" 1024

dd if=written of=sparse bs=1M seek=512 conv=notrunc status=none
eq "1 MiB written into the middle of the sparse file: st_blocks 2048" "$(blocks sparse)" 2048
eq "... and its size is still 1 GiB" "$(stat -c %s sparse)" 1073741824

if command -v fallocate > /dev/null; then
	fallocate --punch-hole --offset 0 --length 512K written
	eq "1 MiB file with its first 512 KiB punched: st_blocks 1024" "$(blocks written)" 1024
	eq "... and its size is still 1 MiB" "$(stat -c %s written)" 1048576
fi
truncate -s 0 written
eq "file truncated to 0: st_blocks 0" "$(blocks written)" 0
rm -f sparse written

# Memory held (DESIGN 3, 11): the daemon's VmRSS and the shared memory of its
# backing files (stats' shared_bytes: 0 on the classic path).
held_kib()
{
	local shared
	shared=$(stat_of shared_bytes)
	echo $(($(daemon_rss_kib) + ${shared:-0} / 1024))
}

# RSS: hold 200 MiB, then give it back.
rss0=$(held_kib)
for i in 1 2 3 4; do
	head -c 50M /dev/urandom > "big.$i"
done
rss1=$(held_kib)
echo "$vfs_test: memory held ${rss0} KiB before, ${rss1} KiB holding 200 MiB"
((rss1 - rss0 >= 150 * mib_k)) ||
	fail "memory held rose only $(((rss1 - rss0) / mib_k)) MiB while holding 200 MiB, want >= 150"
ok "memory held rose by $(((rss1 - rss0) / mib_k)) MiB while holding 200 MiB"

rm -f big.*
for ((t = 0; t < 100; t++)); do
	rss2=$(held_kib)
	((rss1 - rss2 >= 150 * mib_k)) && break
	sleep 0.1
done
echo "$vfs_test: memory held ${rss2} KiB after deleting"
((rss1 - rss2 >= 150 * mib_k)) ||
	fail "memory held fell only $(((rss1 - rss2) / mib_k)) MiB after deleting 200 MiB, want >= 150 (from $rss1 to $rss2 KiB)"
ok "memory held fell by $(((rss1 - rss2) / mib_k)) MiB after deleting 200 MiB of files"
