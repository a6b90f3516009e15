#!/bin/bash
# stress-purge.sh DAEMON - stress-ng's filesystem stressors while purges run.
#
# DESIGN section 9: many clients at once while purges run, no deadlock, no
# lost non-volatile byte, RSS held near the limit.  On a mount with a
# 384 MiB limit ($VFS_STRESS_PURGE_LIMIT_MB: room for the stressors'
# non-volatile files beside the daemon's own RSS, or they meet ENOSPC,
# which some stressors count as a failure): checksum 16 non-volatile
# files; then, for the stressors' run, one loop purges all volatile data
# every 100 ms, another floods volatile writes (marked files in a ring),
# and a sampler reads the daemon's VmRSS.  Afterwards: stress-ng reports
# zero failures (--verify), the daemon is alive and answers, every
# non-volatile file has its checksum, and VmRSS never went over the limit
# by more than max(1%, 4 MiB).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need stress-ng stress-ng
	need setfattr attr
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o "memory_limit=${VFS_STRESS_PURGE_LIMIT_MB:-384}M"
fi

limit_kib=$(( ${VFS_STRESS_PURGE_LIMIT_MB:-384} * 1024 ))
margin_kib=$(( limit_kib / 100 > 4096 ? limit_kib / 100 : 4096 ))
secs=${VFS_STRESS_TIMEOUT:-15}
cd "$VFS_TEST_DIR"
work=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-stress-purge.XXXXXX")
pids=()
stop_loops()
{
	for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
	wait 2> /dev/null || true
	pids=()
}
trap 'stop_loops; rm -rf "$work"' EXIT

mkdir keep flood stress
for i in $(seq -w 1 16); do head -c 1M /dev/urandom > "keep/k$i"; done
(cd keep && sha256sum k*) > "$work/sums"
ok "16 non-volatile files checksummed"

# The purger: all volatile data, every 100 ms.
(while :; do setfattr -n user.volatile.purge -v all . || exit 1; sleep 0.1; done) &
pids+=($!)
# The flood: volatile 1 MiB files in a ring of 64.
(i=0; while :; do
	f=flood/f$((i % 64))
	: > "$f"
	setfattr -n user.volatile.mark -v all "$f"
	head -c 1M /dev/zero > "$f" || exit 1
	i=$((i + 1))
done) &
pids+=($!)
# The sampler.
(while :; do daemon_rss_kib; sleep 0.02; done > "$work/rss") &
pids+=($!)

args=(--temp-path "$PWD/stress" --verify --metrics-brief --timeout "${secs}s"
	--hdd 1 --hdd-bytes 32M
	--mmap 1 --mmap-file --mmap-bytes 16M
	--xattr 1 --rename 1 --dentry 1 --link 1 --symlink 1
	--seek 1 --seek-size 32M --seek-punch
	--iomix 1 --iomix-bytes 32M
	--fallocate 1 --fallocate-bytes 32M
	--dir 1)
st=0
(cd / && timeout -k 10 $((secs + 60)) stress-ng "${args[@]}") > "$work/log" 2>&1 || st=$?
sed 's/^/    | /' "$work/log"
[[ $st -ne 124 && $st -ne 137 ]] || fail "stress-ng hung on the mount while purges ran"
[[ $st -eq 0 ]] || fail "stress-ng exited with status $st, want 0"
grep -q 'successful run completed' "$work/log" || fail "stress-ng did not report a successful run"
bad=$(grep -E '^stress-ng: (fail|error):|(failed|skipped): [1-9]' "$work/log" || true)
[[ -z $bad ]] || fail "stress-ng reported failures: $bad"
ok "stress-ng: successful run, no failure, while purging and flooding"

for p in "${pids[@]:0:2}"; do
	kill -0 "$p" 2> /dev/null || fail "the purge loop or the flood died (a purge or a write failed)"
done
ok "the purge loop and the volatile flood ran throughout"
stop_loops

mount_answers
(cd keep && sha256sum -c --quiet "$work/sums") || fail "a non-volatile file changed"
ok "every non-volatile file kept its checksum"
max=$(sort -n "$work/rss" | tail -1)
samples=$(wc -l < "$work/rss")
(( max <= limit_kib + margin_kib )) ||
	fail "VmRSS reached $max KiB, over the $limit_kib KiB limit by more than $margin_kib KiB"
ok "VmRSS max $max KiB over $samples samples (limit $limit_kib KiB)"
rss=$(daemon_rss_kib)
(( rss <= limit_kib )) || fail "VmRSS $rss KiB over the limit afterwards"
ok "VmRSS $rss KiB under the limit afterwards"
