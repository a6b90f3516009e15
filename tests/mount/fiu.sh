#!/bin/bash
# fiu.sh DAEMON - allocation failures injected into a running daemon with
# libfiu (DESIGN section 9: "allocation failure anywhere yields an error for
# that call and nothing else").
#
# DAEMON must be built with -Dfiu=enabled (its own fault points
# volatilefs/meta, volatilefs/arena, volatilefs/reserve, src/daemon/fault.h).
# The test starts it itself, as
#   fiu-run -x -f CTL DAEMON -f -o memory_limit=256M MNT
# (-x: libfiu's POSIX preload, whose points posix/mm/mmap, .../munmap,
# .../madvise, ... fail those calls on demand; -f: a control FIFO for
# fiu-ctrl), with no failure enabled, and then:
#  1. probes that the daemon's fault points are live: with volatilefs/meta
#     enabled outright a mkdir fails with ENOMEM, and works once it is
#     disabled again (a build whose points compiled to nothing fails here);
#  2. writes, with no failure enabled, 20 non-volatile files of random sizes
#     up to 4 MiB (checksums kept), 4 volatile files (1 MiB each, marked in
#     ranges, originals kept outside the mount), and per worker a "model"
#     file whose every change is mirrored into a copy outside the mount and
#     a 1 MiB file for marks;
#  3. enables random failures at run time with fiu-ctrl: posix/mm/* with
#     probability VFS_FIU_PROB_MM (default 0.05) and volatilefs/* with
#     VFS_FIU_PROB_VFS (default 0.1), plus VFS_FIU_EXTRA (space-separated
#     NAME=PROBABILITY pairs); VFS_FIU_POINTS, in the same form, replaces the
#     two defaults (to find which point a failure comes from, e.g.
#     VFS_FIU_POINTS='posix/mm/madvise=0.2').  libc/mm/* (malloc) is not in
#     the default set: it fails libfuse's own allocations too, which print
#     "fuse: failed to allocate request" and lose FORGETs and RELEASEs;
#  4. runs VFS_FIU_WORKERS (default 3) workers for VFS_FIU_SECONDS (default
#     25) seconds, each a random mix of: create/overwrite/append/truncate/
#     fallocate/punch/rm of scratch files, user.* xattrs set/get/remove,
#     user.volatile.mark/unmark/purge and ranges/purged reads on scratch and
#     on the volatile files, purges from the root, stats, mkdir/rename/
#     link/symlink/rmdir, O_DIRECT reads of the non-volatile files (checked
#     against their checksums), and calls whose effect is checked at once:
#     - page-sized writes, truncates, punches, fallocates and O_TRUNC
#       rewrites of the model file, mirrored only when they succeed (a call
#       that fails must change nothing), the model read back with O_DIRECT
#       after each and compared with the mirror; its xattrs likewise;
#     - marks and unmarks of several ranges at once: when one fails, the
#       units (user.volatile.ranges) are what they were;
#     - memory handed out again is clean: a fresh fallocate reads back as
#       zeros, and a 1-byte write into a fresh page of a sparse file leaves
#       the rest of the page zero;
#     every command runs under `timeout 10`;
#  5. requires: the daemon never dies (if it does: its exit status and
#     signal, and the calls that saw it) and the mount stays mounted; no
#     command hangs; every command that failed did so with "Cannot allocate
#     memory" (ENOMEM) or "No space left on device" (ENOSPC) - anything else
#     is reported, "Transport endpoint is not connected" and "Software
#     caused connection abort" as a crash; no read returns wrong data; at
#     least some calls failed (else the injection reached nothing);
#  6. disables the failures and verifies: every non-volatile file reads back
#     byte for byte (O_DIRECT, and through the page cache); each volatile
#     file equals its original outside its purged set and is zero inside it;
#     each model file and its xattrs equal the mirror; after removing
#     everything, stats show files=1, data_bytes=0, volatile_bytes=0,
#     volatile_units=0;
#  7. unmounts with fusermount3 -u: the daemon exits 0 within 10 s and has
#     printed nothing (its exit check prints "volatilefs: at exit, not
#     freed: ..." when metadata, pages or reservations leaked).
# A failed check of 5. and 6. does not stop the test: the next checks, the
# leak check at exit among them, still run, and the test fails at the end.
# An EXIT trap stops the workers, unmounts (lazily if need be) and stops the
# daemon whatever happens, and shows the daemon's output on failure;
# VFS_FIU_KEEP=1 keeps the work directory (per-worker results res.N and
# the model files' history trace.N).  VFS_FIU_SEED seeds the workload
# (printed; the failures libfiu picks are not reproducible).  About 35 s.
# Not for sanitizer builds: fiu's LD_PRELOAD and the sanitizer runtimes do
# not mix.
#
#   $ VFS_FIU_SECONDS=10 tests/mount/fiu.sh build-fiu/src/daemon/volatilefs
#   fiu: ok - mounted /tmp/volatilefs-fiu.X/mnt under fiu-run (daemon pid 4242, seed 123)
#   fiu: ok - fault point volatilefs/meta live: mkdir fails with ENOMEM while it is enabled, works after
#   ...
#   fiu: ok - 1025 calls under injection: ENOMEM=219 ok=806
#       ENOMEM append                  9
#   ...
#   fiu: ok - unmounted: the daemon exited 0 and printed nothing (no leak at exit)

