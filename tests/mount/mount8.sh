#!/bin/bash
# mount8.sh DAEMON - volatilefs through mount(8), mount.fuse3 and fstab lines.
#
# Checks (DESIGN section 2):
# - `mount -t fuse.volatilefs volatilefs MNT -o memory_limit=256M` mounts
#   through mount.fuse3 (Debian package fuse3), which runs `volatilefs` by
#   name through /bin/sh; the root's user.volatile.memory_limit and the
#   memory_limit line of user.volatile.stats read back 268435456, files
#   can be written and read, and /proc/mounts shows source volatilefs and
#   type fuse.volatilefs;
# - an fstab line, read with `mount --fstab FILE MNT` (so /etc/fstab is
#   never touched), with the options fstab lines carry for mount(8) and
#   systemd: _netdev,nofail,noauto,user,x-systemd.automount,comment=x;
# - mount.fuse3 run directly keeps the caller's PATH (a symlink to DAEMON
#   in a temporary directory is found) and passes some fstab-only options
#   (x-systemd.automount, comment=x) on to the daemon, which ignores them;
# - `-o dev,suid` gives the mount point dev and suid (fusermount3, which mounts
#   for auto_unmount, would leave it nosuid,nodev), and a device node works;
# - `mount -o remount,...` changes memory_limit and the mount point's flags
#   (ro, rw) of the live mount and refuses, naming it, an option only a new
#   mount can change;
# - `umount MNT` ends the daemon each time (it is gone within 10 s) and
#   leaves nothing mounted.
#
# Finding the daemon: mount(8) (util-linux) runs helpers with a sanitized
# environment, PATH removed, so /bin/sh searches its default path
# (/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin) and a PATH
# of ours is not seen.  This test first shows that (a symlink to DAEMON in
# a temporary directory at the head of PATH is not found; should a future
# mount(8) pass PATH, that attempt simply succeeds), then installs a
# temporary symlink /usr/local/sbin/volatilefs -> DAEMON.  It refuses to
# replace an existing /usr/local/sbin/volatilefs that is not DAEMON, and
# the EXIT trap removes the symlink (only if it is still ours), unmounts,
# stops a daemon it started if one is left, and removes its temporary
# files.  Needs root (mount -t) and /dev/fuse.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
need mount.fuse3 fuse3
need fusermount3 fuse3
need getfattr attr
need mount mount
[[ $(id -u) -eq 0 ]] || fail "needs root: mount -t fuse.volatilefs"
[[ -c /dev/fuse ]] || fail "/dev/fuse is missing: FUSE mounts are impossible here"

daemon=$(realpath "$(daemon_path "$1")")
[[ -x $daemon ]] || fail "daemon $daemon is not executable"

sys_link=/usr/local/sbin/volatilefs
made_link=0
mnt=
dpid=
tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-mount8.XXXXXX")
tmp=$(realpath "$tmp")

# The pid of the DAEMON process serving MNT (its command line names MNT).
find_daemon()
{
	local p exe
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2> /dev/null) || continue
		[[ $exe == "$daemon" ]] || continue
		if tr '\0' '\n' < "$p/cmdline" 2> /dev/null | grep -Fxq -- "$1"; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

