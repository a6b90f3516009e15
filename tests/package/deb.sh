#!/bin/bash
# deb.sh [SRCDIR] - the Debian packages of contrib/deb.sh, installed on this
# machine, used through an fstab line, and removed without a trace.
#
# 1. contrib/deb.sh builds volatilefs, libvolatilefs0 and libvolatilefs-dev
#    from SRCDIR (default: this tree) into a temporary directory (--nocheck:
#    the unit suites run in the build directory anyway; lintian runs when it
#    is installed and must report no error);
# 2. `apt-get install -y ./volatilefs_V_ARCH.deb ./libvolatilefs0_...
#    ./libvolatilefs-dev_...` installs them; `dpkg -L` and the conffiles of
#    each are recorded;
# 3. an fstab line `volatilefs MNT fuse.volatilefs memory_limit=64M,noauto`
#    is added to the real /etc/fstab (which `mount MNT` reads; a backup is
#    kept), and `mount MNT` mounts it: /usr/sbin/volatilefs serves it
#    (started by mount.fuse3); a file is written, marked volatile with
#    setfattr and read back with getfattr; a client built with
#    `pkg-config --cflags --libs volatilefs` (the -dev package) marks a
#    second range through /usr/lib/ARCH/libvolatilefs.so.0; the installed
#    volatilectl shows both; a purge is reported; `umount MNT` ends the
#    daemon;
# 4. the fstab line is removed (/etc/fstab is byte for byte the backup);
# 5. `apt-get purge -y` removes the three packages: dpkg knows none of them
#    any more (no "config-files" state, no /var/lib/dpkg/info files), every
#    file and symlink `dpkg -L` listed is gone, every directory it listed is
#    gone unless another package owns it or it still holds something, no
#    conffile is left, and ldconfig no longer knows libvolatilefs.so.0.
#
# The EXIT trap (also on SIGINT/SIGTERM, as when meson's timeout fires)
# unmounts, takes the fstab line out (restoring the backup when nothing else
# changed the file), and purges the packages if they got installed, so a
# failure leaves neither a mount, nor the line, nor the packages behind (an
# installed /usr/sbin/volatilefs would be what mount(8) starts for the other
# tests' fstab lines; the build tree's programs find their own library
# through their RUNPATH either way).
#
# Refuses to run (fails) when one of the packages is already installed
# (it would remove them) or when a volatilefs in /usr/local/sbin or
# /usr/local/bin would be started instead of the packaged one.  Skipped
# (exit 77) when not root, or without dpkg-buildpackage (dpkg-dev), dh
# (debhelper) or apt-get; contrib/test.sh installs them, so it runs in CI.
# Needs /dev/fuse, fuse3 (mount.fuse3), attr and gcc.  About 60-90 s on
# two cores, most of it dpkg-buildpackage and lintian.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../mount/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../mount/lib.sh"

self=$(realpath "${BASH_SOURCE[0]}")
readonly PKGS=(volatilefs libvolatilefs0 libvolatilefs-dev)

