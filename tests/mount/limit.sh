#!/bin/bash
# limit.sh DAEMON - memory_limit bounds everything the daemon holds, and
# hostile sizes cost nothing (DESIGN sections 3 and 9).
#
# Six cases, each on a mount of its own (with-mount.sh, run by this script
# with the case's options); "the margin" is max(1% of the limit, 4 MiB), and
# "idle" is the daemon's VmRSS measured right after the case's mount.  While
# a case runs its load, a sampler reads the daemon's VmRSS every 10 ms, and
# VmHWM (reset through /proc/PID/clear_refs when that is writable) gives the
# exact peak.
#  race     -o memory_limit=256M: four `fallocate -l 200M` on four files,
#           released together, three rounds.  Sampled VmRSS and VmHWM never
#           exceed limit + margin; the fallocates that succeeded fit the
#           limit together; the others failed with "No space left on device"
#           and left their file empty (size 0, st_blocks 0).
#  flood    -o memory_limit=64M ($VFS_TEST_LIMIT_MB overrides the 64): 400
#           `setfattr -n user.volatile.mark` calls (6.25 per MiB of limit),
#           4 at a time, each naming 5000 one-page ranges `OFFK:4K` (as many
#           as a 64 KiB value holds; all distinct, beyond the end of an
#           empty file).  VmRSS and VmHWM
#           never exceed limit + margin; the flood ends in a setfattr failing
#           with "No space left on device" or "Cannot allocate memory" (it
#           does not succeed 400 times); after `rm` of the file a 16 MiB
#           write succeeds, and once that file is removed too, VmRSS comes
#           back to idle + margin (within 10 s).
#  sparse   the same flood, the same limit, with the units inside a sparse
#           file (9 GiB under a 64 MiB limit, made by truncate): units that
#           the file's size allows, which only the charging of metadata can
#           stop.
#  hostile  -o memory_limit=1G: sizes up to 2^63 cost what they touch.  A
#           hang detector bounds each call: a deadline on a command run in
#           the background (`timeout` would wait for a call stuck in the
#           daemon: such a wait cannot be interrupted):
#           - `fallocate -l 1P`, `fallocate --keep-size -l 1P` and
#             `fallocate -l 2^63-1` on an empty file fail with "No space
#             left on device", and a `truncate -s 0` of the same file
#             started 50 ms later completes (both within 5 s);
#           - `fallocate -o 4E -l 4E` (ending at 8E) fails with "File too
#             large" (the kernel's EFBIG);
#           - `fallocate -o 2^62 -l 4096` succeeds and holds one page
#             (st_blocks 8); a punch of 2^62 + 4096 bytes from 0 frees it;
#           - `truncate -s 2^63-1`, then SEEK_DATA and SEEK_HOLE (python3)
#             over the empty file and over one page written at 2^62 answer
#             (ENXIO / 0 / 2^62 / 2^62 + 4096) within 10 s;
#           - marks `2^62:0`, `2^62:2^61`, `0:2^63-4096` and `all`, an
#             unmark `0:0` and a per-file purge of the 2^63-1 byte file
#             succeed (within 5 s each) and the purged set is
#             `0:9223372036854775807`;
#           then, with every file removed, VmRSS is back to idle + margin.
#  idle     -o memory_limit=1G: 20000 small files, each with a user.*
#           attribute and a volatile mark (python3, in-process), and four
#           64 MiB files, two of them marked; `user.volatile.purge all` on
#           the root; then everything deleted: VmRSS is back to idle +
#           margin within 10 s.
#  reply    -o memory_limit=256M: a 64 MiB file read by 40 parallel
#           `dd bs=1M iflag=direct`; then the file deleted: VmRSS is back to
#           idle + margin within 10 s (1 MiB reply buffers are not kept by
#           every worker thread).
# Under a sanitizer runtime (the daemon maps libasan or libtsan), whose
# allocator keeps freed memory on purpose, VmRSS coming back to idle, and the
# 16 MiB write after a flood (the RSS it kept is over the limit), are shown
# and not checked; the peaks are checked all the same.
# Every case prints its figures before its checks; the first failed check
# ends that case, the other cases still run, and the test fails naming the
# cases that failed.  A case that fails leaves its hung calls to
# with-mount.sh, which unmounts lazily and kills the daemon (the calls end
# with it).  VFS_LIMIT_CASES="race flood sparse hostile idle reply" (the
# default) picks and orders the cases.
#
#   $ tests/mount/limit.sh build/src/daemon/volatilefs
#   $ VFS_LIMIT_CASES=hostile tests/mount/limit.sh build/src/daemon/volatilefs

