#!/bin/bash
# valgrind-daemon.sh - the daemon under valgrind memcheck, as a DAEMON for
# with-mount.sh and the mount tests: `VOLATILEFS_REAL=build/src/daemon/volatilefs
# tests/mount/with-mount.sh tests/mount/valgrind-daemon.sh -- ...`.
#
# -q keeps valgrind silent unless it finds something, and with-mount.sh
# fails on any daemon output; --error-exitcode makes errors and definite
# or indirect leaks at exit turn the daemon's exit status non-zero, which
# with-mount.sh also fails on.
set -euo pipefail
[[ -x ${VOLATILEFS_REAL:-} ]] || { echo "valgrind-daemon: set VOLATILEFS_REAL" >&2; exit 1; }
exec valgrind -q --error-exitcode=99 --leak-check=full \
	--show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
	--child-silent-after-fork=yes "$VOLATILEFS_REAL" "$@"