if [[ $# -gt 1 || ${1:-} == -* ]]; then
	echo "usage: $0 [SRCDIR]   (the volatilefs source tree; default: this script's)" >&2
	exit 2
fi
srcdir=$(realpath "${1:-$(dirname "$self")/../..}")
[[ -x $srcdir/contrib/deb.sh ]] || fail "$srcdir has no contrib/deb.sh"

skip() {
	printf '%s: SKIP - %s\n' "$vfs_test" "$*"
	exit 77
}
[[ $(id -u) -eq 0 ]] || skip "needs root (apt-get install, mount, /etc/fstab)"
command -v dpkg-buildpackage > /dev/null || skip "dpkg-buildpackage not installed (Debian package dpkg-dev)"
command -v dh > /dev/null || skip "dh not installed (Debian package debhelper)"
command -v apt-get > /dev/null || skip "no apt-get: not a Debian system"
need mount.fuse3 fuse3
need getfattr attr
need setfattr attr
need gcc gcc
need pkg-config pkg-config
[[ -c /dev/fuse ]] || fail "/dev/fuse is missing: FUSE mounts are impossible here"

# Installed (or half-installed, or config-files) packages of ours: none.
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2> /dev/null || true)
	[[ -z $st || $st == un* || $st == pn* ]] ||
		fail "package $p is already known to dpkg (status '$st'): this test would remove it; not touching it"
done
for d in /usr/local/sbin /usr/local/bin; do
	[[ ! -e $d/volatilefs ]] ||
		fail "$d/volatilefs exists: mount(8) would start it instead of the packaged daemon"
done
ok "none of ${PKGS[*]} installed, no volatilefs in /usr/local"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-deb-test.XXXXXX")
tmp=$(realpath "$tmp")
mnt=$tmp/mnt
fstab_line=
installed=0
dpid=

# The pid of the /usr/sbin/volatilefs process serving MNT.
find_daemon() {
	local p
	for p in /proc/[0-9]*; do
		[[ $(readlink "$p/exe" 2> /dev/null) == /usr/sbin/volatilefs ]] || continue
		if tr '\0' '\n' < "$p/cmdline" 2> /dev/null | grep -Fxq -- "$1"; then
			echo "${p#/proc/}"
			return 0
		fi
	done
	return 1
}

apt() {
	DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=120 "$@"
}

# The fstab line out again: the backup back if nothing else changed the file,
# else only our line removed.
fstab_restore() {
	[[ -n $fstab_line ]] || return 0
	if cmp -s /etc/fstab "$tmp/fstab.expected"; then
		cat "$tmp/fstab.orig" > /etc/fstab
	elif grep -qxF -- "$fstab_line" /etc/fstab; then
		echo "deb: /etc/fstab changed meanwhile: removing only our line" >&2
		grep -vxF -- "$fstab_line" /etc/fstab > "$tmp/fstab.new" || true
		cat "$tmp/fstab.new" > /etc/fstab
	fi
	fstab_line=
}

cleanup() {
	local status=$? i
	trap - ERR EXIT INT TERM
	set +e
	if is_mounted "$mnt"; then
		umount "$mnt" 2> /dev/null || fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt"
	fi
	if [[ -n $dpid ]] && kill -0 "$dpid" 2> /dev/null &&
		[[ $(readlink "/proc/$dpid/exe" 2> /dev/null) == /usr/sbin/volatilefs ]]; then
		kill -TERM "$dpid"
		for ((i = 0; i < 30; i++)); do
			kill -0 "$dpid" 2> /dev/null || break
			sleep 0.1
		done
		kill -0 "$dpid" 2> /dev/null && kill -KILL "$dpid"
	fi
	if is_mounted "$mnt"; then
		fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt"
	fi
	fstab_restore
	if [[ $installed -eq 1 ]]; then
		echo "deb: removing the packages after a failure" >&2
		apt purge "${PKGS[@]}" > "$tmp/purge-cleanup.log" 2>&1 ||
			{ echo "deb: apt-get purge failed:" >&2; tail -n 20 "$tmp/purge-cleanup.log" >&2; }
	fi
	if [[ ${VFS_DEB_KEEP:-0} == 1 ]]; then
		echo "deb: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# run LOG WHAT COMMAND...: run quietly; on failure show the end of the log.
run() {
	local log=$1 what=$2 started=$SECONDS
	shift 2
	if ! "$@" > "$log" 2>&1; then
		tail -n 40 "$log" >&2
		fail "$what: '$*' failed (log above)"
	fi
	ok "$what ($((SECONDS - started)) s)"
}

# 1. Build.
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$srcdir/meson.build" | head -n 1)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb_opts=(--outdir "$tmp/out" --nocheck)
if ! command -v lintian > /dev/null; then
	deb_opts+=(--no-lintian)
	echo "deb: lintian not installed (Debian package lintian): not checking with it" >&2
fi
# The build's compiler cache (if meson finds ccache) is not the user's business.
run "$tmp/build.log" "contrib/deb.sh ${deb_opts[*]} (dpkg-buildpackage, lintian)" \
	env CCACHE_DISABLE=1 "$srcdir/contrib/deb.sh" "${deb_opts[@]}"
if [[ " ${deb_opts[*]} " != *" --no-lintian "* ]]; then
	if grep -E '^[EW]: ' "$tmp/build.log" >&2; then
		echo "deb: lintian warnings (above); no errors" >&2
	fi
	ok "lintian: no errors"
fi
debs=()
for p in "${PKGS[@]}"; do
	f=$tmp/out/${p}_${version}_${arch}.deb
	[[ -f $f ]] || fail "no ${f##*/} among: $(ls "$tmp/out")"
	debs+=("./${f##*/}")
done
ok "built ${debs[*]}"

# 2. Install.
installed=1 # from here on, the trap purges
(cd "$tmp/out" && run "$tmp/install.log" "apt-get install -y ${debs[*]}" apt install "${debs[@]}")
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev} ${Version}' "$p")
	eq "dpkg: $p installed" "$st" "ii  $version"
	# Each path with its kind now, while it exists: d (directory) or f.
	dpkg -L "$p" | while IFS= read -r path; do
		[[ -n $path && $path != /. ]] || continue
		if [[ -d $path && ! -L $path ]]; then echo "d $path"; else echo "f $path"; fi
	done > "$tmp/$p.list"
	dpkg-query -W -f='${Conffiles}\n' "$p" | awk 'NF { print $1 }' > "$tmp/$p.conffiles"
done
ok "dpkg -L: $(cat "$tmp"/*.list | wc -l) paths; conffiles: $(cat "$tmp"/*.conffiles | wc -l)"
[[ -x /usr/sbin/volatilefs && -x /usr/bin/volatilectl ]] ||
	fail "/usr/sbin/volatilefs or /usr/bin/volatilectl missing after install"
# ld.so may name it through the usr-merge alias /lib: compare real paths.
pkglib=$(realpath "/usr/lib/$multiarch/libvolatilefs.so.0")
lib=$(ldd /usr/bin/volatilectl | awk '$1 == "libvolatilefs.so.0" { print $3 }')
eq "volatilectl uses the packaged library" "$(realpath "${lib:-/nonexistent}")" "$pkglib"
eq "pkg-config --modversion volatilefs" "$(pkg-config --modversion volatilefs)" "$version"

# 3. An fstab line, mount MNT, use it, umount.
mkdir "$mnt"
cp -p /etc/fstab "$tmp/fstab.orig"
line="volatilefs  $mnt  fuse.volatilefs  memory_limit=64M,noauto  0  0"
{
	cat "$tmp/fstab.orig"
	# A file without a final newline gets one before our line.
	[[ ! -s $tmp/fstab.orig || $(tail -c 1 "$tmp/fstab.orig" | od -An -c) == *'\n'* ]] || echo
	echo "$line"
} > "$tmp/fstab.expected"
fstab_line=$line
cat "$tmp/fstab.expected" > /etc/fstab
ok "fstab line added: $line"

mount "$mnt" || fail "mount $mnt (through /etc/fstab) failed"
is_mounted "$mnt" || fail "mount $mnt returned 0 but $mnt is not in /proc/mounts"
read -r src type < <(M=$mnt awk '$2 == ENVIRON["M"] { print $1, $3 }' /proc/mounts)
eq "mount MNT: source and type" "$src $type" "volatilefs fuse.volatilefs"
dpid=$(find_daemon "$mnt") || fail "no /usr/sbin/volatilefs process serving $mnt"
ok "served by /usr/sbin/volatilefs (pid $dpid)"

f=$mnt/file
head -c 8192 /dev/zero | tr '\0' x > "$f"
setfattr -n user.volatile.mark -v 0:4096 "$f"
eq "getfattr user.volatile.ranges after setfattr mark" \
	"$(getfattr --absolute-names --only-values -n user.volatile.ranges "$f")" "0:4096 volatile priority=3"

cat > "$tmp/client.c" << 'EOF'
#include <fcntl.h>
#include <stdio.h>
#include <volatilefs.h>

int main(int argc, char **argv)
{
	int fd = open(argv[argc - 1], O_RDWR);

	if (fd < 0 || volatilefs_mark(fd, 4096, 4096, VOLATILEFS_PRIORITY(1)) != 0) {
		perror(argv[argc - 1]);
		return 1;
	}
	return 0;
}
EOF
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
gcc -o "$tmp/client" "$tmp/client.c" $(pkg-config --cflags --libs volatilefs) ||
	fail "a client built with pkg-config --cflags --libs volatilefs does not compile"
lib=$(ldd "$tmp/client" | awk '$1 == "libvolatilefs.so.0" { print $3 }')
eq "the client uses the packaged library" "$(realpath "${lib:-/nonexistent}")" "$pkglib"
"$tmp/client" "$f" || fail "the client's volatilefs_mark failed"
eq "getfattr after the client's volatilefs_mark" \
	"$(getfattr --absolute-names --only-values -n user.volatile.ranges "$f")" \
	"$(printf '0:4096 volatile priority=3\n4096:4096 volatile priority=1')"
out=$(volatilectl stats "$mnt") || fail "volatilectl stats $mnt failed: $out"
grep -Eq '^memory_limit .*\(67108864 bytes\)$' <<< "$out" ||
	fail "volatilectl stats does not show the fstab line's limit (64M): $(short "$out")"
ok "installed volatilectl stats shows the fstab line's limit"
setfattr -n user.volatile.purge -v all "$f"
eq "getfattr user.volatile.purged after a purge" \
	"$(getfattr --absolute-names --only-values -n user.volatile.purged "$f")" "0:8192"

umount "$mnt" || fail "umount $mnt failed"
! is_mounted "$mnt" || fail "$mnt still mounted after umount"
for ((i = 0; i < 100; i++)); do
	kill -0 "$dpid" 2> /dev/null || break
	sleep 0.1
done
! kill -0 "$dpid" 2> /dev/null || fail "daemon $dpid still running 10 s after umount"
dpid=
ok "umount MNT ended the daemon"

# 4. The fstab line out.
fstab_restore
cmp -s /etc/fstab "$tmp/fstab.orig" || fail "/etc/fstab differs from its backup after the test"
ok "/etc/fstab is its backup again"

# 5. Purge and look for leftovers.
run "$tmp/purge.log" "apt-get purge -y ${PKGS[*]}" apt purge "${PKGS[@]}"
installed=0
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2> /dev/null || true)
	[[ -z $st || $st == un* || $st == pn* ]] || fail "dpkg still knows $p after purge: status '$st'"
	left=$(find /var/lib/dpkg/info -maxdepth 1 \( -name "$p.*" -o -name "$p:*" \) | head -n 3)
	[[ -z $left ]] || fail "dpkg's files of $p are left: $left"