set -Eeuo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
need fusermount3 fuse3
need setfattr attr
need getfattr attr
need fiu-run fiu-utils
need fiu-ctrl fiu-utils
need fallocate util-linux
need timeout coreutils
need sha256sum coreutils
[[ -f /usr/lib/fiu/fiu_posix_preload.so ]] ||
	fail "/usr/lib/fiu/fiu_posix_preload.so missing (Debian package libfiu0)"
daemon=$(daemon_path "$1")

num() { [[ $2 =~ ^[0-9]+$ ]] || fail "$1=$2 is not a number"; }
prob() { [[ $2 =~ ^(0(\.[0-9]+)?|1(\.0*)?)$ ]] || fail "$1=$2 is not a probability (0..1)"; }
seconds=${VFS_FIU_SECONDS:-25}
workers=${VFS_FIU_WORKERS:-3}
p_mm=${VFS_FIU_PROB_MM:-0.05}
p_vfs=${VFS_FIU_PROB_VFS:-0.1}
seed=${VFS_FIU_SEED:-$((RANDOM * 32768 + RANDOM))}
num VFS_FIU_SECONDS "$seconds"
num VFS_FIU_WORKERS "$workers"
num VFS_FIU_SEED "$seed"
prob VFS_FIU_PROB_MM "$p_mm"
prob VFS_FIU_PROB_VFS "$p_vfs"
points=()
read -ra list <<< "${VFS_FIU_POINTS:-posix/mm/*=$p_mm volatilefs/*=$p_vfs} ${VFS_FIU_EXTRA:-}"
for e in "${list[@]}"; do
	[[ $e == ?*=* ]] || fail "VFS_FIU_POINTS/VFS_FIU_EXTRA: '$e' is not NAME=PROBABILITY"
	prob "VFS_FIU_EXTRA ${e%%=*}" "${e##*=}"
	points+=("$e")
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-fiu.XXXXXX")
mnt=$tmp/mnt
VFS_TEST_DIR=$mnt # the mount stat_of reads
log=$tmp/daemon.log
ctl=$tmp/fiu
dpid=
wpids=()
mkdir "$mnt"
# The model files' mirrors live here and are punched like the models.
head -c 8192 /dev/zero > "$tmp/punch"
fallocate -p -o 0 -l 4096 "$tmp/punch" 2> /dev/null ||
	fail "${TMPDIR:-/tmp} does not support fallocate --punch-hole (set TMPDIR elsewhere)"
rm "$tmp/punch"