# errtrace: lib.sh's ERR trap names the failing line inside functions too.
set -Eeuo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# meson sets MALLOC_PERTURB_, which makes glibc write every block it hands
# out: libfuse's 1 MiB receive buffer of each worker thread is then resident
# at once, and the RSS figures would count threads, not what the daemon
# holds.  The daemons of this test run without it (a user's daemon does).
unset MALLOC_PERTURB_

mib_k=1024
flood_mb=${VFS_TEST_LIMIT_MB:-64}

# ---------------------------------------------------------------------------
# Standalone: one mount per case.
if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need fallocate util-linux
	need setfattr attr
	need getfattr attr
	need python3 python3
	[[ $flood_mb =~ ^[1-9][0-9]*$ ]] || fail "VFS_TEST_LIMIT_MB=$flood_mb is not a number of MiB"
	daemon=$(daemon_path "$1")
	failed=()
	for c in ${VFS_LIMIT_CASES:-race flood sparse hostile idle reply}; do
		case $c in
		race) mopts=memory_limit=256M ;;
		flood | sparse) mopts=memory_limit=${flood_mb}M ;;
		hostile) mopts=memory_limit=1G ;;
		idle) mopts=memory_limit=1G ;;
		reply) mopts=memory_limit=256M ;;
		*) fail "VFS_LIMIT_CASES: unknown case '$c' (race flood sparse hostile idle reply)" ;;
		esac
		echo "$vfs_test: --- case $c: -o $mopts"
		if bash "$vfs_dir/with-mount.sh" "$daemon" -o "$mopts" -- \
			bash "${BASH_SOURCE[0]}" --mounted "$c" "$mopts"; then
			ok "case $c"
		else
			echo "$vfs_test: case $c FAILED" >&2
			failed+=("$c")
		fi
	done
	((${#failed[@]} == 0)) || fail "cases that failed: ${failed[*]}"
	exit 0
fi

# ---------------------------------------------------------------------------
# Mounted: one case.
case_name=$2
limit_mb=${3#memory_limit=}
limit_mb=${limit_mb%M}
if [[ $limit_mb == *G ]]; then
	limit_mb=$((${limit_mb%G} * 1024))
fi
limit_kib=$((limit_mb * mib_k))
margin_kib=$((limit_kib / 100 > 4096 ? limit_kib / 100 : 4096))
vfs_test="$vfs_test/$case_name"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-limit.XXXXXX")
declare -A bg_pid=()
watch_pid=

# On the way out, failed or not: no background command of ours is left (a
# call stuck in the daemon gets SIGKILL now and ends when with-mount.sh
# kills the daemon).
teardown()
{
	local n p
	trap - ERR
	set +e
	# Only those still running: the pid of one that ended may be reused.
	for n in "${!bg_pid[@]}"; do
		[[ -e $tmp/$n.done ]] && continue
		p=${bg_pid[$n]}
		pkill -KILL -P "$p" 2> /dev/null
		kill -KILL "$p" 2> /dev/null
	done
	if [[ -n $watch_pid ]]; then
		kill -KILL "$watch_pid" 2> /dev/null
	fi
	cd /
	rm -rf "$tmp"
}
trap teardown EXIT

cd "$VFS_TEST_DIR"
idle_kib=$(daemon_rss_kib)
echo "$vfs_test: limit ${limit_kib} KiB, margin ${margin_kib} KiB, idle VmRSS ${idle_kib} KiB"
# A sanitizer's allocator keeps freed memory on purpose (ASan's quarantine,
# shadow pages): there, VmRSS coming back to idle is shown, not checked.
sanitizer=
if grep -qE 'lib(a|t)san' "/proc/$VFS_DAEMON_PID/maps"; then
	sanitizer=$(grep -oE 'lib(a|t)san' "/proc/$VFS_DAEMON_PID/maps" | head -n 1)
fi

# --- the VmRSS sampler -------------------------------------------------------

# watch_start: sample the daemon's VmRSS every 10 ms in the background until
# watch_stop, and reset its VmHWM (when /proc/PID/clear_refs takes it).
watch_start()
{
	rm -f "$tmp/watch.stop" "$tmp/watch.out"
	[[ -p $tmp/never ]] || mkfifo "$tmp/never"
	hwm_reset=0
	if { echo 5 > "/proc/$VFS_DAEMON_PID/clear_refs"; } 2> /dev/null; then
		hwm_reset=1
	fi
	(
		trap - ERR
		set +e
		max=0 n=0
		# A FIFO opened for reading and writing that nobody writes to:
		# `read -t` on it sleeps without starting a process.
		exec 9<> "$tmp/never"
		while [[ ! -e $tmp/watch.stop ]]; do
			while read -r k v _; do
				if [[ $k == VmRSS: ]]; then
					if ((v > max)); then max=$v; fi
					n=$((n + 1))
					break
				fi
			done < "/proc/$VFS_DAEMON_PID/status" || break
			read -r -t 0.01 -u 9 _
		done
		echo "$max $n" > "$tmp/watch.out"
	) &
	watch_pid=$!
}

# watch_stop: sets watch_max (KiB), watch_n (samples) and watch_hwm (KiB, or
# empty when VmHWM could not be reset).
watch_stop()
{
	local hwm
	: > "$tmp/watch.stop"
	wait "$watch_pid" || true
	watch_pid=
	read -r watch_max watch_n < "$tmp/watch.out" || fail "the VmRSS sampler wrote nothing"
	watch_hwm=
	if ((hwm_reset)); then
		hwm=$(awk '/^VmHWM:/ { print $2 }' "/proc/$VFS_DAEMON_PID/status")
		watch_hwm=$hwm
	fi
	echo "$vfs_test: VmRSS peak ${watch_max} KiB in $watch_n samples" \
		"(limit + margin $((limit_kib + margin_kib)) KiB); VmHWM ${watch_hwm:-not available} KiB"
}

# check_peak WHAT: the sampled peak and VmHWM stayed under limit + margin.
check_peak()
{
	local bound=$((limit_kib + margin_kib))
	((watch_max <= bound)) ||
		fail "$1: sampled VmRSS reached $watch_max KiB ($((watch_max / mib_k)) MiB), over the limit + margin $bound KiB ($((bound / mib_k)) MiB)"
	ok "$1: sampled VmRSS peak $watch_max KiB <= limit + margin $bound KiB"
	if [[ -n $watch_hwm ]]; then
		((watch_hwm <= bound)) ||
			fail "$1: VmHWM reached $watch_hwm KiB ($((watch_hwm / mib_k)) MiB), over the limit + margin $bound KiB ($((bound / mib_k)) MiB)"
		ok "$1: VmHWM $watch_hwm KiB <= limit + margin $bound KiB"
	fi
}

# settle_rss: poll VmRSS for up to 10 s until it is within the margin of
# idle; sets rss_now (the last figure).
settle_rss()
{
	local t
	for ((t = 0; t < 100; t++)); do
		rss_now=$(daemon_rss_kib)
		((rss_now <= idle_kib + margin_kib)) && return 0
		sleep 0.1
	done
	return 0
}

# check_back_to_idle WHAT
check_back_to_idle()
{
	if [[ -n $sanitizer ]]; then
		echo "$vfs_test: not checked under $sanitizer: $1: VmRSS $rss_now KiB, idle $idle_kib KiB"
		return 0
	fi
	if ((rss_now > idle_kib + margin_kib)); then
		# What holds it, for whoever reads the log.
		echo "$vfs_test: stats: $(getfattr --absolute-names --only-values -n user.volatile.stats "$VFS_TEST_DIR" | tr '\n' ' ')"
		awk '/^[0-9a-f]+-/ { name = $6 } /^Rss:/ && $2 >= 512 { print "  " $2 " KiB " (name ? name : "[anon]") }' \
			"/proc/$VFS_DAEMON_PID/smaps" 2> /dev/null | sort -rn | head -8
	fi
	((rss_now <= idle_kib + margin_kib)) ||
		fail "$1: VmRSS is $rss_now KiB 10 s later, $(((rss_now - idle_kib) / mib_k)) MiB over idle ($idle_kib KiB); want within the margin of $margin_kib KiB"
	ok "$1: VmRSS $rss_now KiB, within $margin_kib KiB of idle $idle_kib KiB"
}

# --- background commands with a deadline ------------------------------------

# bg NAME COMMAND...: run COMMAND in the background; its stdout, stderr and
# exit status go to $tmp/NAME.{out,err,rc}, and $tmp/NAME.done appears when
# it has ended.
bg()
{
	local name=$1
	shift
	rm -f "$tmp/$name".*
	(
		trap - ERR
		set +e
		"$@" > "$tmp/$name.out" 2> "$tmp/$name.err" < /dev/null
		echo $? > "$tmp/$name.rc"
		: > "$tmp/$name.done"
	) > /dev/null 2>&1 < /dev/null &
	bg_pid[$name]=$!
	# No job notice when teardown kills it.
	disown "$!"
}

# within SECONDS NAME...: true when every NAME has ended within SECONDS (from
# now); else false, with the names still running in $running.
within()
{
	local secs=$1 deadline n
	shift
	deadline=$(($(date +%s%N) / 1000000 + secs * 1000))
	while :; do
		running=
		for n in "$@"; do
			[[ -e $tmp/$n.done ]] || running+=" $n"
		done
		[[ -z $running ]] && return 0
		(($(date +%s%N) / 1000000 < deadline)) || return 1
		sleep 0.05
	done
}

rc_of() { cat "$tmp/$1.rc"; }
err_of() { tr '\n' ' ' < "$tmp/$1.err"; }

# run_within SECONDS WHAT COMMAND...: COMMAND ends within SECONDS, and
# succeeds.
run_within()
{
	local secs=$1 what=$2
	shift 2
	bg one "$@"
	within "$secs" one || fail "$what: '$*' still running after ${secs} s (a hang)"
	[[ $(rc_of one) == 0 ]] || fail "$what: '$*' failed: $(err_of one)"
	ok "$what"
}

# fail_within SECONDS WHAT MESSAGE COMMAND...: COMMAND ends within SECONDS,
# failing with MESSAGE.
fail_within()
{
	local secs=$1 what=$2 msg=$3
	shift 3
	bg one "$@"
	within "$secs" one || fail "$what: '$*' still running after ${secs} s (a hang)"
	[[ $(rc_of one) != 0 ]] || fail "$what: '$*' succeeded, want failure with '$msg'"
	[[ $(err_of one) == *"$msg"* ]] ||
		fail "$what: '$*' failed with '$(err_of one)', want '$msg'"
	ok "$what"
}

# --- race --------------------------------------------------------------------

case_race()
{
	local round i ok_n size blocks
	mkfifo "$tmp/go"
	# Three rounds: the race is the daemon's, the figures vary from one to
	# the next.
	for round in 1 2 3; do
		# The four start together: each waits for its line on a FIFO that
		# we hold open, so that none can miss it however late it starts.
		exec 8<> "$tmp/go"
		for i in 1 2 3 4; do
			# shellcheck disable=SC2016 # for the inner bash
			bg "fa$i" bash -c 'read -r _ <&8; exec 8<&-; exec fallocate -l 200M "$1"' \
				fa "f$i"
		done
		sleep 0.1
		watch_start
		printf 'go\ngo\ngo\ngo\n' >&8
		within 60 fa1 fa2 fa3 fa4 || fail "fallocate -l 200M:$running still running after 60 s"
		exec 8<&-
		watch_stop
		ok_n=0
		for i in 1 2 3 4; do
			if [[ $(rc_of "fa$i") == 0 ]]; then
				ok_n=$((ok_n + 1))
			fi
		done
		echo "$vfs_test: round $round: $ok_n of 4 fallocates of 200 MiB succeeded;" \
			"data_bytes=$(stat_of data_bytes) enospc_total=$(stat_of enospc_total)"
		check_peak "round $round: four concurrent fallocate -l 200M under a ${limit_mb} MiB limit"
		((ok_n * 200 * mib_k <= limit_kib)) ||
			fail "round $round: $ok_n fallocates of 200 MiB succeeded: $((ok_n * 200)) MiB does not fit the ${limit_mb} MiB limit"
		ok "round $round: the $ok_n fallocates that succeeded fit the limit"
		for i in 1 2 3 4; do
			[[ $(rc_of "fa$i") == 0 ]] && continue
			[[ $(err_of "fa$i") == *"No space left on device"* ]] ||
				fail "round $round: fallocate of f$i failed with '$(err_of "fa$i")', want 'No space left on device'"
			# (It may have failed to create the file: nothing changed either.)
			size=0 blocks=0
			if [[ -e f$i ]]; then
				size=$(stat -c %s "f$i")
				blocks=$(stat -c %b "f$i")
			fi
			[[ $size == 0 && $blocks == 0 ]] ||
				fail "round $round: the failed fallocate of f$i changed it: size $size, st_blocks $blocks (want 0 and 0)"
			ok "round $round: fallocate of f$i failed with ENOSPC and left it empty"
		done
		rm -f f1 f2 f3 f4
	done
	mount_answers
}

# --- flood -------------------------------------------------------------------

# flood: the units lie beyond the end of an empty file; sparse: inside a
# sparse file with room for all of them.  400 calls under a 64 MiB limit
# (2 million units: 216 MiB as the daemon stored them in December 2026),
# proportionally more under a larger one (a sanitizer build's 256 MiB).
case_sparse() { case_flood sparse; }

case_flood()
{
	local per=5000 calls w n_ok n_fail bad=() e where="beyond the end of an empty file" size
	calls=$((limit_mb < 64 ? 400 : limit_mb * 400 / 64))
	: > f
	if [[ ${1:-} == sparse ]]; then
		size=$(((calls * per + 1) * 4096 + (1 << 30)))
		truncate -s "$size" f
		where="inside a sparse file of $((size >> 30)) GiB"
	fi
	# Value c: pages (c * per + j + 1) for j < per, as "OFFK:4K" items.
	awk -v calls=$calls -v per=$per -v dir="$tmp" 'BEGIN {
		for (c = 0; c < calls; c++) {
			file = dir "/v." c
			line = ""
			for (j = 0; j < per; j++)
				line = line sprintf("%dK:4K ", (c * per + j + 1) * 4)
			printf "%s", line > file
			close(file)
		}
	}'
	(($(stat -c %s "$tmp/v.$((calls - 1))") <= 65536)) || fail "a mark value is longer than 64 KiB"
	watch_start
	for ((w = 0; w < 4; w++)); do
		# shellcheck disable=SC2016 # for the inner bash
		bg "flood$w" bash -c '
			tmp=$1 w=$2 calls=$3
			for ((c = w; c < calls; c += 4)); do
				[[ -e $tmp/flood.stop ]] && break
				if setfattr -n user.volatile.mark -v "$(< "$tmp/v.$c")" f \
					2> "$tmp/flood.err.$c"; then
					: > "$tmp/flood.ok.$c"
				else
					: > "$tmp/flood.stop"
				fi
			done' flood "$tmp" "$w" "$calls"
	done
	within $((calls * 120 / 400)) flood0 flood1 flood2 flood3 ||
		fail "mark flood:$running still running after $((calls * 120 / 400)) s"
	watch_stop
	n_ok=$(find "$tmp" -name 'flood.ok.*' | wc -l)
	n_fail=0
	for e in "$tmp"/flood.err.*; do
		[[ -s $e ]] || continue
		n_fail=$((n_fail + 1))
		bad+=("$(tr '\n' ' ' < "$e")")
	done
	echo "$vfs_test: $n_ok of $calls mark calls of $per ranges $where succeeded, $n_fail failed;" \
		"volatile_units=$(stat_of volatile_units) rss=$(stat_of rss)"
	rm f
	if { head -c 16M /dev/urandom > g; } 2> "$tmp/write.err"; then
		write="ok"
	else
		write=$(tr '\n' ' ' < "$tmp/write.err")
	fi
	echo "$vfs_test: after rm, a 16 MiB write: $write (VmRSS $(daemon_rss_kib) KiB)"
	rm -f g
	settle_rss
	echo "$vfs_test: with the files removed: VmRSS $rss_now KiB (idle $idle_kib KiB)"

	check_peak "mark flood under a ${limit_mb} MiB limit"
	((n_fail > 0)) ||
		fail "all $calls mark calls succeeded ($((n_ok * per)) one-page units $where): no ENOSPC or ENOMEM"
	for e in "${bad[@]}"; do
		[[ $e == *"No space left on device"* || $e == *"Cannot allocate memory"* ]] ||
			fail "a mark call of the flood failed with '$e', want ENOSPC or ENOMEM"
	done
	ok "the flood ended in ENOSPC/ENOMEM after $n_ok calls"
	if [[ $write == ok ]]; then
		ok "after rm of the flooded file, a 16 MiB write succeeds"
	elif [[ -n $sanitizer ]]; then
		# What the sanitizer's allocator keeps counts in the RSS.
		echo "$vfs_test: not checked under $sanitizer: after rm of the flooded file, a 16 MiB write failed: $write"
	else
		fail "after rm of the flooded file, a 16 MiB write failed: $write"
	fi
	check_back_to_idle "after the flood and rm"
	if [[ -n $sanitizer ]]; then
		# The sanitizer's allocator keeps the flood's freed metadata
		# resident (malloc_trim cannot hand it back), so the mount stays
		# over its limit and even a create fails: look, do not write.
		{ kill -0 "$VFS_DAEMON_PID" && stat "$VFS_TEST_DIR" > /dev/null; } ||
			fail "after the flood, the daemon died or the mount does not answer"
		ok "daemon $VFS_DAEMON_PID alive and mount answers (a stat: under $sanitizer)"
	else
		mount_answers
	fi
}

# --- hostile -------------------------------------------------------------------

# with_truncate NAME WHAT MESSAGE FALLOCATE-ARG...: on an empty file NAME,
# fallocate ARG... fails with MESSAGE while a truncate -s 0 started 50 ms
# later completes, both within 5 s.
with_truncate()
{
	local f=$1 what=$2 msg=$3
	shift 3
	: > "$f"
	bg fa fallocate "$@" "$f"
	sleep 0.05
	bg tr truncate -s 0 "$f"
	within 5 tr || fail "$what: truncate -s 0 of the same file still running after 5 s (a hang)"
	[[ $(rc_of tr) == 0 ]] || fail "$what: truncate -s 0 failed: $(err_of tr)"
	ok "$what: a concurrent truncate -s 0 completes"
	within 5 fa || fail "$what: 'fallocate $* $f' still running after 5 s (a hang)"
	[[ $(rc_of fa) != 0 ]] || fail "$what: 'fallocate $* $f' succeeded, want '$msg'"
	[[ $(err_of fa) == *"$msg"* ]] ||
		fail "$what: 'fallocate $* $f' failed with '$(err_of fa)', want '$msg'"
	ok "$what: fails with '$msg'"
	eq "$what: the file is empty (size st_blocks)" "$(stat -c '%s %b' "$f")" "0 0"
	rm "$f"
}

case_hostile()
{
	local e62=$((1 << 62)) max=$(((1 << 63) - 1)) out
	with_truncate a "fallocate -l 1P" "No space left on device" -l 1P
	with_truncate b "fallocate --keep-size -l 1P" "No space left on device" --keep-size -l 1P
	with_truncate c "fallocate -l 2^63-1" "No space left on device" -l "$max"
	: > d
	fail_within 5 "fallocate -o 4E -l 4E (ends at 8E): EFBIG" "File too large" \
		fallocate -o 4E -l 4E d
	run_within 5 "fallocate -o 2^62 -l 4096" fallocate -o "$e62" -l 4096 d
	eq "... holds one page (size st_blocks)" "$(stat -c '%s %b' d)" "$((e62 + 4096)) 8"
	run_within 5 "punch 2^62 + 4096 bytes from 0" \
		fallocate --punch-hole -o 0 -l "$((e62 + 4096))" d
	eq "... frees the page (size st_blocks)" "$(stat -c '%s %b' d)" "$((e62 + 4096)) 0"
	rm d

	run_within 5 "truncate -s 2^63-1" truncate -s "$max" e
	# shellcheck disable=SC2016 # python
	bg seek python3 -c '
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
def seek(off, whence):
    try:
        return str(os.lseek(fd, off, whence))
    except OSError as e:
        return errno.errorcode[e.errno]
e62 = 1 << 62
out = [seek(0, os.SEEK_DATA), seek(0, os.SEEK_HOLE), seek(e62, os.SEEK_DATA)]
os.pwrite(fd, b"x", e62)
out += [seek(0, os.SEEK_DATA), seek(0, os.SEEK_HOLE), seek(e62, os.SEEK_HOLE),
        seek(e62 + 4096, os.SEEK_DATA)]
print(" ".join(out))' e
	within 10 seek || fail "SEEK_DATA/SEEK_HOLE over a file of 2^63-1 bytes: still running after 10 s (a hang)"
	out=$(cat "$tmp/seek.out")
	[[ $(rc_of seek) == 0 ]] || fail "SEEK_DATA/SEEK_HOLE: python3 failed: $(err_of seek)"
	eq "SEEK_DATA 0, SEEK_HOLE 0, SEEK_DATA 2^62 on 2^63-1 empty bytes; then one page at 2^62:" \
		"$out" "ENXIO 0 ENXIO $e62 0 $((e62 + 4096)) ENXIO"
	run_within 5 "mark 2^62:0" setfattr -n user.volatile.mark -v "$e62:0" e
	run_within 5 "mark 2^62:2^61" setfattr -n user.volatile.mark -v "$e62:$((1 << 61))" e
	run_within 5 "mark 0:2^63-4096" setfattr -n user.volatile.mark -v "0:$((max - 4095))" e
	run_within 5 "unmark 0:0" setfattr -n user.volatile.unmark -v 0:0 e
	run_within 5 "mark all" setfattr -n user.volatile.mark -v all e
	run_within 5 "purge all of the 2^63-1 byte file" setfattr -n user.volatile.purge -v all e
	eq "... its purged set" "$(getfattr --only-values -n user.volatile.purged e)" "0:$max"
	run_within 5 "truncate -s 0" truncate -s 0 e
	rm e
	mount_answers
	settle_rss
	check_back_to_idle "after the hostile sizes, everything removed"
}

# --- idle ----------------------------------------------------------------------

case_idle()
{
	local i
	mkdir s
	python3 - s << 'EOF'
import os, sys
top = sys.argv[1]
for d in range(20):
    sub = os.path.join(top, str(d))
    os.mkdir(sub)
    for i in range(1000):
        p = os.path.join(sub, "small-file-%05d" % i)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"%d\n" % i * 10)
        os.close(fd)
        os.setxattr(p, "user.tag", b"a small plain attribute, number %d" % i)
        os.setxattr(p, "user.volatile.mark", b"all" if i % 2 else b"0:4K priority=1")
EOF
	for i in 1 2 3 4; do
		head -c 64M /dev/urandom > "big.$i"
	done
	setfattr -n user.volatile.mark -v all big.1
	setfattr -n user.volatile.mark -v "0:16M 32M:16M age" big.2
	echo "$vfs_test: 20000 small files and 4 x 64 MiB held: files=$(stat_of files)" \
		"volatile_units=$(stat_of volatile_units) VmRSS $(daemon_rss_kib) KiB"
	setfattr -n user.volatile.purge -v all .
	echo "$vfs_test: after purge all: purged_bytes_total=$(stat_of purged_bytes_total)" \
		"VmRSS $(daemon_rss_kib) KiB"
	rm -rf s big.*
	settle_rss
	echo "$vfs_test: everything deleted: files=$(stat_of files) data_bytes=$(stat_of data_bytes)" \
		"VmRSS $rss_now KiB (idle $idle_kib KiB)"
	check_back_to_idle "after deleting 20000 marked files with attributes and 256 MiB"
	mount_answers
}

# --- reply ---------------------------------------------------------------------

case_reply()
{
	local i names=()
	head -c 64M /dev/urandom > f
	for ((i = 0; i < 40; i++)); do
		bg "dd$i" dd if=f of=/dev/null bs=1M iflag=direct
		names+=("dd$i")
	done
	within 120 "${names[@]}" || fail "40 O_DIRECT readers:$running still running after 120 s"
	for n in "${names[@]}"; do
		[[ $(rc_of "$n") == 0 ]] || fail "dd iflag=direct failed: $(err_of "$n")"
	done
	ok "40 parallel dd bs=1M iflag=direct read the 64 MiB file"
	echo "$vfs_test: after the readers: VmRSS $(daemon_rss_kib) KiB"
	rm f
	settle_rss
	echo "$vfs_test: file deleted: data_bytes=$(stat_of data_bytes) VmRSS $rss_now KiB" \
		"(idle $idle_kib KiB)"
	check_back_to_idle "after 40 O_DIRECT 1 MiB readers and rm"
	mount_answers
}

"case_$case_name"
