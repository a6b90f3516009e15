#!/bin/bash
# user.sh DAEMON - an ordinary user mounts volatilefs through fusermount3.
#
# As uid/gid 65534 (nobody): mount on a directory that user owns, check the
# root belongs to that user with mode 0755 (tmpfs's default for non-root
# mounts), write and read a file, unmount with fusermount3 -u, and require
# exit status 0.  A trap unmounts lazily and kills the daemon on any failure.
set -euo pipefail

daemon=$(realpath "$1")
prog=user
ok() { printf '%s: ok - %s\n' "$prog" "$*"; }
fail() { printf '%s: FAIL - %s\n' "$prog" "$*" >&2; exit 1; }

command -v setpriv > /dev/null || fail "setpriv not installed (Debian package util-linux)"
[[ -u $(command -v fusermount3) ]] || fail "fusermount3 is not setuid root"

base=$(mktemp -d)
chmod 0755 "$base"
mnt=$base/mnt
mkdir "$mnt"
chown 65534:65534 "$mnt"
log=$base/daemon.log
pid=
fuse_mode=

cleanup()
{
	if grep -qs " $mnt fuse" /proc/mounts; then
		fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null || true
	fi
	if [[ -n $pid ]]; then kill "$pid" 2> /dev/null || true; fi
	rm -rf "$base"
	[[ -n $fuse_mode ]] && chmod "$fuse_mode" /dev/fuse
}
trap cleanup EXIT

# Debian's udev rule makes /dev/fuse 0666; some containers leave it 0600.
# Give ordinary users the device for this test only, as udev would.
if [[ $(stat -c %a /dev/fuse) != 666 ]]; then
	fuse_mode=$(stat -c %a /dev/fuse)
	chmod 0666 /dev/fuse
fi

as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# The daemon may not read a binary under a private directory: copy it.
cp "$daemon" "$base/volatilefs"
chmod 0755 "$base/volatilefs"
# passthrough=auto: without CAP_SYS_ADMIN the classic path (DESIGN section 11).
as_user "$base/volatilefs" -f -o passthrough=auto "$mnt" > "$log" 2>&1 &
pid=$!
for _ in $(seq 100); do
	grep -qs " $mnt fuse" /proc/mounts && break
	kill -0 "$pid" 2> /dev/null || fail "daemon died: $(cat "$log")"
	sleep 0.1
done
grep -qs " $mnt fuse" /proc/mounts || fail "not mounted after 10 s"
ok "mounted by uid 65534 through fusermount3"

[[ $(as_user stat -c '%u:%g %a' "$mnt") == "65534:65534 755" ]] ||
	fail "root is $(as_user stat -c '%u:%g %a' "$mnt"), want 65534:65534 755"
ok "root owned by the mounting user, mode 0755"

as_user sh -c "echo hello > '$mnt/f'"
[[ $(as_user cat "$mnt/f") == hello ]] || fail "file did not read back"
[[ $(as_user stat -c %u "$mnt/f") == 65534 ]] || fail "file not owned by the user"
ok "the user writes and reads a file"
as_user getfattr --only-values -n user.volatile.stats "$mnt" | grep -qx passthrough=off ||
	fail "a user's mount with passthrough=auto does not say passthrough=off"
ok "passthrough=auto without CAP_SYS_ADMIN: the classic path (passthrough=off)"

as_user fusermount3 -u "$mnt"
status=0
wait "$pid" || status=$?
pid=
[[ $status == 0 ]] || fail "daemon exited with status $status: $(cat "$log")"
[[ ! -s $log ]] || fail "daemon printed: $(cat "$log")"
ok "fusermount3 -u by the user: daemon exited 0"
