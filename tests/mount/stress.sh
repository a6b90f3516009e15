#!/bin/bash
# stress.sh DAEMON - stress-ng's filesystem stressors against the mount.
#
# Mounts with -o memory_limit=2G and runs, at once and one instance each with
# --verify, for $VFS_STRESS_TIMEOUT seconds (default 20): hdd, mmap (on a
# file), xattr, rename, dentry, link, symlink, seek (with hole punching),
# iomix, fallocate, dir; files are sized so that together they stay well
# under the limit (about 350 MiB). Checks:
# - stress-ng exits 0, reports a "successful run", no "fail:"/"error:" line,
#   no skipped stressor, and every stressor did some work (bogo ops > 0);
# - its temp directory is empty afterwards (every name it made went away);
# - the daemon is still alive and the mount still answers.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need stress-ng stress-ng
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o memory_limit=2G
fi

secs=${VFS_STRESS_TIMEOUT:-20}
stressors=(hdd mmap xattr rename dentry link symlink seek iomix fallocate dir)
dir=$VFS_TEST_DIR/stress
mkdir "$dir"
log=$(mktemp "${TMPDIR:-/tmp}/volatilefs-stress.XXXXXX")
trap 'rm -f "$log"' EXIT

args=(--temp-path "$dir" --verify --metrics-brief --timeout "${secs}s"
	--hdd 1 --hdd-bytes 64M
	--mmap 1 --mmap-file --mmap-bytes 16M
	--xattr 1
	--rename 1
	--dentry 1
	--link 1
	--symlink 1
	--seek 1 --seek-size 64M --seek-punch
	--iomix 1 --iomix-bytes 64M
	--fallocate 1 --fallocate-bytes 64M
	--dir 1)
echo "$vfs_test: stress-ng ${args[*]}"
st=0
# stress-ng runs from the mount's parent: a cwd on the mount would only
# make unmounting harder if something goes wrong.
(cd / && timeout -k 10 $((secs + 60)) stress-ng "${args[@]}") > "$log" 2>&1 || st=$?
sed 's/^/    | /' "$log"

[[ $st -ne 124 && $st -ne 137 ]] || fail "stress-ng still running $((secs + 60)) s after a ${secs} s timeout: hung on the mount?"
[[ $st -eq 0 ]] || fail "stress-ng exited with status $st, want 0"
ok "stress-ng exited 0"

if ! grep -q 'successful run completed' "$log" || grep -q 'unsuccessful run' "$log"; then
	fail "stress-ng did not report a successful run"
fi
ok "stress-ng reports a successful run"

bad=$(grep -E '^stress-ng: (fail|error):|skipping|will be skipped|(failed|skipped): [1-9]' "$log" || true)
[[ -z $bad ]] || fail "stress-ng reported failures: $bad"
ok "stress-ng reports no failed or skipped stressor"

for s in "${stressors[@]}"; do
	ops=$(awk -v s="$s" '$2 == "metrc:" && $4 == s && $5 ~ /^[0-9]+$/ { print $5; exit }' "$log")
	[[ -n $ops ]] || fail "$s: no metrics line: did it run?"
	((ops > 0)) || fail "$s: 0 bogo ops in ${secs} s"
	ok "$s: $ops bogo ops"
done

left=$(find "$dir" -mindepth 1 | head -5)
[[ -z $left ]] || fail "stress-ng left names behind in $dir: $left"
ok "stress-ng's temp directory is empty again"

mount_answers
rmdir "$dir"
