#!/bin/bash
# vpolicy.sh DAEMON - the purged_read, write_policy and memory_low options.
#
# Not mounted (DESIGN 2: a bad option is refused before anything is mounted):
# purged_read=maybe, purged_read= and write_policy= (and write_policy=sometimes),
# with and without -f, each exit with status 1 and a message naming the
# option, and no mount appears.
#
# Three mounts through with-mount.sh, each with one line per check; the first
# failure ends its part, the test fails if any part failed:
# - eio: -o purged_read=eio,write_policy=keep. After a purge (the file's pages
#   in the page cache before it), reading purged bytes fails with
#   "Input/output error" (cat, dd at the purged page), while reading the
#   non-purged pages of the same file works and gives their data, also right
#   after the page cache was dropped (readahead into the purged range must not
#   cost the pages before it). Written purged bytes read back again; punched
#   ones read as zeros; after removexattr of user.volatile.purged the lost
#   bytes read as zeros (DESIGN 4 is silent: they are no longer purged). Writes leave
#   the units as they are (keep): the ranges value does not change.
# - unmark: -o write_policy=unmark,purged_read=zero. Each write makes exactly
#   the pages it touches non-volatile, splitting units (priority and age kept
#   on both sides), in a bounded and in an unbounded unit and when appending;
#   writing into purged pages unmarks them too, and purged bytes read as zeros.
# - low: -o memory_limit=512M,memory_low=300M. An explicit memory_low does
#   not follow the limit at 90%; lowering the limit under it caps it; raising
#   the limit again gives it back (DESIGN 5 is silent: the effective low is the
#   smaller of the explicit one and the limit, as a user who chose 300M would
#   expect).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=vollib.sh
. "$(dirname "${BASH_SOURCE[0]}")/vollib.sh"

MiB=1048576

# ---------------------------------------------------- helpers (mounted parts)

# part_ok WHAT PATH OFF LEN: reading LEN bytes at OFF works and gives the
# reference's bytes.
part_ok()
{
	local got want
	got=$(dd if="$2" bs="$4" skip="$3" count=1 iflag=skip_bytes,fullblock status=none | od -An -v -tx1 |
		md5sum) || fail "$1: reading $4 bytes at $3 of $2 failed"
	want=$(dd if="$scratch/$2" bs="$4" skip="$3" count=1 iflag=skip_bytes,fullblock status=none |
		od -An -v -tx1 | md5sum)
	[[ $got == "$want" ]] || fail "$1: $4 bytes at $3 of $2 read back wrong"
	ok "$1"
}

drop_caches()
{
	sync
	echo 1 > /proc/sys/vm/drop_caches 2> /dev/null || true
}

# ------------------------------------------------------------ mounted parts

