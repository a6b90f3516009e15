#!/bin/bash
# fio.sh DAEMON - fio writes a file and reads it back, verified by crc32c.
#
# On a mount with the default memory limit, fio writes $VFS_FIO_SIZE (default
# 1G) sequentially in 1 MiB blocks with ioengine=psync and crc32c verify
# headers, then reads the whole file back and verifies it (do_verify, after
# dropping its pages from the page cache). A second fio run with verify_only,
# after dropping all caches when allowed (root), verifies it again from what
# the daemon holds. Checks: fio exits 0 both times, reports err=0, read back
# the full size, printed no verify error; the file has the full size. As
# root, the mount's readahead window (its bdi's read_ahead_kb) is 1024 KiB:
# the daemon widens it from the kernel's 128 KiB (src/daemon/ops.c).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need fio fio
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1"
fi

size=${VFS_FIO_SIZE:-1G}
bytes=$(numfmt --from=iec "$size") || fail "VFS_FIO_SIZE=$size is not a size"
((bytes >= 1048576 && bytes % 1048576 == 0)) || fail "VFS_FIO_SIZE=$size is not a whole number of MiB"
file=$VFS_TEST_DIR/fio.dat
log=$(mktemp "${TMPDIR:-/tmp}/volatilefs-fio.XXXXXX")
trap 'rm -f "$log"' EXIT

args=(--name=volatilefs-verify --filename="$file" --size="$bytes" --bs=1M
	--rw=write --ioengine=psync --verify=crc32c --verify_fatal=1 --verify_state_save=0
	--output-format=terse --terse-version=3)

# run_fio WHAT ARG...: run fio, check its exit status and terse line.
run_fio()
{
	local what=$1 st=0 line err read_kb
	shift
	echo "$vfs_test: fio ${args[*]} $*"
	timeout -k 10 280 fio "${args[@]}" "$@" > "$log" 2>&1 || st=$?
	[[ $st -ne 124 && $st -ne 137 ]] || fail "$what: fio still running after 280 s"
	if [[ $st -ne 0 ]]; then
		sed 's/^/    | /' "$log" >&2
		fail "$what: fio exited with status $st"
	fi
	ok "$what: fio exited 0"
	if grep -Eiv '^3;' "$log" | grep -Ei 'verify|crc|bad|error' > /dev/null; then
		sed 's/^/    | /' "$log" >&2
		fail "$what: fio printed verify errors"
	fi
	ok "$what: no verify errors printed"
	line=$(grep '^3;' "$log" | head -1)
	[[ -n $line ]] || fail "$what: no terse result line in: $(cat "$log")"
	err=$(cut -d';' -f5 <<< "$line")
	read_kb=$(cut -d';' -f6 <<< "$line")
	eq "$what: fio err" "$err" 0
	eq "$what: KiB read back and verified" "$read_kb" $((bytes / 1024))
}

if ((EUID == 0)); then
	bdi=/sys/class/bdi/$(mountpoint -d "$VFS_TEST_DIR")/read_ahead_kb
	[[ -r $bdi ]] || fail "no readahead setting for the mount at $bdi"
	eq "readahead window of the mount (KiB, $bdi)" "$(cat "$bdi")" 1024
fi
run_fio "write $size + verify" --do_verify=1 --end_fsync=1
eq "file size" "$(stat -c %s "$file")" "$bytes"

sync
if [[ -w /proc/sys/vm/drop_caches ]] && echo 3 > /proc/sys/vm/drop_caches 2> /dev/null; then
	ok "dropped the page cache"
else
	echo "$vfs_test: cannot drop the page cache (not root): verify_only relies on fio's invalidate"
fi
run_fio "verify_only after dropping caches" --verify_only=1
rm -f "$file"
