#!/usr/bin/env bash
# contrib/deb.sh: build Debian packages of volatilefs from this tree.
#
#   contrib/deb.sh [--outdir DIR] [--nocheck] [--no-lintian]
#
# Produces, in DIR (default build-deb/ at the top of the tree), for version V
# (meson.build's project version) and the host's architecture:
#   volatilefs_V_ARCH.deb         the daemon (/usr/sbin/volatilefs, started by
#                                 mount -t fuse.volatilefs and fstab lines through
#                                 mount.fuse3, hence Depends: fuse3), volatilectl,
#                                 volatilefs(8), volatilectl(1), the bash completion
#                                 and volatilefs@.service (system and user manager);
#   libvolatilefs0_V_ARCH.deb     the library file and its soname link
#                                 libvolatilefs.so.0;
#   libvolatilefs-dev_V_ARCH.deb  volatilefs.h, the libvolatilefs.so link,
#                                 volatilefs.pc and volatilefs(3) with its aliases;
# plus volatilefs-dbgsym and libvolatilefs0-dbgsym (the debug symbols), the
# .buildinfo and the .changes.  Install with
#   apt-get install ./build-deb/volatilefs_V_ARCH.deb ./build-deb/libvolatilefs0_V_ARCH.deb
# (and ./build-deb/libvolatilefs-dev_V_ARCH.deb to build against the library).
#
# Why three packages: Debian policy 8.1 puts a shared library in a package named
# after its soname (libvolatilefs.so.0 -> libvolatilefs0), so that a future
# libvolatilefs.so.1 can be installed next to it, and 8.4 puts the header, the
# .so link and the .pc in a -dev package; lintian checks both
# (package-name-doesnt-match-sonames, link-to-shared-library-in-wrong-package).
# volatilectl links the library, so volatilefs depends on libvolatilefs0
# (computed by dh_shlibdeps from the symbols file).
#
# How: with dpkg-buildpackage and debhelper (dh --buildsystem=meson, compat 13),
# from the debian/ directory kept in contrib/debian.  It is kept there, not at the
# top, so that a distribution can package the tree with its own debian/.  The
# script copies the tree (with git: the files git knows and untracked ones not
# ignored, so build directories stay out; without git: all but .git and build*/)
# to a temporary directory, adds contrib/debian as debian/ and a debian/changelog
# for version V, and runs `dpkg-buildpackage -b -us -uc` there: nothing in the tree
# changes.  debhelper does what a hand-made dpkg-deb over `meson install --destdir`
# would have to redo by hand: stripping into -dbgsym packages, compressed manual
# pages, the symbols file and shlibs dependencies, file permissions, md5sums,
# the changelog and copyright in /usr/share/doc.  The format is "3.0 (native)":
# the packaging lives in the upstream tree, so there is no separate Debian
# revision and the file is volatilefs_V_ARCH.deb.  The build runs the unit suites
# (`meson test --suite unit`) unless --nocheck (or DEB_BUILD_OPTIONS=nocheck);
# the mount tests need root and /dev/fuse, and are contrib/test.sh's business.
#
# The maintainer field and the changelog trailer come from DEBFULLNAME and
# DEBEMAIL when set.  Missing Debian packages (the build dependencies,
# dpkg-dev, debhelper, lintian) are installed first, through sudo when not root.
# Then lintian checks the result; the script fails if lintian reports an error
# (warnings are printed).  --no-lintian skips that.  Exit status 0 on success.
set -euo pipefail

readonly PKGS=(dpkg-dev debhelper meson ninja-build pkg-config gcc libfuse3-dev libbsd-dev)
readonly CHECK_PKGS=(check)
readonly LINTIAN_PKGS=(lintian)

prog=${0##*/}

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $prog [--outdir DIR] [--nocheck] [--no-lintian]

Build volatilefs_V_ARCH.deb, libvolatilefs0_V_ARCH.deb and libvolatilefs-dev_V_ARCH.deb
from this tree with dpkg-buildpackage (debian/ from contrib/debian), into DIR (default
build-deb/ in the tree), then check them with lintian.
EOF
}

