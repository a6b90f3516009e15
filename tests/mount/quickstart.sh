#!/bin/bash
# quickstart.sh DAEMON - every command contrib/quickstart.sh tells a new user to try works, as
# printed, on a mount (the README's first promise; issue "First impression").
#
# Takes the text of print_howto (contrib/quickstart.sh, sourced, which runs nothing) for our
# mount and the volatilectl in $VOLATILECTL, and runs each command line of it (two-space
# indented) in order with bash, but the unmount; each must exit 0. The volatile-range lines
# must do what their comments say: the purged set after the purge is 0:1048576.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1"
fi
need setfattr attr
ctl=${VOLATILECTL:?VOLATILECTL must name the volatilectl binary}
qs=$vfs_dir/../../contrib/quickstart.sh
[[ -f $qs ]] || fail "no $qs"

# shellcheck disable=SC2016 # for the inner bash
howto=$(bash -c '. "$1" && print_howto "$2" "$3"' _ "$qs" "$VFS_TEST_DIR" "$ctl")
grep -q 'not implemented' <<< "$howto" && fail "quickstart still claims something is not implemented"
ok "quickstart's text claims nothing is missing"

n=0
while IFS= read -r line; do
	[[ $line == "  "[!\ ]* ]] || continue
	cmd=${line#  }
	[[ $cmd == fusermount3* ]] && continue
	out=$(bash -c "$cmd" 2>&1) || fail "quickstart's '$cmd' failed: $out"
	if [[ $cmd == *user.volatile.purged* ]]; then
		eq "quickstart's purged line shows the whole file lost" "$out" 0:1048576
	fi
	n=$((n + 1))
done <<< "$howto"
((n >= 12)) || fail "only $n commands found in quickstart's text"
ok "all $n commands quickstart suggests ran on the mount"
grep -q 'user.volatile.mark' <<< "$howto" || fail "quickstart shows no volatile range"
ok "quickstart shows volatile ranges"
