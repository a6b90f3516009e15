#!/bin/bash
# volatilectl.sh DAEMON - volatilectl (DESIGN section 7) against a mount.
#
# The binary comes from $VOLATILECTL.  mark with ranges, --age and
# --priority (options before or after the ranges) shows up in the units;
# unmark prints bytes=N purged=0|1 and exits 3 exactly when something was
# purged; status tables units and purged extents; stats shows every
# counter with human sizes; purge all|SIZE purges; --help works per
# command; errors name the file and the reason, with exit status 1 (2 for
# bad usage), one case per class: bad range, no range, bad priority or
# option, bad SIZE, SECONDS or --count; missing file; off volatilefs
# (and purge stores nothing there); not the root; not a regular file (a
# FIFO does not block); permission (another user: open, purge).  watch
# prints a header and --count lines whose purge columns show a purge made
# between two samples, repeats the header every 20 lines off a terminal,
# adds the unlinked column under auto=unlink, and stops cleanly on SIGINT
# (dies of it: 130) and when its reader goes away (status 0).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	[[ -x ${VOLATILECTL:-} ]] || fail "set VOLATILECTL to the volatilectl binary"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o memory_limit=256M,allow_other
fi

need setpriv util-linux
ctl=$VOLATILECTL
tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilectl-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
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

# err_case WHAT STATUS PATTERN COMMAND...: COMMAND exits STATUS and its
# stderr matches the glob PATTERN.
err_case()
{
	local what=$1 want=$2 pat=$3 status=0 err
	shift 3
	err=$(timeout 20 "$@" 2>&1 > /dev/null) || status=$?
	[[ $status == "$want" ]] || fail "$what: '$*' exited $status, want $want: $err"
	# shellcheck disable=SC2053 # a glob on purpose
	[[ $err == $pat ]] || fail "$what: '$*' said '$err', want '$pat'"
	ok "$what: ${err%%$'\n'*}"
}

err_case "bad range" 2 "volatilectl: g: bad RANGE*: 1:4K*" "$ctl" mark g 1:4K
err_case "no range" 2 "volatilectl: g: no RANGE given*" "$ctl" unmark g
err_case "bad priority" 2 "volatilectl: g: --priority takes 0 to 7: 9*" \
	"$ctl" mark g 0:4K --priority 9
err_case "bad option" 2 "volatilectl: g: mark: unknown option*: --bogus*" \
	"$ctl" mark g 0:4K --bogus
err_case "bad purge SIZE" 2 "volatilectl: .: purge: not all or a SIZE: lots*" "$ctl" purge . lots
err_case "bad SECONDS" 2 "volatilectl: .: SECONDS must be a number*: 0*" "$ctl" watch . 0
err_case "bad --count" 2 "volatilectl: .: --count takes*: x*" "$ctl" watch --count x .

err_case "missing file (mark)" 1 "volatilectl: missing: open: No such file or directory" \
	"$ctl" mark missing 0:4K
err_case "missing file (status)" 1 "volatilectl: missing: open: No such file or directory" \
	"$ctl" status missing
err_case "missing mount (stats)" 1 "volatilectl: missing: stats: No such file or directory" \
	"$ctl" stats missing
err_case "missing mount (purge)" 1 "volatilectl: missing: purge: No such file or directory" \
	"$ctl" purge missing all
err_case "missing mount (watch)" 1 "volatilectl: missing: stats: No such file or directory" \
	"$ctl" watch missing

head -c 8192 /dev/zero > "$tmp/plain"
err_case "off volatilefs (mark)" 1 \
	"volatilectl: $tmp/plain: mark: not on a volatilefs mount (Inappropriate ioctl for device)" \
	"$ctl" mark "$tmp/plain" 0:4K
err_case "off volatilefs (unmark)" 1 "volatilectl: $tmp/plain: unmark: not on a volatilefs mount*" \
	"$ctl" unmark "$tmp/plain" 0:4K
err_case "off volatilefs (status)" 1 "volatilectl: $tmp/plain: units: not on a volatilefs mount*" \
	"$ctl" status "$tmp/plain"
err_case "off volatilefs (stats)" 1 "volatilectl: $tmp: stats: not the root of a volatilefs mount" \
	"$ctl" stats "$tmp"
err_case "off volatilefs (purge)" 1 "volatilectl: $tmp: purge: not the root of a volatilefs mount" \
	"$ctl" purge "$tmp" all
[[ -z $(getfattr --absolute-names -d -m - "$tmp" 2> /dev/null) ]] ||
	fail "purge off volatilefs stored an attribute: $(getfattr --absolute-names -d -m - "$tmp")"
ok "purge off volatilefs stored nothing"
err_case "off volatilefs (watch)" 1 "volatilectl: $tmp: stats: not the root of a volatilefs mount" \
	"$ctl" watch "$tmp"

mkdir sub
err_case "not the root (stats)" 1 "volatilectl: sub: stats: not the root of a volatilefs mount" \
	"$ctl" stats sub
err_case "not the root (purge)" 1 "volatilectl: sub: purge: not the root of a volatilefs mount" \
	"$ctl" purge sub all
err_case "not a regular file (mark)" 1 "volatilectl: sub: not a regular file*" \
	"$ctl" mark sub 0:4K
mkfifo fifo
err_case "not a regular file (unmark, a FIFO)" 1 "volatilectl: fifo: not a regular file*" \
	"$ctl" unmark fifo 0:4K