done
ok "dpkg knows none of ${PKGS[*]} (no config-files state, no info files)"
nfiles=0 ndirs=0 kept=0
while read -r kind path; do
	if [[ $kind == f ]]; then
		nfiles=$((nfiles + 1))
		[[ ! -e $path && ! -L $path ]] || fail "$path (listed by dpkg -L) is still there after purge"
		continue
	fi
	ndirs=$((ndirs + 1))
	[[ -e $path ]] || continue
	# A directory stays only when shared: another package owns it, or it
	# holds something (through a usr-merge alias, dpkg may not know the owner).
	if [[ -z $(find "$path" -mindepth 1 -maxdepth 1 -print -quit) ]] &&
		! dpkg-query -S "$path" > /dev/null 2>&1; then
		fail "empty directory $path left behind, owned by no package"
	fi
	kept=$((kept + 1))
done < <(cat "$tmp"/*.list)
ok "$nfiles files and links gone; of $ndirs directories, $kept left are shared or in use"
while IFS= read -r c; do
	[[ -z $c ]] && continue
	[[ ! -e $c ]] || fail "conffile $c left after purge"
done < <(cat "$tmp"/*.conffiles)
ok "no conffile left"
! ldconfig -p | grep -q 'libvolatilefs\.so' || fail "ldconfig still knows libvolatilefs after purge"
ok "ldconfig no longer knows libvolatilefs"
! command -v volatilectl > /dev/null || fail "volatilectl still on PATH: $(command -v volatilectl)"
ok "nothing of the packages is left"
