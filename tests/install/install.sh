#!/bin/bash
# install.sh [SRCDIR] - what `meson install` puts where, and that it works.
#
# Configures a fresh build of SRCDIR (default: the tree this script is in)
# with --prefix=/usr, builds it and installs it with DESTDIR set to a
# temporary directory, as a distribution package build does.  Then:
# - every file is in its FHS place, and nothing is outside /usr:
#     usr/sbin/volatilefs, usr/bin/volatilectl,
#     usr/LIBDIR/libvolatilefs.so.0.* with the symlinks libvolatilefs.so.0
#     (the soname) and libvolatilefs.so (for -lvolatilefs),
#     usr/include/volatilefs.h, usr/LIBDIR/pkgconfig/volatilefs.pc,
#     usr/share/man/man{1,3,8}/ volatilectl.1 volatilefs.3 (and
#     volatilefs_{mark,unmark,purged}.3 pointing to it) volatilefs.8,
#     usr/share/bash-completion/completions/volatilectl,
#     usr/lib/systemd/{system,user}/volatilefs@.service;
#   LIBDIR is meson's libdir (lib/x86_64-linux-gnu on Debian amd64);
# - readelf: SONAME libvolatilefs.so.0, only volatilefs_mark, _unmark and
#   _purged exported (version VOLATILEFS_0.1), and volatilectl needs
#   libvolatilefs.so.0 with no RPATH/RUNPATH left from the build tree;
# - pkg-config finds volatilefs.pc (PKG_CONFIG_PATH into DESTDIR,
#   PKG_CONFIG_SYSROOT_DIR=DESTDIR so -I and -L point into it), with the
#   project's version; the header compiles on its own (C99, pedantic);
# - client.c, built with nothing but those flags, run with LD_LIBRARY_PATH
#   into DESTDIR (ldd shows that copy is the one used), marks, unmarks and
#   lists purged extents on a mount of the *installed* daemon (through
#   tests/mount/with-mount.sh: exit status 0, no output from the daemon),
#   and gets ENOTTY from every call on a file in /tmp; the installed
#   volatilectl works against the mount.
#
# Needs meson, ninja, a C compiler, pkg-config, readelf (binutils), attr
# (getfattr), and for the mount part root, /dev/fuse and fusermount3.
# VFS_INSTALL_KEEP=1 keeps the temporary directory (printed) for a look.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../mount/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../mount/lib.sh"

self=$(realpath "${BASH_SOURCE[0]}")

if [[ ${1:-} == --mounted ]]; then
	# Inside with-mount.sh, the installed daemon mounted at $VFS_TEST_DIR:
	#   install.sh --mounted CLIENT LIBDIR VOLATILECTL
	client=$2 libdir=$3 ctl=$4
	f=$VFS_TEST_DIR/atlas
	head -c 16384 /dev/zero | tr '\0' a > "$f"

	status=0
	out=$(LD_LIBRARY_PATH=$libdir "$client" "$f") || status=$?
	eq "client on volatilefs: exit status" "$status" 0
	eq "client on volatilefs: mark, unmark, purged" "${out//$'\n'/ | }" \
		'mark 0:8192: ok | unmark 0:4096: bytes=4096 purged=0 | purged: count=0'
	eq "the unit the client left, seen by getfattr" \
		"$(getfattr --absolute-names --only-values -n user.volatile.ranges "$f")" "4096:4096 volatile priority=1"

	setfattr -n user.volatile.purge -v all "$f"
	status=0
	out=$(LD_LIBRARY_PATH=$libdir "$client" "$f") || status=$?
	eq "client after a purge: exit status" "$status" 0
	eq "client after a purge: the purged extent" "${out//$'\n'/ | }" \
		'mark 0:8192: ok | unmark 0:4096: bytes=4096 purged=0 | purged: count=1 4096:4096'

	out=$(LD_LIBRARY_PATH=$libdir "$ctl" status "$f") ||
		fail "installed volatilectl status $f failed: $out"
	[[ $out == *4096* ]] || fail "volatilectl status shows no unit at 4096: $out"
	ok "installed volatilectl status"
	out=$(LD_LIBRARY_PATH=$libdir "$ctl" stats "$VFS_TEST_DIR") ||
		fail "installed volatilectl stats failed: $out"
	[[ $out == *memory_limit*67108864* ]] ||
		fail "volatilectl stats does not show memory_limit 67108864: $(short "$out")"
	ok "installed volatilectl stats shows the mount's limit"
	rm -f "$f"
	exit 0
fi