cleanup()
{
	local status=$? i
	trap - ERR EXIT
	set +e
	if [[ -n $mnt ]] && is_mounted "$mnt"; then
		umount "$mnt" 2> /dev/null || fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt"
	fi
	if [[ -n $dpid ]] && kill -0 "$dpid" 2> /dev/null &&
		[[ $(readlink "/proc/$dpid/exe" 2> /dev/null) == "$daemon" ]]; then
		kill -TERM "$dpid"
		for ((i = 0; i < 30; i++)); do
			kill -0 "$dpid" 2> /dev/null || break
			sleep 0.1
		done
		kill -0 "$dpid" 2> /dev/null && kill -KILL "$dpid"
	fi
	if [[ -n $mnt ]] && is_mounted "$mnt"; then
		fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt"
	fi
	if [[ $made_link -eq 1 && -L $sys_link && $(readlink "$sys_link") == "$daemon" ]]; then
		rm -f "$sys_link"
	fi
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# mounted_checks WHAT LIMIT: the mount at $mnt is ours and answers, with
# memory_limit LIMIT; sets dpid.
mounted_checks()
{
	local what=$1 limit=$2 src type got
	is_mounted "$mnt" || fail "$what: $mnt is not in /proc/mounts"
	read -r src type < <(M=$mnt awk '$2 == ENVIRON["M"] { print $1, $3 }' /proc/mounts)
	eq "$what: source and type in /proc/mounts" "$src $type" "volatilefs fuse.volatilefs"
	dpid=$(find_daemon "$mnt") || fail "$what: no $daemon process serving $mnt"
	ok "$what: served by $daemon (pid $dpid): $(tr '\0' ' ' < "/proc/$dpid/cmdline")"
	got=$(getfattr --absolute-names --only-values -n user.volatile.memory_limit "$mnt")
	eq "$what: user.volatile.memory_limit" "$got" "$limit"
	got=$(getfattr --absolute-names --only-values -n user.volatile.stats "$mnt" |
		sed -n 's/^memory_limit=//p')
	eq "$what: memory_limit in user.volatile.stats" "$got" "$limit"
	echo "hello $what" > "$mnt/f"
	eq "$what: a file reads back" "$(cat "$mnt/f")" "hello $what"
	rm "$mnt/f"
}

# unmount_checks WHAT: umount ends the daemon and leaves nothing mounted.
unmount_checks()
{
	local what=$1 i
	umount "$mnt" || fail "$what: umount $mnt failed"
	! is_mounted "$mnt" || fail "$what: $mnt still mounted after umount"
	for ((i = 0; i < 100; i++)); do
		kill -0 "$dpid" 2> /dev/null || break
		sleep 0.1
	done
	! kill -0 "$dpid" 2> /dev/null || fail "$what: daemon $dpid still running 10 s after umount"
	dpid=
	ok "$what: umount ended the daemon, nothing left mounted"
}

mnt=$tmp/mnt
mkdir "$mnt"

# 1. What PATH does the helper's /bin/sh search?  Ours first.
mkdir "$tmp/bin"
ln -s "$daemon" "$tmp/bin/volatilefs"
if [[ -e $sys_link || -L $sys_link ]]; then
	[[ $(realpath "$sys_link") == "$daemon" ]] ||
		fail "$sys_link exists and is not $daemon: not replacing it (remove it, or run with that daemon)"
	ok "$sys_link is already $daemon"
else
	status=0
	err=$(PATH=$tmp/bin:$PATH mount -t fuse.volatilefs volatilefs "$mnt" \
		-o memory_limit=256M 2>&1) || status=$?
	if [[ $status -eq 0 ]] && is_mounted "$mnt"; then
		ok "mount.fuse3 found volatilefs on our PATH"
		dpid=$(find_daemon "$mnt") || true
		umount "$mnt"
		for ((i = 0; i < 100; i++)); do
			if [[ -z $dpid ]] || ! kill -0 "$dpid" 2> /dev/null; then
				break
			fi
			sleep 0.1
		done
		dpid=
	else
		[[ $err == *"volatilefs: not found"* ]] ||
			fail "mount with volatilefs only on PATH failed (status $status) in an unexpected way: $err"
		ok "mount(8) drops PATH: volatilefs on our PATH is not found ($err)"
	fi
	! is_mounted "$mnt" || fail "$mnt still mounted"
	ln -s "$daemon" "$sys_link"
	made_link=1
	ok "temporary symlink $sys_link -> $daemon"
fi

# 2. mount -t, as a user would type it.
PATH=$tmp/bin:$PATH mount -t fuse.volatilefs volatilefs "$mnt" -o memory_limit=256M ||
	fail "mount -t fuse.volatilefs volatilefs $mnt -o memory_limit=256M failed"
ok "mount -t fuse.volatilefs volatilefs MNT -o memory_limit=256M"
mounted_checks "mount -t" 268435456

# 2b. mount -o remount (tmpfs users change size= so): memory_limit and the
# mount point's flags change on the live mount, with the files kept; what
# only a new mount can change is refused with a message, and nothing changes.
echo kept > "$mnt/kept"
mount -o remount,memory_limit=128M "$mnt" || fail "mount -o remount,memory_limit=128M failed"
got=$(getfattr --absolute-names --only-values -n user.volatile.memory_limit "$mnt")
eq "remount: memory_limit" "$got" 134217728
eq "remount: a file survives it" "$(cat "$mnt/kept")" kept
mount -o remount,ro "$mnt" || fail "mount -o remount,ro failed"
! touch "$mnt/new" 2> /dev/null || fail "a file was created after remount,ro"
mount -o remount,rw "$mnt" || fail "mount -o remount,rw failed"
touch "$mnt/new" || fail "no file can be created after remount,rw"
ok "remount,ro makes the mount read-only, remount,rw writable again"
for bad in passthrough=off allow_other; do
	st=0
	err=$(mount -o "remount,$bad,memory_limit=64M" "$mnt" 2>&1) || st=$?
	[[ $st -ne 0 && $err == *"${bad%%=*}"*"mount again"* ]] ||
		fail "remount,$bad: status $st, message '$err': want a failure naming it"
	got=$(getfattr --absolute-names --only-values -n user.volatile.memory_limit "$mnt")
	eq "remount,$bad refused: memory_limit unchanged" "$got" 134217728
done
ok "remount of an option only a new mount can change: refused, with the way that works"
rm "$mnt/kept" "$mnt/new"
unmount_checks "mount -t"

# 2c. -o dev,suid (root): fusermount3, which mounts for libfuse's auto_unmount,
# makes every mount nosuid,nodev; the daemon gives root what it asked for, so a
# device node works as on tmpfs (xfstests generic/184, generic/434).
mount -t fuse.volatilefs volatilefs "$mnt" -o dev,suid ||
	fail "mount -t fuse.volatilefs volatilefs $mnt -o dev,suid failed"
flags=$(M=$mnt awk '$5 == ENVIRON["M"] { print $6 }' /proc/self/mountinfo | tail -n 1)
[[ ,$flags, != *,nodev,* && ,$flags, != *,nosuid,* ]] ||
	fail "-o dev,suid: the mount point's flags are $flags"
mknod "$mnt/null" c 1 3
echo x > "$mnt/null" || fail "-o dev,suid: writing to a character device node failed"
rm "$mnt/null"
dpid=$(find_daemon "$mnt") || fail "-o dev,suid: no daemon serving $mnt"
unmount_checks "-o dev,suid"
ok "-o dev,suid: the mount point is $flags, and a device node on it works"

# 3. An fstab line, with the options meant for mount(8) and systemd.
fstab=$tmp/fstab
cat > "$fstab" << EOF
# test fstab of mount8.sh
volatilefs  $mnt  fuse.volatilefs  memory_limit=256M,_netdev,nofail,noauto,user,x-systemd.automount,comment=x  0  0
EOF
PATH=$tmp/bin:$PATH mount --fstab "$fstab" "$mnt" ||
	fail "mount --fstab $fstab $mnt failed for: $(grep -v '^#' "$fstab")"
ok "mount --fstab FILE MNT, with _netdev,nofail,noauto,user,x-systemd.automount,comment=x"
mounted_checks "fstab line" 268435456
unmount_checks "fstab line"

# 4. The same by source name (mount -T FILE SOURCE), another limit.
sed -i 's/memory_limit=256M/memory_limit=0x8000000/' "$fstab"
mount -T "$fstab" volatilefs || fail "mount -T $fstab volatilefs failed"
ok "mount -T FILE volatilefs (by source), memory_limit=0x8000000"
mounted_checks "fstab by source" 134217728
unmount_checks "fstab by source"

# 5. mount.fuse3 run directly (as some tools and older mount(8)s do): it
# keeps the caller's PATH, so the symlink in our directory is the one
# started, and it passes the fstab-only options on: the daemon ignores them.
# (A symlink of ours in /usr/local/sbin goes first, so PATH alone finds it.)
if [[ $made_link -eq 1 ]]; then
	rm -f "$sys_link"
	made_link=0
fi
PATH=$tmp/bin:$PATH mount.fuse3 volatilefs "$mnt" -t fuse.volatilefs \
	-o memory_limit=256M,_netdev,nofail,noauto,user,x-systemd.automount,comment=x ||
	fail "mount.fuse3 volatilefs $mnt -o ...,_netdev,nofail,noauto,user,x-systemd.automount,comment=x failed"
ok "mount.fuse3 finds volatilefs on PATH, with the fstab-only options"
mounted_checks "mount.fuse3" 268435456
unmount_checks "mount.fuse3"
