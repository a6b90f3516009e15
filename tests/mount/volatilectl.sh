#!/bin/bash
# volatilectl.sh DAEMON - volatilectl (SPEC section 7) against a mount.
#
# The binary comes from $VOLATILECTL.  mark with ranges, --age and
# --priority (options before or after the ranges) shows up in the units;
# unmark prints bytes=N purged=0|1 and exits 3 exactly when something was
# purged; status tables units and purged extents; stats shows every
# counter with human sizes; purge all|SIZE purges; --help works per
# command; errors name the file and the reason, with exit status 1 (2 for
# bad usage, such as an unaligned range).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	[[ -x ${VOLATILECTL:-} ]] || fail "set VOLATILECTL to the volatilectl binary"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o memory_limit=256M
fi

ctl=$VOLATILECTL
cd "$VFS_TEST_DIR"
head -c 3M /dev/urandom > g

"$ctl" mark g 0:64K 1M:1M --priority 1
"$ctl" mark g --age 128K:4K
eq "mark: units with priority and age" "$(getfattr --only-values -n user.volatile.ranges g)" \
"0:65536 volatile priority=1
131072:4096 volatile priority=3 age
1048576:1048576 volatile priority=1"

out=$("$ctl" status g)
[[ $out == *"131072"*"4.0 KiB"*"volatile"*"yes"* ]] || fail "status: no aged unit row in: $out"
[[ $out == *"purged extents:"*"(none)"* ]] || fail "status: purged extents not (none): $out"
ok "status shows units and no purged extent"

status=0
out=$("$ctl" unmark g 128K:4K) || status=$?
eq "unmark before a purge prints bytes and purged=0" "$out" "bytes=4096 purged=0"
eq "unmark before a purge exits 0" "$status" 0

"$ctl" purge . all
status=0
out=$("$ctl" unmark g 0:64K 2M:4K) || status=$?
eq "unmark after a purge prints purged=1" "$out" "bytes=65536 purged=1"
eq "unmark after a purge exits 3" "$status" 3

out=$("$ctl" status g)
[[ $out == *"1048576"*"1.0 MiB"*"purged"* ]] || fail "status: purged unit missing: $out"
[[ $out == *"0 "*"64.0 KiB (65536 bytes)"* ]] || fail "status: purged extent 0:64K missing: $out"
ok "status shows the purged unit and extents"

out=$("$ctl" stats .)
for key in memory_limit memory_low rss data_bytes volatile_bytes purged_bytes_total \
	purges_total volatile_units files enospc_total pressure_purges_total \
	pressure_bytes_total pressure_sources; do
	grep -q "^$key " <<< "$out" || fail "stats: no $key in: $out"
done
grep -q '^memory_limit *256.0 MiB' <<< "$out" || fail "stats: memory_limit not human: $out"
grep -q '^purges_total *2$' <<< "$out" || fail "stats: purges_total not 2: $out"
grep -Eq '^pressure_sources +[a-z0-9,]+$' <<< "$out" &&
	! grep -Eq '^pressure_sources +0$' <<< "$out" ||
	fail "stats: pressure_sources not shown as words: $out"
ok "stats lists every counter with human sizes"

head -c 1M /dev/urandom > a
head -c 1M /dev/urandom > b
"$ctl" mark a all --priority 0
"$ctl" mark b all --priority 5
"$ctl" purge . 4K
[[ $(getfattr --only-values -n user.volatile.purged a) == "0:1048576" ]] ||
	fail "purge SIZE: the priority-0 unit was not purged"
[[ -z $(getfattr --only-values -n user.volatile.purged b) ]] ||
	fail "purge SIZE: the priority-5 unit was purged too"
ok "purge SIZE takes whole units in purge order and stops"

"$ctl" mark --help | grep -q '^usage: volatilectl mark FILE RANGE' || fail "mark --help"
"$ctl" unmark --help | grep -q 'bytes=N purged=0|1' || fail "unmark --help"
"$ctl" --help | grep -q '^commands:' || fail "--help"
ok "--help, and per command"

status=0
err=$("$ctl" mark g 1:4K 2>&1) || status=$?
eq "unaligned range is a usage error" "$status" 2
[[ $err == *"g: bad RANGE"*"1:4K"* ]] || fail "usage error does not name the file and the range: $err"
status=0
err=$("$ctl" unmark g 2>&1) || status=$?
eq "unmark without a range is a usage error" "$status" 2
[[ $err == *"g: no RANGE given"* ]] || fail "no-range error does not name the file: $err"
status=0
err=$("$ctl" purge . lots 2>&1) || status=$?
eq "purge of a non-size is a usage error" "$status" 2
[[ $err == *".: purge: not all or a SIZE: lots"* ]] || fail "purge error does not name the mount: $err"
status=0
err=$("$ctl" mark missing 0:4K 2>&1) || status=$?
eq "missing file exits 1" "$status" 1
[[ $err == *"missing"*"No such file or directory"* ]] || fail "error lacks file or reason: $err"
status=0
err=$("$ctl" mark /proc/self/status 0:4K 2>&1) || status=$?
eq "a file off volatilefs exits 1" "$status" 1
status=0
err=$("$ctl" mark g 0:4K --priority 9 2>&1) || status=$?
eq "priority 9 is a usage error" "$status" 2
ok "errors name the file and the reason"
