#!/bin/bash
# overlay.sh DAEMON - a directory of a volatilefs as an overlayfs upper directory.
#
# overlayfs needs of its upper file system RENAME_WHITEOUT (a deleted lower
# file leaves a whiteout, a character device 0:0, in the upper directory),
# extended attributes and d_type.  As root, with the overlay module: an
# overlay of a lower directory on a tmpfs and upper and work directories on
# the volatilefs mounts without warnings about them; a lower file removed
# through the overlay leaves a whiteout in the upper directory and is gone
# from the merged view; a new file lands in the upper directory; after a
# remount of the overlay the merged view is the same.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} == --mounted ]]; then
	lower=$(mktemp -d) merged=$(mktemp -d)
	trap 'is_mounted "$merged" && umount "$merged"; rm -rf "$lower"; rmdir "$merged"' EXIT
	mkdir "$VFS_TEST_DIR/up" "$VFS_TEST_DIR/work"
	echo lower > "$lower/gone"
	echo kept > "$lower/kept"
	opts="lowerdir=$lower,upperdir=$VFS_TEST_DIR/up,workdir=$VFS_TEST_DIR/work"
	before=$(dmesg 2> /dev/null | wc -l)
	mount -t overlay overlay -o "$opts" "$merged" ||
		fail "mount -t overlay with the upper directory on volatilefs failed"
	warned=$(dmesg 2> /dev/null | tail -n +"$((before + 1))" | grep -i 'overlayfs.*upper' || true)
	[[ -z $warned ]] || fail "overlayfs warned about the upper directory: $warned"
	rm "$merged/gone"
	echo new > "$merged/new"
	[[ ! -e $merged/gone ]] || fail "a lower file removed through the overlay is still there"
	w=$(stat -c '%F %t:%T' "$VFS_TEST_DIR/up/gone")
	eq "the whiteout in the upper directory" "$w" "character special file 0:0"
	eq "a new file in the upper directory" "$(cat "$VFS_TEST_DIR/up/new")" new
	umount "$merged"
	mount -t overlay overlay -o "$opts" "$merged"
	eq "after a remount: the merged view" "$(ls "$merged" | tr '\n' ' ')" "kept new "
	ok "overlayfs with its upper directory on volatilefs: whiteouts, new files, a remount"
	exit 0
fi
vfs_usage_check "$@"
need fusermount3 fuse3
[[ $(id -u) == 0 ]] || { echo "$vfs_test: needs root (overlayfs, CAP_MKNOD); skipped" >&2; exit 77; }
grep -qw overlay /proc/filesystems || modprobe overlay 2> /dev/null ||
	{ echo "$vfs_test: no overlay file system in this kernel; skipped" >&2; exit 77; }
vfs_run_mounted "${BASH_SOURCE[0]}" "$(daemon_path "$1")"