# The files of the tree at $1, NUL-separated, relative to it.
tree_files() {
	local root=$1
	if git -C "$root" rev-parse --show-toplevel >/dev/null 2>&1 &&
		[[ $(git -C "$root" rev-parse --show-toplevel) == "$root" ]]; then
		# Tracked (as they are now) and untracked-but-not-ignored files; a tracked
		# file deleted in the work tree is left out.
		git -C "$root" ls-files -z --cached --others --exclude-standard |
			while IFS= read -r -d '' f; do
				[[ -e $root/$f || -L $root/$f ]] && printf '%s\0' "$f"
			done
	else
		(cd "$root" && find . -mindepth 1 \( -name .git -o -path './build*' \) -prune -o \
			\( -type f -o -type l \) -printf '%P\0')
	fi
}

main() {
	local outdir="" nocheck=0 lintian=1 root version arch maint work src f
	while [[ $# -gt 0 ]]; do
		case $1 in
		--outdir) [[ $# -ge 2 ]] || { usage >&2; exit 2; }; outdir=$2; shift 2 ;;
		--outdir=*) outdir=${1#--outdir=}; shift ;;
		--nocheck) nocheck=1; shift ;;
		--no-lintian) lintian=0; shift ;;
		-h | --help) usage; exit 0 ;;
		*) usage >&2; exit 2 ;;
		esac
	done

	root=$(cd -- "$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")/.." && pwd)
	[[ -f $root/meson.build && -d $root/contrib/debian ]] ||
		die "$root does not look like the volatilefs source tree"
	outdir=${outdir:-$root/build-deb}
	mkdir -p -- "$outdir"
	outdir=$(cd -- "$outdir" && pwd)

	if [[ ${DEB_BUILD_OPTIONS:-} == *nocheck* ]]; then
		nocheck=1
	fi
	local -a pkgs=("${PKGS[@]}")
	[[ $nocheck -eq 1 ]] || pkgs+=("${CHECK_PKGS[@]}")
	[[ $lintian -eq 0 ]] || pkgs+=("${LINTIAN_PKGS[@]}")
	install_missing "${pkgs[@]}"

	version=$(meson introspect --projectinfo "$root/meson.build" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["version"])') ||
		die "cannot read the project version from $root/meson.build"
	[[ $version =~ ^[0-9][A-Za-z0-9.+~]*$ ]] || die "version '$version' is not a Debian upstream version"
	arch=$(dpkg-architecture -qDEB_HOST_ARCH)
	maint="${DEBFULLNAME:-volatilefs maintainers} <${DEBEMAIL:-maintainers@volatilefs.example.org}>"

	work=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-deb.XXXXXX")
	# shellcheck disable=SC2064 # expand now: work is local
	trap "rm -rf -- '$work'" EXIT
	src=$work/volatilefs-$version
	mkdir "$src"
	say "copying the tree $root to $src"
	tree_files "$root" | (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$src"
	rm -rf -- "$src/debian"
	cp -r -- "$root/contrib/debian" "$src/debian"
	sed -i "s|@MAINTAINER@|$maint|" "$src/debian/control"
	local what="Built from the source tree by contrib/deb.sh"
	if git -C "$root" rev-parse HEAD >/dev/null 2>&1; then
		what+=" (git $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown))"
	fi
	cat >"$src/debian/changelog" <<EOF
volatilefs ($version) UNRELEASED; urgency=medium

  * $what.

 -- $maint  $(date -R)
EOF

	local -a opts=("parallel=$(nproc)")
	[[ $nocheck -eq 0 ]] || opts+=(nocheck)
	say "dpkg-buildpackage -b -us -uc in $src (DEB_BUILD_OPTIONS=${opts[*]})"
	(cd "$src" && DEB_BUILD_OPTIONS="${opts[*]}" dpkg-buildpackage -b -us -uc) ||
		die "dpkg-buildpackage failed"

	for f in "$work"/*.deb "$work"/*.ddeb "$work"/*.buildinfo "$work"/*.changes; do
		[[ -e $f ]] || continue
		rm -f -- "$outdir/${f##*/}"
		mv -- "$f" "$outdir/"
	done
	local changes=$outdir/volatilefs_${version}_${arch}.changes
	[[ -f $changes ]] || die "no $changes: dpkg-buildpackage made something else"

	if [[ $lintian -eq 1 ]]; then
		say "lintian $changes"
		# Errors fail; warnings, info, pedantic and experimental tags are shown.
		lintian --display-info --display-experimental --pedantic --fail-on error "$changes" ||
			die "lintian reports errors (above)"
	fi
	say "packages in $outdir:"
	(cd "$outdir" && ls -1 -- *_"${version}"_"${arch}".deb) >&2
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