err_case "not a regular file (status, a FIFO)" 1 "volatilectl: fifo: not a regular file*" \
	"$ctl" status fifo

# Another user: volatilectl and its library copied where uid 65534 can read them.
lib=$(ldd "$ctl" | awk '$1 == "libvolatilefs.so.0" { print $3 }')
[[ -f $lib ]] || fail "ldd shows no libvolatilefs.so.0 for $ctl"
cp "$ctl" "$lib" "$tmp/"
chmod 0755 "$tmp" "$tmp/volatilectl" "$tmp/libvolatilefs.so.0"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups -- env LD_LIBRARY_PATH="$tmp")
err_case "permission (mark another's file)" 1 "volatilectl: g: open: Permission denied" \
	"${nobody[@]}" "$tmp/volatilectl" mark g 0:4K
err_case "permission (purge by another user)" 1 \
	"volatilectl: .: purge: Operation not permitted (needs root or the user who mounted)" \
	"${nobody[@]}" "$tmp/volatilectl" purge . all

# watch: a purge between two samples shows in the purge columns of the
# interval it fell in, and nowhere else.
head -c 1M /dev/urandom > w
"$ctl" mark w all
"$ctl" watch --count 3 . 0.5 > "$tmp/watch" 2> "$tmp/watch.err" &
pid=$!
for _ in $(seq 200); do
	(($(wc -l < "$tmp/watch") >= 3)) && break
	sleep 0.05
done
(($(wc -l < "$tmp/watch") >= 3)) || fail "watch printed no first line in 10 s: $(cat "$tmp/watch" "$tmp/watch.err")"
setfattr -n user.volatile.purge -v all w
status=0
wait "$pid" || status=$?
eq "watch --count 3 exits 0" "$status" 0
[[ ! -s $tmp/watch.err ]] || fail "watch wrote to stderr: $(cat "$tmp/watch.err")"
out=$(cat "$tmp/watch")
mapfile -t lines <<< "$out"
eq "watch --count 3: a header and 3 lines" "${#lines[@]}" 5
[[ ${lines[0]} == *memory*purged*pressure* ]] || fail "watch: no group header: $out"
read -ra h <<< "${lines[1]}"
eq "watch: the columns" "${h[*]}" "limit rss data volatile units bytes units bytes"
purges=0
for i in 3 4; do
	read -ra f <<< "${lines[i]}"
	[[ ${f[0]} == 256M ]] || fail "watch: limit column not 256M in: ${lines[i]}"
	((${#f[@]} == 8)) || fail "watch: not 8 columns: ${lines[i]}"
	purges=$((purges + f[4]))
	if ((f[4] == 1)); then
		eq "watch: the interval's purged bytes" "${f[5]}" 1.0M
	fi
done
eq "watch: the purge between samples, counted once" "$purges" 1

out=$("$ctl" watch --count 25 . 0.001)
eq "watch off a terminal: the header every 20 lines" "$(grep -c '^ *limit' <<< "$out")" 2
eq "watch --count 25: lines" "$(grep -c '^ *256M' <<< "$out")" 25

{
	"$ctl" watch . 0.01 2> "$tmp/pipe.err"
	echo $? > "$tmp/pipe.status"
} | head -n 4 > /dev/null
eq "watch into a reader that goes away: exit status" "$(cat "$tmp/pipe.status")" 0
[[ ! -s $tmp/pipe.err ]] || fail "watch wrote to stderr when its reader left: $(cat "$tmp/pipe.err")"

# A job in the background ignores SIGINT; env gives it back as a terminal would.
env --default-signal=INT "$ctl" watch . 0.05 > "$tmp/int" 2>&1 &
pid=$!
for _ in $(seq 200); do
	[[ -s $tmp/int ]] && break
	sleep 0.05
done
kill -INT "$pid"
status=0
wait "$pid" || status=$?
eq "watch after SIGINT dies of it" "$status" 130
[[ $(tail -c 1 "$tmp/int" | od -An -c) == *'\n'* ]] || fail "watch left a partial line: $(tail -n 1 "$tmp/int")"
! grep -qv '^ *[-0-9a-z]' "$tmp/int" || fail "watch printed an error on SIGINT: $(cat "$tmp/int")"
ok "watch stops cleanly on SIGINT"

mkdir cache
setfattr -n user.volatile.auto -v unlink cache
head -c 64K /dev/urandom > cache/x
# An open file is skipped, and close(2) returns before the kernel's RELEASE
# reaches the daemon (under valgrind the purge came first and took nothing):
# purge until the name goes (up to 30 s, a hang).
deadline=$((SECONDS + 30))
while :; do
	"$ctl" purge . all
	if [[ ! -e cache/x ]] || ((SECONDS >= deadline)); then
		break
	fi
	sleep 0.1
done
[[ ! -e cache/x ]] || fail "watch: once closed, a purge still left cache/x"
out=$("$ctl" watch --count 1 .)
[[ $out == *unlinked*files* ]] || fail "watch: no unlinked column under auto=unlink: $out"
read -ra f <<< "$(tail -n 1 <<< "$out")"
((${#f[@]} == 9 && f[8] >= 1)) || fail "watch: unlinked files since the mount not shown: $out"
ok "watch adds the unlinked column under auto=unlink"
