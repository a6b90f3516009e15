#!/usr/bin/env bash
# contrib/quickstart.sh: install what is missing, build volatilefs and mount it.
#
#   contrib/quickstart.sh [MOUNTPOINT]          (default /tmp/volatilefs)
#   VOLATILEFS_OPTS=memory_limit=256M contrib/quickstart.sh /mnt/scratch
#
# On a fresh Debian 12 machine (as root, or a user with sudo) this installs the Debian packages
# needed to build and run volatilefs, builds it in ./build (release build, no tests), creates
# MOUNTPOINT and mounts volatilefs there in the background. It then prints a few commands to
# try and how to unmount. VOLATILEFS_OPTS, if set, is passed to the daemon as `-o
# VOLATILEFS_OPTS` (see man/volatilefs.8). If volatilefs is already mounted at MOUNTPOINT it
# says so and changes nothing.
set -euo pipefail

readonly PKGS=(meson ninja-build pkg-config gcc libfuse3-dev libbsd-dev fuse3 attr)
readonly BUILD_DIR=build
readonly DEFAULT_MOUNTPOINT=/tmp/volatilefs

prog=${0##*/}

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	cat <<EOF
usage: $prog [MOUNTPOINT]

Install the Debian packages volatilefs needs (if missing), build it in ./$BUILD_DIR and mount
it at MOUNTPOINT (default $DEFAULT_MOUNTPOINT). Set VOLATILEFS_OPTS to pass mount options,
for example: VOLATILEFS_OPTS=memory_limit=256M $prog
EOF
}

# The type of the filesystem mounted exactly at $1 ("fuse.volatilefs", "tmpfs", ...), or
# nothing. libfuse names the type fuse.volatilefs unless fsname= or subtype= was given.
mounted_type() {
	findmnt -n -o FSTYPE --mountpoint "$1" 2>/dev/null | tail -n 1 || true
}

# Whether the FUSE mount at $1 of type $2 is volatilefs: its own type, or plain "fuse" with
# the fsname= that VOLATILEFS_OPTS gives.
is_ours() {
	local fsname
	[[ $2 == fuse.volatilefs ]] && return 0
	[[ $2 == fuse && ,${VOLATILEFS_OPTS:-}, =~ ,fsname=([^,]*), ]] || return 1
	fsname=${BASH_REMATCH[1]}
	[[ $(findmnt -n -o SOURCE --mountpoint "$1" 2>/dev/null | tail -n 1) == "$fsname" ]]
}

# "TYPE from SOURCE" for what is mounted at $1, for messages.
mounted_desc() {
	findmnt -n -o FSTYPE,SOURCE --mountpoint "$1" 2>/dev/null | tail -n 1 |
		awk '{ printf "%s (source %s)", $1, $2 }' || true
}

# Parse the command line; sets mountpoint.
parse_args() {
	mountpoint=$DEFAULT_MOUNTPOINT
	case $# in
	0) ;;
	1)
		case $1 in
		-h | --help)
			usage
			exit 0
			;;
		-*)
			usage >&2
			exit 2
			;;
		"")
			die "the mountpoint must not be empty"
			;;
		*) mountpoint=$1 ;;
		esac
		;;
	*)
		usage >&2
		exit 2
		;;
	esac
	# Absolute, because the script works from the top of the source tree.
	mountpoint=$(realpath -m -- "$mountpoint")
}

# Print what to try on the mount at $1, with volatilectl at $2 (the one built in
# $BUILD_DIR by default). tests/mount/quickstart.sh runs every command printed, as
# printed, on a mount of its own: keep each on one line, indented by two spaces.
print_howto() {
	local mp q ctl
	mp=$1
	q=$(printf '%q' "$mp")
	ctl=$(printf '%q' "${2:-$(pwd)/$BUILD_DIR/src/cli/volatilectl}")
	cat <<EOF

volatilefs is mounted at $mp. Try:

  echo hello > $q/hello.txt && cat $q/hello.txt
  head -c 64M /dev/urandom > $q/big && du -h $q/big
  df -h $q    # size: the memory limit
  setfattr -n user.comment -v "kept in memory" $q/hello.txt
  getfattr --absolute-names -d $q/hello.txt
  stat -f $q
  rm $q/big && sleep 1 && df -h $q    # the memory is given back

Volatile ranges: data the daemon may discard when memory runs short.

  head -c 1M /dev/urandom > $q/cache.bin
  setfattr -n user.volatile.mark -v all $q/cache.bin    # may be purged from now on
  getfattr --absolute-names --only-values -n user.volatile.ranges $q/cache.bin
  setfattr -n user.volatile.purge -v all $q/cache.bin   # purge it now, as memory pressure would
  getfattr --absolute-names --only-values -n user.volatile.purged $q/cache.bin   # lost: 0:1048576
  $ctl stats $q
  $ctl watch --count 3 $q 1    # a line a second, as vmstat; without --count until Ctrl-C

Everything on it lives in the daemon's memory and is gone after unmounting.
Unmount with:

  fusermount3 -u $q
EOF
}

