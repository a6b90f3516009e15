#!/bin/bash
# valgrind-daemon.sh - the daemon under valgrind memcheck, as a DAEMON for
# with-mount.sh and the mount tests: `VOLATILEFS_REAL=build/src/daemon/volatilefs
# tests/mount/with-mount.sh tests/mount/valgrind-daemon.sh -- ...`.
#
# -q keeps valgrind silent unless it finds something, and with-mount.sh
# fails on any daemon output; --error-exitcode makes errors and definite
# or indirect leaks at exit turn the daemon's exit status non-zero, which
# with-mount.sh also fails on.
#
# Always the classic data path (VOLATILEFS_PASSTHROUGH=off, the default when
# no -o passthrough= is given): Debian 12's valgrind (3.19) knows neither
# fsopen(2) nor fsmount(2), which the passthrough path's private tmpfs needs
# ("unhandled amd64-linux syscall: 430"), so under it the daemon would fall
# back to the classic path anyway, with that warning.
set -euo pipefail
export VOLATILEFS_PASSTHROUGH=off
[[ -x ${VOLATILEFS_REAL:-} ]] || { echo "valgrind-daemon: set VOLATILEFS_REAL" >&2; exit 1; }
exec valgrind -q --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	--child-silent-after-fork=yes "$VOLATILEFS_REAL" "$@"