daemon_alive()
{
	local st
	[[ -n $dpid ]] || return 1
	st=$(awk '/^State:/ { print $2 }' "/proc/$dpid/status" 2> /dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

show_log()
{
	if [[ -s $log ]]; then
		printf '%s: daemon output:\n' "$vfs_test" >&2
		sed 's/^/    | /' "$log" | head -200 >&2
	fi
}

# kill_tree PID: SIGTERM to PID and everything below it, leaves first.
kill_tree()
{
	local child
	for child in $(pgrep -P "$1" 2> /dev/null); do
		kill_tree "$child"
	done
	kill -TERM "$1" 2> /dev/null
}

cleanup()
{
	local status=$? i p
	trap - ERR EXIT
	set +e
	: > "$tmp/stop"
	for p in "${wpids[@]}"; do
		kill_tree "$p"
	done
	if is_mounted "$mnt"; then
		fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null
	fi
	if daemon_alive; then
		kill -TERM "$dpid" 2> /dev/null
		for ((i = 0; i < 30; i++)); do
			daemon_alive || break
			sleep 0.1
		done
		daemon_alive && kill -KILL "$dpid" 2> /dev/null
	fi
	for p in "${wpids[@]}"; do
		wait "$p" 2> /dev/null
	done
	if is_mounted "$mnt"; then
		fusermount3 -uz "$mnt" 2> /dev/null || umount -l "$mnt" 2> /dev/null
	fi
	if [[ $status -ne 0 ]]; then
		show_log
	fi
	if is_mounted "$mnt"; then
		printf '%s: FAIL - could not unmount %s: remove it by hand (umount -l)\n' \
			"$vfs_test" "$mnt" >&2
	elif [[ -n ${VFS_FIU_KEEP:-} ]]; then
		printf '%s: kept %s (VFS_FIU_KEEP)\n' "$vfs_test" "$tmp" >&2
	else
		rm -rf "$tmp"
	fi
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# fiu COMMAND: a libfiu remote control command to the daemon (fiu-ctrl
# reports an unknown pid or a refused command on stdout and exits 0).
fiu()
{
	local out
	out=$(timeout 10 fiu-ctrl -f "$ctl" -c "$1" "$dpid" 2>&1) ||
		fail "fiu-ctrl -c '$1' failed or hung: $out"
	[[ -z $out ]] || fail "fiu-ctrl -c '$1': $out"
}

# faults on|off: enable (random) or disable every point of $points.
faults()
{
	local p
	for p in "${points[@]}"; do
		if [[ $1 == on ]]; then
			fiu "enable_random name=${p%=*},probability=${p##*=}"
		else
			fiu "disable name=${p%=*}"
		fi
	done
}

alive()
{
	daemon_alive || fail "$1: the daemon (pid $dpid) died"
	is_mounted "$mnt" || fail "$1: $mnt is no longer mounted"
}

# problem WHAT: a failed check that does not stop the test: the checks
# after it (the files, the leak check at exit) still run, and the test
# fails at the end.
problems=0
problem()
{
	printf '%s: FAIL - %s\n' "$vfs_test" "$*" >&2
	problems=$((problems + 1))
}

# --- the mount, under fiu-run, no failure enabled ---------------------------

fiu-run -x -f "$ctl" "$daemon" -f -o memory_limit=256M "$mnt" > "$log" 2>&1 < /dev/null &
dpid=$! # fiu-run execs the daemon: same pid
deadline=$((SECONDS + 10))
until is_mounted "$mnt" && [[ -p $ctl-$dpid.in ]]; do
	daemon_alive || fail "daemon exited before mounting $mnt"
	((SECONDS < deadline)) || fail "$mnt not mounted (or no fiu control FIFO) after 10 s"
	sleep 0.05
done
ok "mounted $mnt under fiu-run (daemon pid $dpid, seed $seed)"

# 1. The daemon's own fault points are compiled in and answer fiu-ctrl.
fiu "enable name=volatilefs/meta"
st=0
err=$(timeout 10 mkdir "$mnt/probe" 2>&1) || st=$?
fiu "disable name=volatilefs/meta"
if [[ $st -eq 0 ]]; then
	fail "mkdir succeeded with volatilefs/meta enabled: the daemon's fault points are" \
		"not compiled in (build with -Dfiu=enabled; fiu.h needs FIU_ENABLE defined)"
fi
[[ $err == *"Cannot allocate memory"* ]] ||
	fail "mkdir with volatilefs/meta enabled: '$err', want 'Cannot allocate memory'"
timeout 10 mkdir "$mnt/probe" || fail "mkdir after volatilefs/meta was disabled failed"
rmdir "$mnt/probe"
ok "fault point volatilefs/meta live: mkdir fails with ENOMEM while it is enabled, works after"
base_files=$(stat_of files) # the root

# 2. Data written before any failure.
RANDOM=$seed
pool=$tmp/pool # random bytes the writes copy from
head -c $((4 << 20)) /dev/urandom > "$pool"
mkdir "$mnt/keep" "$mnt/vol" "$tmp/vol"
total=0
for i in $(seq 0 19); do
	size=$((RANDOM * 128 + RANDOM % 128 + 1)) # 1 B .. 4 MiB
	head -c "$size" /dev/urandom > "$mnt/keep/f$i"
	total=$((total + size))
done
(cd "$mnt/keep" && sha256sum f*) > "$tmp/keep.sums"
(cd "$mnt/keep" && sha256sum --quiet -c "$tmp/keep.sums") ||
	fail "non-volatile files do not read back before any failure"
ok "20 non-volatile files written and checked, $((total >> 10)) KiB"
vranges=("all" "0:256K 512K:256K" "64K:0 priority=1 age" "0:4K 8K:4K 16K:4K 32K:64K priority=5")
for i in 0 1 2 3; do
	head -c $((1 << 20)) /dev/urandom > "$tmp/vol/v$i"
	cp "$tmp/vol/v$i" "$mnt/vol/v$i"
	setfattr -n user.volatile.mark -v "${vranges[i]}" "$mnt/vol/v$i"
done
ok "4 volatile files of 1 MiB written and marked"
for ((w = 0; w < workers; w++)); do
	mkdir "$mnt/w$w"
	head -c $((256 << 10)) /dev/urandom > "$tmp/model.$w"
	cp "$tmp/model.$w" "$mnt/w$w/model"
	cmp "$tmp/model.$w" "$mnt/w$w/model"
	head -c $((1 << 20)) /dev/urandom > "$mnt/w$w/vmodel"
done
ok "$workers model files of 256 KiB written, and $workers files of 1 MiB for marks"

# --- 4. the workload ---------------------------------------------------------

# run OP CMD...: CMD (10 s at most, stdout to $out, stderr to $errf), and
# how it ended, to $res (classify).  Status 0 when CMD succeeded.
run()
{
	local op=$1 st=0
	shift
	timeout -k 2 10 "$@" > "$out" 2> "$errf" < /dev/null || st=$?
	classify "$op" "$st" "$@"
}

# classify OP STATUS CMD...: one line to $res: "ok OP", "ENOMEM OP",
# "ENOSPC OP", or "HANG|CRASH|BAD OP: ..." from the status and $errf.
classify()
{
	local op=$1 st=$2 err
	shift 2
	if ((st == 0)); then
		echo "ok $op" >> "$res"
		return 0
	fi
	err=$(head -c 400 "$errf" | tr '\n' ' ')
	if ((st == 124 || st == 137)); then
		echo "HANG $op: no answer in 10 s: $*" >> "$res"
	elif [[ $err == *"Transport endpoint is not connected"* ||
		$err == *"Software caused connection abort"* ]]; then
		echo "CRASH $op: $err" >> "$res"
	elif [[ $err == *"Cannot allocate memory"* ]]; then
		echo "ENOMEM $op" >> "$res"
	elif [[ $err == *"No space left on device"* ]]; then
		echo "ENOSPC $op" >> "$res"
	else
		echo "BAD $op: status $st: ${err:-(no message)} [$*]" >> "$res"
	fi
	return 1
}

# bad OP MESSAGE: a wrong result (not an errno) found by a check.
bad() { echo "BAD $1: $2" >> "$res"; }


# A random value for a user.* xattr: LEN (1..) alphanumeric bytes.
xval()
{
	local v=$RANDOM$RANDOM$RANDOM$RANDOM
	while ((${#v} < $1)); do v=$v$v; done
	printf '%s' "${v:0:$1}"
}

# differ A B: how files A and B differ, for messages (never fails).
differ()
{
	{ cmp -l "$1" "$2" 2>&1 || true; } | awk -v sa="$(stat -c %s "$1")" -v sb="$(stat -c %s "$2")" '
		/^ *[0-9]/ { if (!n++) first = $1 - 1; last = $1 - 1 }
		END { printf "sizes %d and %d, %d bytes differ", sa, sb, n
		      if (n) printf " (offsets %d..%d)", first, last }'
}

# Byte-exact checks of what a read returned.
check_zero()
{
	# check_zero OP FILE SIZE: FILE (a copy outside the mount) is SIZE zero bytes.
	local n first
	n=$(stat -c %s "$2")
	if ((n != $3)); then
		bad "$1" "read $n bytes, want $3"
	elif ! cmp -s -n "$3" "$2" /dev/zero; then
		first=$({ cmp "$2" /dev/zero 2>&1 || true; } | sed -n 's/.*differ: byte \([0-9]*\).*/\1/p')
		bad "$1" "fresh memory not zero: $(tr -d '\0' < "$2" | wc -c) of $3 bytes are not, the first at offset $((${first:-1} - 1))"
	fi
}

# mop OP CMD...: CMD on the worker's model file (@F@ in its arguments), done
# again on the mirror outside the mount when it succeeded (a call that fails
# must change nothing), then mcheck.
mop()
{
	local op=$1 a
	local -a on=() off=()
	shift
	for a in "$@"; do
		on+=("${a//@F@/$m}")
		off+=("${a//@F@/$mm}")
	done
	if run "$op" "${on[@]}"; then
		"${off[@]}"
	fi
	mcheck "$op" "${on[*]}"
}

# mcheck OP CMD: the model file, read back with O_DIRECT right after CMD
# (ran as OP), must equal its mirror.  The read may fail under injection:
# it is tried again (30 times), so that a difference is found right after the call
# that made it.  On a difference the mirror takes the model's content, so
# that each difference is reported once.
mcheck()
{
	local a got=0 how=ok
	[[ $(tail -1 "$res") == "ok $1" ]] || how="failed: $(head -c 200 "$errf" | tr '\n' ' ')"
	for ((a = 0; a < 30; a++)); do
		# (the kernel's cached pages dropped first: a short O_DIRECT read
		# falls back to the page cache, which may not know of a change
		# the daemon made behind its back)
		timeout -k 2 10 dd if="$m" iflag=nocache count=0 status=none 2> /dev/null || true
		if run mread dd if="$m" of="$buf" bs=1M iflag=direct status=none; then
			got=1
			break
		fi
	done
	echo "$1 ($how): $2 -> read $got: $(stat -c %s "$buf" 2> /dev/null || echo no) bytes" >> "$tmp/trace.$w"
	if ((got == 0)); then
		bad mread "the model file could not be read 30 times in a row"
	elif ! cmp -s "$buf" "$mm"; then
		bad "$1" "after '$2' ($how) the model file is not what it should be (model, mirror): $(differ "$buf" "$mm")"
		cp "$buf" "$mm"
	fi
}

# units: the file's units from user.volatile.ranges without their state
# (another worker's purge may turn "volatile" into "purged" at any time),
# to $out; tried again when the read fails under injection.
units()
{
	local a
	for ((a = 0; a < 30; a++)); do
		if timeout -k 2 10 getfattr --absolute-names --only-values -n user.volatile.ranges "$1" \
			> "$out" 2> "$errf"; then
			sed -i 's/ \(volatile\|purged\) / /' "$out"
			return 0
		fi
	done
	return 1
}

# vmop OP NAME VALUE: set NAME (user.volatile.mark or unmark) to VALUE on
# the worker's vmodel file; when that fails, its units must not have
# changed.
vmop()
{
	local f=$mnt/w$w/vmodel before=$tmp/units.$w
	units "$f" || return 0
	cp "$out" "$before"
	if ! run "$1" setfattr -n "$2" -v "$3" "$f" && units "$f" && ! cmp -s "$out" "$before"; then
		bad "$1" "'$2=$3' failed ($(head -c 100 "$errf" | tr '\n' ' ')) but changed the units: $(tr '\n' ' ' < "$before") -> $(tr '\n' ' ' < "$out")"
	fi
}

# mxcheck NAME: the model file's xattr NAME is what the mirror (mx) says.
mxcheck()
{
	local name=$1 st=0
	timeout -k 2 10 getfattr --absolute-names --only-values -n "$name" "$m" > "$out" 2> "$errf" || st=$?
	if [[ -n ${mx[$name]+set} ]]; then
		if classify mgetxattr "$st" getfattr --absolute-names -n "$name" "$m" &&
			[[ $(cat "$out") != "${mx[$name]}" ]]; then
			bad mgetxattr "$name: got '$(short "$(cat "$out")")', want '$(short "${mx[$name]}")'"
		fi
	elif ((st == 0)); then
		bad mgetxattr "$name: present ('$(short "$(cat "$out")")'), but it was never set or was removed"
	elif grep -q "No such attribute" "$errf"; then
		echo "ok mgetxattr" >> "$res"
	else
		classify mgetxattr "$st" getfattr --absolute-names -n "$name" "$m" || true
	fi
}

worker()
{
	local w=$1 d=$mnt/w$1 k j a r1 r2 off len size src val name
	local m=$mnt/w$1/model mm=$tmp/model.$1 buf=$tmp/buf.$1 exp=$tmp/exp.$1
	local -A mx=() # the model file's xattrs: name -> value
	res=$tmp/res.$1 out=$tmp/out.$1 errf=$tmp/err.$1
	: > "$res"
	RANDOM=$((seed + w * 7919))
	while [[ ! -e $tmp/stop ]] && ((SECONDS < end)); do
		k=$((RANDOM % 8))
		j=$((RANDOM % 8))
		# two random numbers of 30 bits
		r1=$((RANDOM * 32768 + RANDOM))
		r2=$((RANDOM * 32768 + RANDOM))
		src=$((r1 % (3 << 20)))
		case $((RANDOM % 36)) in
		0 | 1) # a scratch file written whole, up to 2 MiB
			run write dd if="$pool" of="$d/s$k" bs=64K count=$((RANDOM % 32 + 1)) \
				skip="$src" iflag=skip_bytes status=none || true ;;
		2) # appended to
			run append dd if="$pool" of="$d/s$k" bs=$((RANDOM % 100000 + 1)) count=1 \
				skip="$src" iflag=skip_bytes oflag=append conv=notrunc status=none || true ;;
		3) run truncate truncate -s $((r2 % (4 << 20))) "$d/s$k" || true ;;
		4) run fallocate fallocate -o $((r2 % (2 << 20))) -l $((r1 % (2 << 20) + 1)) \
			"$d/s$k" || true ;;
		5) [[ -f $d/s$k ]] && { run punch fallocate -p -o $((r2 % (2 << 20))) \
			-l $((r1 % (1 << 20) + 1)) "$d/s$k" || true; } ;;
		6) [[ -e $d/s$k ]] && { run rm rm -f "$d/s$k" || true; } ;;
		7) # user.* xattrs of scratch files
			[[ -f $d/s$k ]] && { run setxattr setfattr -n "user.x$j" \
				-v "$(xval $((RANDOM % 3000 + 1)))" "$d/s$k" || true; } ;;
		8) [[ -f $d/s$k ]] && { run getxattr getfattr --absolute-names -d "$d/s$k" || true; } ;;
		9) # (removing an attribute that is not there: ENODATA, as it should)
			if [[ -f $d/s$k ]] && ! run rmxattr setfattr -x "user.x$j" "$d/s$k" &&
				grep -q "No such attribute" "$errf"; then
				sed -i '$d' "$res"
				echo "ok rmxattr" >> "$res"
			fi ;;
		10) # volatile ranges of scratch files
			[[ -f $d/s$k ]] && { run mark setfattr -n user.volatile.mark \
				-v "$((RANDOM % 64 * 4))K:$((RANDOM % 64 * 4))K $((RANDOM % 16))M:0 priority=$((RANDOM % 8))" \
				"$d/s$k" || true; } ;;
		11) [[ -f $d/s$k ]] && { run unmark setfattr -n user.volatile.unmark \
			-v "$((RANDOM % 64 * 4))K:$((RANDOM % 256))K" "$d/s$k" || true; } ;;
		12) [[ -f $d/s$k ]] && { run purge-file setfattr -n user.volatile.purge -v all \
			"$d/s$k" || true; } ;;
		13) [[ -f $d/s$k ]] && { run ranges getfattr --absolute-names -n user.volatile.ranges "$d/s$k" || true
			run purged getfattr --absolute-names -n user.volatile.purged "$d/s$k" || true; } ;;
		14) [[ -f $d/s$k ]] && { run rm-purged setfattr -x user.volatile.purged "$d/s$k" || true; } ;;
		15) # the volatile files: marks, unmarks, purges, reports, reads
			run vmark setfattr -n user.volatile.mark \
				-v "$((RANDOM % 256 * 4))K:$((RANDOM % 64 * 4))K" "$mnt/vol/v$((k % 4))" || true ;;
		16) run vunmark setfattr -n user.volatile.unmark \
			-v "$((RANDOM % 256 * 4))K:$((RANDOM % 64 * 4))K" "$mnt/vol/v$((k % 4))" || true ;;
		17) run vpurge setfattr -n user.volatile.purge -v all "$mnt/vol/v$((k % 4))" || true ;;
		18) run vranges getfattr --absolute-names -n user.volatile.ranges "$mnt/vol/v$((k % 4))" || true
			run vpurged getfattr --absolute-names -n user.volatile.purged "$mnt/vol/v$((k % 4))" || true
			run vread dd if="$mnt/vol/v$((k % 4))" of=/dev/null bs=1M iflag=direct status=none ||
				true ;;
		19) run root-purge setfattr -n user.volatile.purge -v "$((RANDOM % 4 + 1))M" "$mnt" || true
			run stats getfattr --absolute-names -n user.volatile.stats "$mnt" || true ;;
		20) # directories, names, links
			[[ -e $d/d$j ]] || { run mkdir mkdir "$d/d$j" || true; } ;;
		21) [[ -d $d/d$j && -e $d/s$k ]] && { run rename mv -T "$d/s$k" "$d/d$j/s$k" || true; } ;;
		22) [[ -d $d/d$j && -e $d/d$j/s$k && ! -e $d/s$k ]] &&
			{ run rename-back mv -T "$d/d$j/s$k" "$d/s$k" || true; } ;;
		23) [[ -d $d/d$j ]] && { run rm-dir rm -rf "$d/d$j" || true; } ;;
		24) [[ -f $d/s$k && ! -e $d/l$j ]] && { run link ln "$d/s$k" "$d/l$j" || true; }
			[[ ! -L $d/y$j ]] && { run symlink ln -s "s$k-$(xval $((RANDOM % 200 + 1)))" \
				"$d/y$j" || true; }
			[[ -e $d/l$k || -L $d/y$k ]] && { run rm-links rm -f "$d/l$k" "$d/y$k" || true; } ;;
		25) # the non-volatile files, read by the daemon (O_DIRECT)
			j=$((RANDOM % 20))
			if run keep-read dd if="$mnt/keep/f$j" of="$buf" bs=1M iflag=direct status=none; then
				[[ "$(sha256sum < "$buf")" == "$(awk -v f="f$j" '$2 == f { print $1 }' \
					"$tmp/keep.sums")  -" ]] ||
					bad keep-read "keep/f$j read back wrong under injected failures"
			fi ;;
		26) # fresh memory is clean: a new fallocate reads back as zeros
			if [[ -e $d/z ]]; then
				run rm-z rm -f "$d/z" || true
			else
				len=$(((RANDOM % 256 + 1) * 4096))
				run zero-falloc fallocate -l "$len" "$d/z" || true
				if [[ -f $d/z ]] && size=$(stat -c %s "$d/z") &&
					run zero-falloc-read dd if="$d/z" of="$buf" bs=1M iflag=direct status=none; then
					check_zero zero-falloc-read "$buf" "$size"
				fi
			fi ;;
		27) # ... and so is the rest of a fresh page a 1-byte write lands in
			if [[ -e $d/p ]]; then
				run rm-p rm -f "$d/p" || true
			elif run zero-sparse truncate -s 64K "$d/p"; then
				off=$(((RANDOM % 16) * 4096 + RANDOM % 4096))
				: > "$exp"
				truncate -s 64K "$exp"
				if run zero-pwrite dd if="$pool" of="$d/p" bs=1 count=1 skip="$src" \
					seek="$off" conv=notrunc status=none; then
					dd if="$pool" of="$exp" bs=1 count=1 skip="$src" seek="$off" \
						conv=notrunc status=none
				fi
				if run zero-sparse-read dd if="$d/p" of="$buf" bs=64K iflag=direct \
					status=none; then
					cmp -s "$buf" "$exp" || bad zero-sparse-read \
						"1 byte at $off of a sparse 64 KiB file: the rest of its page is not zero: $(differ "$buf" "$exp")"
				fi
			fi ;;
		28 | 29) # the model file: a write inside one page (one request)
			off=$((r2 % (512 << 10)))
			mop mwrite dd if="$pool" of=@F@ bs=$((RANDOM % (4096 - off % 4096) + 1)) count=1 \
				skip="$src" seek="$off" iflag=skip_bytes oflag=seek_bytes conv=notrunc status=none ;;
		30) mop mtruncate truncate -s $((r2 % (512 << 10))) @F@ ;;
		31) if ((RANDOM % 2)); then
				mop mpunch fallocate -p -o $((r2 % (512 << 10))) -l $((r1 % (128 << 10) + 1)) @F@
			else
				mop mfalloc fallocate -o $((r2 % (512 << 10))) -l $((r1 % (128 << 10) + 1)) @F@
			fi ;;
		32) # xattrs of the model file, mirrored
			name=user.m$j
			if ((RANDOM % 3)); then
				val=$(xval $((RANDOM % 2000 + 1)))
				if run msetxattr setfattr -n "$name" -v "$val" "$m"; then mx[$name]=$val; fi
			elif [[ -n ${mx[$name]:-} ]]; then
				if run mrmxattr setfattr -x "$name" "$m"; then unset "mx[$name]"; fi
			fi
			mxcheck "$name" ;;
		33) # rewritten whole through O_TRUNC (dd without notrunc), 1 request:
			# when the open fails nothing changes; when the write fails the
			# file is empty
			if ((RANDOM % 4 == 0)); then
				len=$((RANDOM % 4096 + 1))
				if run mrewrite dd if="$pool" of="$m" bs="$len" count=1 skip="$src" \
					iflag=skip_bytes status=none; then
					dd if="$pool" of="$mm" bs="$len" count=1 skip="$src" iflag=skip_bytes \
						status=none
				elif grep -q "error writing" "$errf"; then
					: > "$mm"
				fi
				mcheck mrewrite "dd of=$m bs=$len count=1 (O_TRUNC)"
			fi ;;
		34 | 35) # marks and unmarks of several ranges: all or nothing
			val=
			for ((a = RANDOM % 4; a >= 0; a--)); do
				val+="$((RANDOM % 512 * 4))K:$((RANDOM % 64 * 4))K "
			done
			if ((RANDOM % 2)); then
				vmop vm-mark user.volatile.mark "${val}priority=$((RANDOM % 8))$( ((RANDOM % 2)) && echo ' age')"
			else
				vmop vm-unmark user.volatile.unmark "$val"
			fi ;;
		esac
	done
	# The model file's xattrs, for the check after the failures.
	for name in "${!mx[@]}"; do
		printf '%s=%s\n' "$name" "${mx[$name]}"
	done | sort > "$tmp/mx.$w"
}