part_eio()
{
	local got
	mkfile e $((256 * 1024))
	cat e > /dev/null # into the page cache
	mark 128K:16K e
	purge all e
	pg "eio: purged" e "131072:16384"
	expect_fail "eio: cat of a file with purged bytes fails with Input/output error" \
		"Input/output error" cat e
	expect_fail "eio: dd of the purged page fails with Input/output error" \
		"Input/output error" dd if=e of=/dev/null bs=4K skip=32 count=1 status=none
	expect_fail "eio: dd of the last purged byte fails with Input/output error" \
		"Input/output error" dd if=e of=/dev/null bs=1 skip=147455 count=1 status=none
	part_ok "eio: the page before the purged range reads its data" e $((124 * 1024)) 4096
	part_ok "eio: the page after the purged range reads its data" e $((144 * 1024)) 4096
	part_ok "eio: the first 128 KiB read their data" e 0 $((128 * 1024))
	drop_caches
	part_ok "eio: after dropping the page cache, the page before still reads" e \
		$((120 * 1024)) 4096
	drop_caches
	part_ok "eio: after dropping the page cache, the last 112 KiB read" e \
		$((144 * 1024)) $((112 * 1024))
	expect_fail "eio: the purged page still fails after dropping the page cache" \
		"Input/output error" dd if=e of=/dev/null bs=4K skip=33 count=1 status=none

	put e 131072 16384
	pg "eio: writing the purged bytes empties the purged set" e
	same e "eio: ... and the whole file reads back"
	rg "eio: keep: writes leave the unit as it was" e "131072:16384 volatile priority=3"

	purge all e
	put e 135000 100
	pg "eio: a write removes its bytes from the purged set" e "131072:3928" "135100:12356"
	expect_fail "eio: the purged bytes beside them still fail" "Input/output error" \
		dd if=e of=/dev/null bs=100 skip=134000 count=1 iflag=skip_bytes status=none
	got=$(dd if=e bs=100 skip=135000 count=1 iflag=skip_bytes,direct status=none) ||
		fail "eio: O_DIRECT read of the 100 written bytes failed"
	eq "eio: the written bytes inside a purged page read (O_DIRECT)" "$got" \
		"$(printf 'x%.0s' {1..100})"
	fallocate -p -o 131072 -l 4096 e
	zero_ref e 131072 4096
	pg "eio: PUNCH_HOLE removes the punched bytes" e "135168:12288"
	part_ok "eio: punched bytes read as zeros, no error" e 131072 4096
	setfattr -x user.volatile.purged e
	pg "eio: removexattr forgets the purged set" e
	zero_ref e 135168 12288
	same e "eio: the whole file reads, the lost bytes as zeros"
	rg "eio: keep: the unit is still whole" e "131072:16384 volatile priority=3"

	mkfile k 65536
	mark "0:64K priority=5 age" k
	put k 20000 100
	put k 8190 4
	rg "keep (default): writes into volatile pages leave the unit intact" k \
		"0:65536 volatile priority=5 age"
	same k "keep: the written data reads back"

	# Through the page cache the kernel reads whole pages, so EIO covers
	# every page that holds a purged byte (volatilefs(8), purged_read):
	# never stale data, never silent zeros.  O_DIRECT is byte-exact (above).
	purge all e
	put e 135000 100
	pg "eio: purged again, 100 bytes written inside a purged page" e "131072:3928" \
		"135100:12356"
	echo 1 > /proc/sys/vm/drop_caches
	expect_fail "eio: a cached read of a page that still holds purged bytes fails" \
		"Input/output error" \
		dd if=e of=/dev/null bs=100 skip=135000 count=1 iflag=skip_bytes status=none
}

part_unmark()
{
	mkfile w 65536
	mark "0:64K priority=2 age" w
	put w 20000 100
	rg "unmark: a write inside one page makes that page non-volatile" w \
		"0:16384 volatile priority=2 age" "20480:45056 volatile priority=2 age"
	put w 8190 4
	rg "unmark: a write across a page boundary unmarks both pages" w \
		"0:4096 volatile priority=2 age" "12288:4096 volatile priority=2 age" \
		"20480:45056 volatile priority=2 age"
	put w 5000 10
	rg "unmark: a write into a non-volatile page changes nothing" w \
		"0:4096 volatile priority=2 age" "12288:4096 volatile priority=2 age" \
		"20480:45056 volatile priority=2 age"
	put w 65530 12
	rg "unmark: a write across EOF unmarks the last page" w \
		"0:4096 volatile priority=2 age" "12288:4096 volatile priority=2 age" \
		"20480:40960 volatile priority=2 age"
	put w 0 4096
	rg "unmark: writing a whole one-page unit removes it" w \
		"12288:4096 volatile priority=2 age" "20480:40960 volatile priority=2 age"
	same w "unmark: the data reads back"

	mkfile w2 8192
	mark all w2
	put w2 4096 1
	rg "unmark: a write inside an unbounded unit splits it" w2 \
		"0:4096 volatile priority=3" "8192:0 volatile priority=3"
	put w2 8192 4096
	rg "unmark: appending unmarks the appended pages of the unbounded unit" w2 \
		"0:4096 volatile priority=3" "12288:0 volatile priority=3"

	mkfile w3 16384
	mark all w3
	purge all w3
	pg "unmark: w3 purged" w3 "0:16384"
	zero_ref w3 0 16384
	put w3 100 10
	pg "unmark: the write removes exactly its bytes from the purged set" w3 "0:100" "110:16274"
	rg "unmark: the written page is non-volatile, the rest still a purged unit" w3 \
		"4096:0 purged priority=3"
	same w3 "purged_read=zero: purged bytes read as zeros, the written ones as written"
}