main() {
	local here root daemon fstype i
	local -a opts=()

	parse_args "$@"

	here=$(dirname -- "$(readlink -f -- "${BASH_SOURCE[0]}")")
	root=$(cd -- "$here/.." && pwd)
	cd -- "$root"
	[[ -f meson.build && -d src ]] || die "$root does not look like the volatilefs source tree"

	if [[ ! -c /dev/fuse ]]; then
		printf '%s: /dev/fuse is missing, so nothing can be mounted here.\n' "$prog" >&2
		printf '%s: load the fuse module (modprobe fuse) or, in a container, pass the device\n' \
			"$prog" >&2
		printf '%s: through (docker run --device /dev/fuse --cap-add SYS_ADMIN ...), then try again.\n' \
			"$prog" >&2
		exit 1
	fi

	install_missing "${PKGS[@]}"

	# An existing mount: ours is fine as it is, anything else is not ours to cover up. A
	# volatilefs whose daemon died leaves a dead mount ("Transport endpoint is not
	# connected") that holds nothing: take it away and mount afresh.
	fstype=$(mounted_type "$mountpoint")
	if [[ -n $fstype ]] && is_ours "$mountpoint" "$fstype"; then
		if stat -f -- "$mountpoint" >/dev/null 2>&1; then
			say "volatilefs is already mounted at $mountpoint"
			print_howto "$mountpoint"
			exit 0
		fi
		say "the volatilefs mount at $mountpoint is dead (its daemon is gone): unmounting it"
		fusermount3 -u -z -- "$mountpoint" 2>/dev/null || as_root umount -l -- "$mountpoint" ||
			die "cannot unmount the dead mount at $mountpoint"
	elif [[ -n $fstype ]]; then
		die "$mountpoint already has $(mounted_desc "$mountpoint") mounted on it;" \
			"unmount it or choose another mountpoint"
	fi

	say "building in $BUILD_DIR"
	if [[ -f $BUILD_DIR/meson-private/coredata.dat ]]; then
		meson setup --reconfigure "$BUILD_DIR" --buildtype=release -Dtests=disabled
	else
		meson setup "$BUILD_DIR" --buildtype=release -Dtests=disabled
	fi
	meson compile -C "$BUILD_DIR"
	daemon=$root/$BUILD_DIR/src/daemon/volatilefs
	[[ -x $daemon ]] || die "the build did not produce $daemon"

	mkdir -p -- "$mountpoint"
	if [[ -n ${VOLATILEFS_OPTS:-} ]]; then
		opts=(-o "$VOLATILEFS_OPTS")
	fi
	say "mounting: $daemon${opts[*]:+ ${opts[*]}} $mountpoint"
	# Without -f the daemon detaches once the mount is in place.
	"$daemon" "${opts[@]}" "$mountpoint" || die "volatilefs failed to mount (exit status $?)"

	# A fsname= or subtype= option in VOLATILEFS_OPTS changes the type: any FUSE mount will do.
	for ((i = 0; i < 50; i++)); do
		fstype=$(mounted_type "$mountpoint")
		[[ $fstype == fuse || $fstype == fuse.* ]] && break
		sleep 0.1
	done
	[[ $fstype == fuse || $fstype == fuse.* ]] ||
		die "the daemon started but nothing is mounted at $mountpoint"
	print_howto "$mountpoint"
}

# Sourcing the script (to test its functions) defines them without running anything.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