faults on
ok "failures enabled at run time: ${points[*]}"
end=$((SECONDS + seconds))
for ((w = 0; w < workers; w++)); do
	worker "$w" &
	wpids+=($!)
done
while ((SECONDS < end)); do
	if ! daemon_alive || ! is_mounted "$mnt"; then
		: > "$tmp/stop"
		break
	fi
	sleep 0.5
done
st=0
for p in "${wpids[@]}"; do
	wait "$p" || st=$?
done
wpids=()
[[ $st -eq 0 ]] || fail "a worker ended with status $st"

cat "$tmp"/res.* > "$tmp/results"
calls=$(wc -l < "$tmp/results")
summary=$(awk '{ n[$1]++ } END { for (k in n) printf "%s=%d ", k, n[k] }' "$tmp/results")
ok "$calls calls under injection: $summary"
awk '$1 != "ok" { f[$1 " " $2]++ } END { for (k in f) printf "    %-30s %d\n", k, f[k] }' \
	"$tmp/results" | sort
if ! daemon_alive; then
	# How it ended (128 + N: signal N), and the calls that saw it.
	dstatus=0
	wait "$dpid" || dstatus=$?
	dpid=
	grep -v '^\(ok\|ENOMEM\|ENOSPC\) ' "$tmp/results" | sort | uniq -c | sort -rn | head -10 |
		sed 's/^/    /' >&2
	fail "the daemon died under injected failures: exit status $dstatus$( ((dstatus > 128)) &&
		echo " (signal $(kill -l $((dstatus - 128))))"); run it under gdb to see where"