if [[ $# -gt 1 || ${1:-} == -* ]]; then
	echo "usage: $0 [SRCDIR]   (the volatilefs source tree; default: this script's)" >&2
	exit 2
fi
srcdir=$(realpath "${1:-$(dirname "$self")/../..}")
[[ -f $srcdir/meson.build && -f $srcdir/include/volatilefs.h ]] ||
	fail "$srcdir is not the volatilefs source tree"

need meson meson
need ninja ninja-build
need pkg-config pkg-config
need readelf binutils
need getfattr attr
need fusermount3 fuse3
cc=${CC:-cc}
need "$cc" gcc
[[ $(id -u) -eq 0 ]] || fail "the mount part needs root (as the other mount tests)"
[[ -c /dev/fuse ]] || fail "/dev/fuse is missing: FUSE mounts are impossible here"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-install.XXXXXX")
cleanup()
{
	if [[ ${VFS_INSTALL_KEEP:-0} == 1 ]]; then
		echo "install: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT

# run LOG WHAT COMMAND...: run quietly; on failure show the end of the log.
run()
{
	local log=$1 what=$2
	shift 2
	if ! "$@" > "$log" 2>&1; then
		tail -n 40 "$log" >&2
		fail "$what: '$*' failed (log above)"
	fi
	ok "$what"
}

# The README's recipe, which the steps below follow in a temporary directory.
recipe='meson setup build --prefix=/usr && meson compile -C build'
grep -qxF "$recipe" "$srcdir/README.md" ||
	fail "README.md no longer has the install recipe '$recipe' that this test follows"
ok "README's install recipe is the one followed here"

b=$tmp/build
D=$tmp/destdir
# As on a machine with only the build dependencies: pkg-config sees fuse3 and
# nothing else (no Check), and no -Dtests is given, as in the README's recipe.
pc=$tmp/pkgconfig
mkdir "$pc"
cp "$(pkg-config --variable=pcfiledir fuse3)/fuse3.pc" "$pc/"
run "$tmp/setup.log" "meson setup --prefix=/usr without Check" \
	env PKG_CONFIG_LIBDIR="$pc" PKG_CONFIG_PATH= meson setup --prefix=/usr "$b" "$srcdir"
run "$tmp/compile.log" "meson compile" meson compile -C "$b"
# The variable, not --destdir: what packaging tools (debhelper, rpm) set.
run "$tmp/install.log" "DESTDIR=... meson install" env DESTDIR="$D" meson install -C "$b" --no-rebuild

# meson's libdir and the project version, from the build's introspection.
libdir=$(meson introspect "$b" --buildoptions |
	python3 -c 'import json, sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "libdir"))')
version=$(meson introspect "$b" --projectinfo |
	python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])')
libdir=${libdir#/usr/} # absolute when given so; relative to the prefix by default
multiarch=$("$cc" -print-multiarch 2> /dev/null || true)
case $libdir in
lib | lib64) ;;
lib/*) [[ $libdir == "lib/$multiarch" ]] ||
	fail "libdir is $libdir, want lib/$multiarch (the compiler's multiarch)" ;;
*) fail "libdir is $libdir: not lib, lib64 or lib/MULTIARCH" ;;
esac
ok "libdir $libdir, version $version"
L=$D/usr/$libdir

# Nothing outside /usr (no /usr/local, /etc, /lib of the build host).
top=$(cd "$D" && find . -mindepth 1 -maxdepth 1 | sort | tr '\n' ' ')
eq "DESTDIR holds only usr" "$top" "./usr "
[[ ! -e $D/usr/local ]] || fail "something went under usr/local: $(find "$D/usr/local")"

# file PATH MODE: a regular file (not a symlink) with that mode.
file()
{
	local p=$D/$1 mode
	[[ -f $p && ! -L $p ]] || fail "usr/${1#usr/} is missing (or not a regular file)"
	mode=$(stat -c %a "$p")
	[[ $mode == "$2" ]] || fail "$1 has mode $mode, want $2"
	ok "$1 ($mode)"
}
# link PATH TARGET: a symlink whose value is TARGET and that resolves.
link()
{
	local p=$D/$1
	[[ -L $p ]] || fail "$1 is missing or not a symlink"
	[[ $(readlink "$p") == "$2" ]] || fail "$1 points to $(readlink "$p"), want $2"
	[[ -e $p ]] || fail "$1 -> $2 dangles"
	ok "$1 -> $2"
}

file usr/sbin/volatilefs 755
file usr/bin/volatilectl 755
[[ ! -e $D/usr/bin/volatilefs ]] || fail "the daemon is also in usr/bin"

mapfile -t reals < <(cd "$L" && find . -maxdepth 1 -name 'libvolatilefs.so.0.*' -type f -printf '%f\n')
[[ ${#reals[@]} -eq 1 ]] || fail "want one usr/$libdir/libvolatilefs.so.0.*, found: ${reals[*]:-none}"
real=${reals[0]}
file "usr/$libdir/$real" 755
link "usr/$libdir/libvolatilefs.so.0" "$real"
link "usr/$libdir/libvolatilefs.so" libvolatilefs.so.0
[[ $real == "libvolatilefs.so.$version" ]] ||
	echo "install: note: library file $real, project version $version" >&2

file usr/include/volatilefs.h 644
file "usr/$libdir/pkgconfig/volatilefs.pc" 644
file usr/share/man/man8/volatilefs.8 644
file usr/share/man/man3/volatilefs.3 644
file usr/share/man/man1/volatilectl.1 644
for fn in volatilefs_mark volatilefs_unmark volatilefs_purged; do
	link "usr/share/man/man3/$fn.3" volatilefs.3
done
file usr/share/bash-completion/completions/volatilectl 644
bash -n "$D/usr/share/bash-completion/completions/volatilectl" || fail "the completion has a syntax error"
file usr/lib/systemd/system/volatilefs@.service 644
file usr/lib/systemd/user/volatilefs@.service 644

# The ELF side: soname, exported symbols, no build-tree run path.
soname=$(readelf -d "$L/$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
eq "readelf -d SONAME" "$soname" libvolatilefs.so.0
exports=$(readelf --dyn-syms -W "$L/$real" |
	awk '$4 == "FUNC" && $5 == "GLOBAL" && $7 != "UND" { print $8 }' | sort | tr '\n' ' ')
eq "exported functions" "$exports" \
	"volatilefs_batch@@VOLATILEFS_0.1 volatilefs_mark@@VOLATILEFS_0.1 volatilefs_purged@@VOLATILEFS_0.1 volatilefs_unmark@@VOLATILEFS_0.1 "
needed=$(readelf -d "$D/usr/bin/volatilectl" | sed -n 's/.*(NEEDED).*\[\(libvolatilefs.*\)\]/\1/p')
eq "volatilectl NEEDED" "$needed" libvolatilefs.so.0
if readelf -d "$D/usr/bin/volatilectl" | grep -Eq '\((RPATH|RUNPATH)\)'; then
	fail "installed volatilectl keeps a run path: $(readelf -d "$D/usr/bin/volatilectl" | grep -E 'R(UN)?PATH')"
fi
ok "installed volatilectl has no RPATH/RUNPATH"

# pkg-config, pointed into DESTDIR.  --define-prefix cannot guess the
# prefix of a .pc in a multiarch libdir (it takes usr/lib for it), so
# the sysroot does the relocating; the ALLOW_SYSTEM variables keep
# -I/usr/include and -L/usr/lib/... from being dropped as system paths
# before the sysroot is added.
export PKG_CONFIG_PATH=$L/pkgconfig PKG_CONFIG_LIBDIR=$L/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
eq "pkg-config --modversion" "$(pkg-config --modversion volatilefs)" "$version"
eq "volatilefs.pc prefix" "$(PKG_CONFIG_SYSROOT_DIR='' pkg-config --variable=prefix volatilefs)" /usr
read -ra cflags <<< "$(pkg-config --cflags volatilefs)"
read -ra libs <<< "$(pkg-config --libs volatilefs)"
eq "pkg-config --cflags" "${cflags[*]}" "-I$D/usr/include"
eq "pkg-config --libs" "${libs[*]}" "-L$L -lvolatilefs"
unset PKG_CONFIG_PATH PKG_CONFIG_LIBDIR PKG_CONFIG_SYSROOT_DIR

printf '#include <volatilefs.h>\nint main(void) { return VOLATILEFS_PRIORITY(0) == 0; }\n' > "$tmp/header.c"
run "$tmp/header.log" "the installed header alone, -std=c99 -pedantic" \
	"$cc" -std=c99 -pedantic -Wall -Wextra -Werror "${cflags[@]}" -c -o "$tmp/header.o" "$tmp/header.c"

client=$tmp/client
run "$tmp/client.log" "client.c built with pkg-config's flags" \
	"$cc" -Wall -Wextra -Werror "${cflags[@]}" -o "$client" "$(dirname "$self")/client.c" "${libs[@]}"
got=$(LD_LIBRARY_PATH=$L ldd "$client" | awk '$1 == "libvolatilefs.so.0" { print $3 }')
eq "the client loads libvolatilefs from DESTDIR" "$got" "$L/libvolatilefs.so.0"

# Off volatilefs (a file in $TMPDIR or /tmp): every call fails with ENOTTY.
plain=$tmp/plain
head -c 16384 /dev/zero > "$plain"
[[ $(stat -f -c %T "$plain") != fuse* ]] ||
	fail "$plain is on a FUSE filesystem: want a plain /tmp file (check TMPDIR)"
status=0
out=$(LD_LIBRARY_PATH=$L "$client" "$plain") || status=$?
eq "client on a /tmp file: exit status" "$status" 3
expect_enotty=$'mark 0:8192: error ENOTTY (Inappropriate ioctl for device)
unmark 0:4096: error ENOTTY (Inappropriate ioctl for device)
purged: error ENOTTY (Inappropriate ioctl for device)'
[[ $out == "$expect_enotty" ]] || fail "client on a /tmp file printed '$out', want '$expect_enotty'"
ok "client on a /tmp file: ENOTTY from mark, unmark and purged"

# On a mount of the installed daemon.
bash "$srcdir/tests/mount/with-mount.sh" "$D/usr/sbin/volatilefs" -o memory_limit=64M -- \
	bash "$self" --mounted "$client" "$L" "$D/usr/bin/volatilectl" ||
	fail "the installed daemon, library or volatilectl failed on a mount (above)"
ok "installed daemon, library and volatilectl on a mount"
