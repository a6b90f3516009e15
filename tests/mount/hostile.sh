#!/bin/bash
# hostile.sh DAEMON - sizes past 32 bits stay 64-bit to the reply (DESIGN section 9).
#
# Mounted with the default memory_limit (half of RAM). Checks:
# - a per-file `user.volatile.purge all` of a file holding more than 2 GiB
#   (2 GiB + 4 KiB, allocated with fallocate and marked `all`) succeeds
#   (it used to purge and then fail with ERANGE: an (int) of the 64-bit count
#   of bytes freed), and the purged set and the stats say all of it went.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1"
fi
need setfattr attr
need getfattr attr
cd "$VFS_TEST_DIR"

size=$(((2 << 30) + 4096))
fallocate -l "$size" big
setfattr -n user.volatile.mark -v all big
eq "a file of 2 GiB + 4 KiB is held" \
	"$(stat_of volatile_bytes)" "$size"
setfattr -n user.volatile.purge -v all big || fail "purge all of a 2 GiB + 4 KiB file failed"
ok "purge all of a 2 GiB + 4 KiB file reports success"
eq "its purged set is the whole file" \
	"$(getfattr --only-values -n user.volatile.purged big)" "0:$size"
eq "purged_bytes_total counts all of it" \
	"$(stat_of purged_bytes_total)" "$size"
eq "nothing volatile is held any more" \
	"$(stat_of volatile_bytes)" 0
rm big