fi
alive "after ${seconds} s of workload under injected failures"
faults off
ok "failures disabled"
if grep -qv '^\(ok\|ENOMEM\|ENOSPC\) ' "$tmp/results"; then
	grep -v '^\(ok\|ENOMEM\|ENOSPC\) ' "$tmp/results" | sort | uniq -c | sort -rn | head -30 |
		sed 's/^/    /' >&2
	problem "calls under injected failures hung, crashed, failed with an unexpected error or read wrong data (above)"
else
	ok "every failed call failed with ENOMEM or ENOSPC; no hang, no crash, no wrong data"
fi
grep -q '^\(ENOMEM\|ENOSPC\) ' "$tmp/results" ||
	problem "no call failed: the injected failures reached nothing"

# --- 6. after the failures ---------------------------------------------------

bad_keep=
for i in $(seq 0 19); do
	want=$(awk -v f="f$i" '$2 == f { print $1 }' "$tmp/keep.sums")
	got=$(dd if="$mnt/keep/f$i" bs=1M iflag=direct status=none | sha256sum) ||
		fail "keep/f$i cannot be read after the failures"
	[[ $got == "$want  -" ]] || bad_keep+=" f$i"
done
if [[ -n $bad_keep ]]; then
	problem "non-volatile files written before the failures do not read back (O_DIRECT):$bad_keep"
