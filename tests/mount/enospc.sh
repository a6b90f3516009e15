#!/bin/bash
# enospc.sh DAEMON - a full mount fails writes with ENOSPC and loses nothing.
#
# Mounts with -o memory_limit=32M ($VFS_TEST_LIMIT_MB overrides the 32, for
# sanitizer builds whose baseline RSS is larger) and checks (DESIGN sections 2-3):
# - statfs (stat -f): block size 4096, total blocks = limit/4096, free = avail
#   = total while nothing is stored;
# - writing 1 MiB files of random data fails with "No space left on device"
#   before more than the limit was written (and not before half of it);
# - the file whose write failed holds a prefix of what was written to it, and
#   every file written before reads back with its checksum unchanged;
# - statfs free blocks fell by at least what was stored;
# - after deleting the files, free blocks come back and the same amount of
#   data can be written again (less an eighth of the limit, for allocator
#   and sanitizer overhead).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

limit_mb=${VFS_TEST_LIMIT_MB:-32}
if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	[[ $limit_mb =~ ^[1-9][0-9]*$ ]] || fail "VFS_TEST_LIMIT_MB=$limit_mb is not a number of MiB"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o "memory_limit=${limit_mb}M" -- "$limit_mb"
fi
limit_mb=$2
limit=$((limit_mb * 1024 * 1024))
blocks=$((limit / 4096))
mib=$((1024 * 1024))

work=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-enospc.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$VFS_TEST_DIR"

# statfs FIELD: one field of `stat -f` on the mount.
statfs() { stat -f -c "%$1" .; }

eq "statfs block size (f_bsize) is 4096" "$(statfs s)" 4096
eq "statfs fundamental block size (f_frsize) is 4096" "$(statfs S)" 4096
eq "statfs total blocks = ${limit_mb} MiB / 4096" "$(statfs b)" "$blocks"
free0=$(statfs f)
avail0=$(statfs a)
eq "statfs free = available blocks" "$avail0" "$free0"
# A little slack for whatever the daemon counts for the empty root.
if ((free0 > blocks || free0 < blocks - 256)); then
	fail "statfs free blocks on an empty mount: got $free0, want $blocks (at most 1 MiB less)"
fi
ok "statfs free blocks on an empty mount: $free0 of $blocks"

# Fill the mount with 1 MiB files of random data until a write fails.
n_full=0
partial=
partial_size=0
max_files=$((limit_mb * 2 + 16))
for ((i = 0; i < max_files; i++)); do
	head -c "$mib" /dev/urandom > "$work/chunk.$i"
	if err=$(dd if="$work/chunk.$i" of="fill.$i" bs=64K status=none 2>&1); then
		(cd "$work" && sha256sum "chunk.$i" | sed "s/chunk\.$i\$/fill.$i/") >> "$work/sums"
		rm "$work/chunk.$i"
		n_full=$((n_full + 1))
		continue
	fi
	[[ $err == *"No space left on device"* ]] ||
		fail "write of fill.$i failed with '$err', want 'No space left on device'"
	partial=fill.$i
	# Its create may be the call refused: a new node needs memory too (DESIGN
	# section 3), and whether the limit falls on a create or a write depends
	# on the daemon's own RSS (libfuse's buffers: with meson's MALLOC_PERTURB_
	# each new worker's 1 MiB buffer is touched).  Then nothing was written.
	if [[ -e $partial ]]; then
		partial_size=$(stat -c %s "$partial")
	else
		partial_size=0
		ok "the create of $partial was refused with ENOSPC (the limit fell on a create)"
	fi
	break
done
[[ -n $partial ]] ||
	fail "wrote $n_full MiB into a ${limit_mb} MiB mount and no write failed with ENOSPC"
written=$((n_full * mib + partial_size))
ok "a write failed with ENOSPC after $written bytes ($n_full full MiB files + $partial_size bytes)"

((written <= limit)) || fail "ENOSPC came only after $written bytes, more than the limit $limit"
ok "ENOSPC came before the limit ($written <= $limit bytes)"
((written >= limit / 2)) ||
	fail "ENOSPC already after $written bytes, under half the ${limit_mb} MiB limit (baseline RSS too high? raise VFS_TEST_LIMIT_MB)"
ok "at least half the limit could be written"

((partial_size <= mib)) || fail "$partial grew to $partial_size bytes, more than the 1 MiB written"
[[ ! -e $partial ]] || cmp -s -n "$partial_size" "$partial" "$work/chunk.$i" ||
	fail "$partial ($partial_size bytes) is not a prefix of the data written to it"
ok "the file whose write failed holds a prefix of its data ($partial_size bytes)"

out=$(sha256sum --quiet -c "$work/sums" 2>&1) || fail "checksums changed after ENOSPC: $out"
ok "all $n_full files written before ENOSPC read back unchanged"

free1=$(statfs f)
want=$((blocks - n_full * mib / 4096))
((free1 <= want)) || fail "statfs free blocks after filling: $free1, want at most $want"
ok "statfs free blocks fell to $free1 (at most $want)"

# Memory held must come back once the files are gone.
rss_full=$(daemon_rss_kib)
rm -f fill.*
for ((t = 0; t < 100; t++)); do
	(($(statfs f) >= free0)) && break
	sleep 0.1
done
free2=$(statfs f)
((free2 >= free0)) || fail "statfs free blocks after deleting everything: $free2, want $free0"
ok "statfs free blocks back to $free2 after deleting the files"
echo "$vfs_test: daemon VmRSS $rss_full KiB when full, $(daemon_rss_kib) KiB after deleting"

# Allocator and sanitizer overhead may keep a little of the first round's
# memory: ask for all but an eighth of the limit of what fitted before.
n_again=$((n_full - limit_mb / 8))
: > "$work/sums"
for ((i = 0; i < n_again; i++)); do
	head -c "$mib" /dev/urandom > "$work/chunk"
	err=$(dd if="$work/chunk" of="again.$i" bs=64K status=none 2>&1) ||
		fail "write of again.$i (after $i MiB) failed after deleting everything: $err"
	(cd "$work" && sha256sum chunk | sed "s/chunk\$/again.$i/") >> "$work/sums"
done
out=$(sha256sum --quiet -c "$work/sums" 2>&1) || fail "checksums of the second fill differ: $out"
ok "after deleting, $n_again MiB could be written again and read back"
rm -f again.*