part_low()
{
	eq "low: explicit memory_low=300M" "$(stat_num memory_low)" $((300 * MiB))
	setfattr -n user.volatile.memory_limit -v 1G . || fail "memory_limit=1G refused"
	eq "low: raising the limit to 1G leaves the explicit memory_low" "$(stat_num memory_low)" \
		$((300 * MiB))
	setfattr -n user.volatile.memory_limit -v 256M . || fail "memory_limit=256M refused"
	eq "low: lowering the limit to 256M caps memory_low at it" "$(stat_num memory_low)" \
		$((256 * MiB))
	setfattr -n user.volatile.memory_limit -v 1G . || fail "memory_limit=1G refused"
	eq "low: raising the limit to 1G again gives the explicit 300M back" \
		"$(stat_num memory_low)" $((300 * MiB))
}

if [[ ${1:-} == --mounted ]]; then
	cd "$VFS_TEST_DIR"
	scratch=$(mktemp -d)
	trap 'rm -rf "$scratch"' EXIT
	case ${2:-} in
	eio) part_eio ;;
	unmark) part_unmark ;;
	low) part_low ;;
	*) fail "unknown part '${2:-}'" ;;
	esac
	mount_answers
	exit 0
fi

# ------------------------------------------------------------- not mounted

vfs_usage_check "$@"
need setfattr attr
need fallocate util-linux
daemon=$1

mnt=
cleanup()
{
	if [[ -n $mnt ]]; then
		if grep -qs " $mnt fuse" /proc/mounts; then
			fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null || true
		fi
		rmdir "$mnt" 2> /dev/null || true
	fi
}
trap cleanup EXIT

# refused OPTION [-f]: the daemon exits 1 naming the option, and mounts nothing.
refused()
{
	local opt=$1 name=${1%%=*} out status=0 mounted=0
	shift
	mnt=$(mktemp -d)
	out=$(timeout 10 "$daemon" "$@" -o "$opt" "$mnt" 2>&1 < /dev/null) || status=$?
	if grep -qs " $mnt fuse" /proc/mounts; then
		mounted=1
	fi
	cleanup
	mnt=
	((!mounted)) || fail "-o $opt $*: the daemon mounted (status $status, said '$out')"
	[[ $status -eq 1 ]] || fail "-o $opt $*: exit status $status, want 1 (said '$out')"
	[[ $out == *"$name"* ]] || fail "-o $opt $*: message '$out' does not name $name"
	ok "-o $opt ${*:+$* }refused with status 1, nothing mounted: $(short "$out")"
}
for opt in purged_read=maybe purged_read= write_policy= write_policy=sometimes; do
	refused "$opt"
	refused "$opt" -f
done

# Each mount's first failure ends that part; all three run, and the test
# fails when any did.
failed=
for part in eio unmark low; do
	case $part in
	eio) mopts=purged_read=eio,write_policy=keep ;;
	unmark) mopts=write_policy=unmark,purged_read=zero ;;
	low) mopts=memory_limit=512M,memory_low=300M ;;
	esac
	status=0
	bash "$vfs_dir/with-mount.sh" "$daemon" -o "$mopts" -- \
		bash "${BASH_SOURCE[0]}" --mounted "$part" || status=$?
	[[ $status -eq 0 ]] || failed+=" $part (-o $mopts, status $status)"
done
[[ -z $failed ]] || fail "mounted parts failed:$failed"
ok "all three mounted parts passed"