elif ! (cd "$mnt/keep" && sha256sum --quiet -c "$tmp/keep.sums"); then
	problem "non-volatile files written before the failures differ (read through the page cache)"
else
	ok "all 20 non-volatile files read back byte for byte"
fi

vbad=0
for i in 0 1 2 3; do
	v=$mnt/vol/v$i
	cp "$tmp/vol/v$i" "$tmp/vexp"
	purged=$(getfattr --absolute-names --only-values -n user.volatile.purged "$v")
	while IFS=: read -r off len; do
		[[ -n $off ]] || continue
		dd if=/dev/zero of="$tmp/vexp" bs=64K count="$len" seek="$off" \
			iflag=count_bytes oflag=seek_bytes conv=notrunc status=none
	done <<< "$purged"
	dd if="$v" of="$tmp/vgot" bs=1M iflag=direct status=none
	if ! cmp -s "$tmp/vgot" "$tmp/vexp"; then
		problem "vol/v$i: not its original outside its purged set ($(tr '\n' ' ' <<< "$purged")) and zeros inside: $(differ "$tmp/vgot" "$tmp/vexp")"
		vbad=1
	fi
done
((vbad)) || ok "the 4 volatile files: original bytes outside their purged sets, zeros inside"

mbad=0
for ((w = 0; w < workers; w++)); do
	m=$mnt/w$w/model
	dd if="$m" of="$tmp/mgot" bs=1M iflag=direct status=none
	if ! cmp -s "$tmp/mgot" "$tmp/model.$w"; then
		problem "w$w/model differs from its mirror after its last check: $(differ "$tmp/mgot" "$tmp/model.$w")"
		mbad=1
	fi
	getfattr -d --absolute-names -m '^user\.m' "$m" 2> /dev/null |
		sed -n 's/^\(user\.m[0-7]\)="\(.*\)"$/\1=\2/p' | sort > "$tmp/mxgot"
	if ! cmp -s "$tmp/mxgot" "$tmp/mx.$w"; then
		problem "w$w/model: xattrs differ from the mirror: $({ diff "$tmp/mxgot" "$tmp/mx.$w" || true; } | head -4 | tr '\n' ' ')"
		mbad=1
	fi
