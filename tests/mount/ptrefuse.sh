#!/bin/bash
# ptrefuse.sh DAEMON - write_policy=unmark needs the classic path.
#
# Stores through a mapping of a passthrough file reach its backing file
# without a request, so the daemon cannot tell which pages were written and
# write_policy=unmark could not hold for them (volatilefs(8), PASSTHROUGH).
# As root:
#   - passthrough=on,write_policy=unmark is refused at mount time: exit
#     status 1, a message naming both options, nothing mounted;
#   - passthrough=auto,write_policy=unmark mounts on the classic path: the
#     root's user.volatile.stats says passthrough=off;
#   - passthrough=auto alone says passthrough=on here (the check above is not
#     vacuous: this machine can do passthrough).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} == --mounted ]]; then
	got=$(stat_of passthrough)
	eq "$3: user.volatile.stats" "passthrough=$got" "passthrough=$2"
	exit 0
fi
vfs_usage_check "$@"
need getfattr attr
need fusermount3 fuse3
[[ $(id -u) == 0 ]] || { echo "$vfs_test: needs root (CAP_SYS_ADMIN); skipped" >&2; exit 77; }
daemon=$(daemon_path "$1")

m=$(mktemp -d)
trap 'is_mounted "$m" && umount -l "$m"; rmdir "$m" 2> /dev/null || true' EXIT
st=0
out=$(timeout 20 "$daemon" -f -o passthrough=on,write_policy=unmark "$m" 2>&1) || st=$?
if is_mounted "$m"; then
	fail "passthrough=on with write_policy=unmark mounted"
fi
eq "passthrough=on with write_policy=unmark: exit status" "$st" 1
[[ $out == *"passthrough=on"*"write_policy=unmark"* ]] ||
	fail "passthrough=on with write_policy=unmark: message '$out' does not name both"
ok "passthrough=on with write_policy=unmark is refused: $out"

bash "$vfs_dir/with-mount.sh" "$daemon" -o passthrough=auto,write_policy=unmark -- \
	bash "${BASH_SOURCE[0]}" --mounted off "passthrough=auto,write_policy=unmark"
bash "$vfs_dir/with-mount.sh" "$daemon" -o passthrough=auto -- \
	bash "${BASH_SOURCE[0]}" --mounted on "passthrough=auto"