done
((mbad)) || ok "the $workers model files and their xattrs equal their mirrors"

if ! rm -rf "${mnt:?}"/*; then
	problem "rm -rf of everything failed after the failures were disabled"
fi
deadline=$((SECONDS + 5))
until [[ "$(stat_of files) $(stat_of data_bytes) $(stat_of volatile_bytes) $(stat_of volatile_units)" == "$base_files 0 0 0" ]]; do
	if ((SECONDS >= deadline)); then
		problem "after removing everything: files=$(stat_of files) data_bytes=$(stat_of data_bytes) volatile_bytes=$(stat_of volatile_bytes) volatile_units=$(stat_of volatile_units), want files=$base_files and zeros (a leak)"
		break
	fi
	sleep 0.2
done
((SECONDS >= deadline)) ||
	ok "everything removed: files=$base_files data_bytes=0 volatile_bytes=0 volatile_units=0"
# shellcheck disable=SC2016 # $1 is for the inner sh
mount_ok=$(timeout 10 sh -c 'echo alive > "$1/a" && cat "$1/a" && rm "$1/a"' sh "$mnt") ||
	fail "the mount does not answer after the failures"
[[ $mount_ok == alive ]] || fail "read back '$mount_ok', want alive"

# --- 7. unmount: exit 0, nothing printed --------------------------------------

for ((i = 0; i < 50; i++)); do
	umount_err=$(fusermount3 -u "$mnt" 2>&1) && break
	is_mounted "$mnt" || break
	sleep 0.1
done
is_mounted "$mnt" && fail "fusermount3 -u $mnt: $umount_err"
deadline=$((SECONDS + 10))
while daemon_alive; do
	((SECONDS < deadline)) || fail "daemon $dpid still running 10 s after fusermount3 -u"
	sleep 0.05
done
dstatus=0
wait "$dpid" || dstatus=$?
dpid=
[[ $dstatus -eq 0 ]] || fail "daemon exited with status $dstatus after fusermount3 -u, want 0"
if [[ -s $log ]]; then
	show_log
	problem "the daemon printed something (above): a leak found by its exit check, or an error"
else
	ok "unmounted: the daemon exited 0 and printed nothing (no leak at exit)"
fi
((problems == 0)) || fail "$problems of the checks above failed"
