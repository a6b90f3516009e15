#!/bin/bash
# death.sh DAEMON - what is left when the daemon dies.
#
# The daemon is started by hand (with-mount.sh needs a daemon that lives) and
# killed with SIGKILL while a holder process keeps a file of the mount open
# and mapped.  Checks (volatilefs(8), BUGS and PASSTHROUGH):
#   - passthrough (-o passthrough=on,memory_limit=256M): with 64 MiB written
#     and held, the mountpoint is no longer a mount within 10 s of the kill;
#     the name is gone (the path is the directory beneath: ENOENT); the
#     holder's open file still reads and writes its data, through read(2),
#     write(2) and its mapping (the kernel serves the backing file), and
#     every other call on it (fstat, fsync, ftruncate, fgetxattr) fails with
#     ENOTCONN (close too, which still closes it); once the holder ends, the machine's Shmem (/proc/meminfo)
#     falls by at least 48 MiB within 10 s, against its figure just before;
#   - classic (-o passthrough=off): the mount goes within 10 s too; the
#     holder's write(2), fstat and a read(2) of a page the kernel does not
#     cache fail with ENOTCONN, a load of such a page through its mapping
#     raises SIGBUS;
#   - -o auto_unmount=off: the dead mount stays (ENOTCONN) until unmounted
#     by hand, as before; a bad value is refused with exit status 1;
#   - the fusermount3 process that watches the daemon holds no descriptor of
#     the caller's: a daemonizing start with fsname= (libfuse then runs it
#     unquiet) leaves the output file it was given to nobody, and the file
#     stays empty after `umount` (fusermount3 would say "not mounted").
# Needs root (passthrough needs CAP_SYS_ADMIN).  An EXIT trap kills the
# holder and the daemon, unmounts lazily and removes what it made.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
need fusermount3 fuse3
need python3 python3
need getfattr attr
[[ $(id -u) == 0 ]] || { echo "$vfs_test: needs root (CAP_SYS_ADMIN); skipped" >&2; exit 77; }
daemon=$(daemon_path "$1")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-death.XXXXXX")
hmnt=
hpid=
holder_pid=

cleanup()
{
	local status=$?
	trap - ERR EXIT
	set +e
	if [[ -n $holder_pid ]]; then
		kill -KILL "$holder_pid" 2> /dev/null
		wait "$holder_pid" 2> /dev/null
	fi
	end_daemon
	rm -rf "$tmp"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

shmem_kib() { awk '/^Shmem:/ { print $2 }' /proc/meminfo; }

# kill_daemon: SIGKILL, and reap it.
kill_daemon()
{
	kill -KILL "$hpid"
	wait "$hpid" 2> /dev/null || true
	hpid=
}

# gone_within WHAT SECONDS: the mountpoint stops being a mount in time.
gone_within()
{
	local start=$SECONDS
	while is_mounted "$hmnt"; do
		((SECONDS - start < $2)) || fail "$1: $hmnt still mounted $2 s after the daemon was killed"
		sleep 0.05
	done
	ok "$1: the mount went away within $((SECONDS - start + 1)) s of the kill"
}

# The holder: opens FILE read-write, maps it, signals ready ($ctl.ready), waits
# for $ctl.go, runs the checks of MODE (pt or classic) on the open file and
# prints one line per check ("ok - ..." or "FAIL - ..."), then $ctl.done;
# waits for $ctl.end and exits (closing and unmapping).
cat > "$tmp/holder.py" << 'EOF'
import errno, mmap, os, signal, sys, time
path, ctl, mode = sys.argv[1], sys.argv[2], sys.argv[3]
PG = 4096
def pattern(page): return bytes([page % 251 + 1]) * PG
def wait_for(name):
    while not os.path.exists(ctl + name):
        time.sleep(0.02)
fd = os.open(path, os.O_RDWR)
size = os.fstat(fd).st_size
mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
if os.pread(fd, PG, 0) != pattern(0):
    sys.exit("holder: the first page does not read back before the kill")
if mode == "pt":
    _ = mm[:PG]
else:
    # The kernel's copy of the file goes (no page of it is mapped yet):
    # every read needs the daemon now.
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
open(ctl + ".ready", "w").close()
wait_for(".go")
fails = 0
def check(what, fn, want):
    global fails
    try:
        got = fn()
    except OSError as e:
        got = "errno %s" % errno.errorcode.get(e.errno, e.errno)
    if got == want:
        print("ok - %s: %s" % (what, want if isinstance(want, str) else "as written"))
    else:
        fails += 1
        print("FAIL - %s: got %.60r, want %.60r" % (what, got, want))
def load_in_child(off, store):
    # A fault that SIGBUSes must not take the holder (and its open file) along.
    pid = os.fork()
    if pid == 0:
        try:
            if store:
                mm[off] = 0x5a
                os._exit(0 if mm[off] == 0x5a else 3)
            os._exit(0 if mm[off:off + PG] == pattern(off // PG) else 3)
        except BaseException:
            os._exit(4)
    _, st = os.waitpid(pid, 0)
    if os.WIFSIGNALED(st):
        return "signal %d" % os.WTERMSIG(st)
    return "exit %d" % os.WEXITSTATUS(st)
check("the name is gone", lambda: "exists" if os.path.lexists(path) else "errno ENOENT", "errno ENOENT")
if mode == "pt":
    far = (size // PG - 3) * PG
    check("read(2) of the open file", lambda: os.pread(fd, PG, far), pattern(far // PG))
    check("write(2) to the open file", lambda: os.pwrite(fd, b"w" * PG, PG) == PG and os.pread(fd, PG, PG), b"w" * PG)
    check("a load through the mapping", lambda: load_in_child(far - PG, False), "exit 0")
    check("a store through the mapping", lambda: load_in_child(far - 2 * PG, True), "exit 0")
else:
    check("read(2) of a page the kernel does not cache", lambda: os.pread(fd, PG, size - 4 * PG), "errno ENOTCONN")
    check("write(2) to the open file", lambda: os.pwrite(fd, b"w" * PG, PG), "errno ENOTCONN")
    check("a load through the mapping of a page the kernel does not cache", lambda: load_in_child(size - 8 * PG, False), "signal %d" % signal.SIGBUS)
check("fstat of the open file", lambda: os.fstat(fd).st_size, "errno ENOTCONN")
check("fsync of the open file", lambda: os.fsync(fd), "errno ENOTCONN")
check("ftruncate of the open file", lambda: os.ftruncate(fd, PG), "errno ENOTCONN")
check("fgetxattr of the open file", lambda: os.getxattr(fd, "user.volatile.stats"), "errno ENOTCONN")
sys.stdout.flush()
open(ctl + ".done", "w").close()
wait_for(".end")
mm.close()
# A writable passthrough open's close sends FLUSH (the daemon's cue to drop
# the kernel's cached attributes): with no daemon it fails with ENOTCONN, and
# the descriptor is closed all the same; it is the last call here.
try:
    os.close(fd)
except OSError as e:
    if e.errno != errno.ENOTCONN:
        raise
sys.exit(1 if fails else 0)
EOF

# write_pattern FILE MIB: page i holds the byte i % 251 + 1, as the holder expects.
write_pattern()
{
	python3 - "$1" "$2" << 'EOF'
import os, sys
path, mib = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for chunk in range(mib):
    buf = b"".join(bytes([(chunk * 256 + i) % 251 + 1]) * 4096 for i in range(256))
    os.write(fd, buf)
os.close(fd)
EOF
}

# start_holder FILE MODE
start_holder()
{
	local ctl=$tmp/ctl deadline=$((SECONDS + 30))
	rm -f "$ctl".*
	python3 "$tmp/holder.py" "$1" "$ctl" "$2" > "$tmp/holder.out" 2>&1 &
	holder_pid=$!
	until [[ -e $ctl.ready ]]; do
		kill -0 "$holder_pid" 2> /dev/null || fail "the holder ended before it was ready: $(cat "$tmp/holder.out")"
		((SECONDS < deadline)) || fail "the holder is not ready after 30 s"
		sleep 0.05
	done
}

# holder_checks WHAT: let the holder run its checks, print them, fail on any.
holder_checks()
{
	local ctl=$tmp/ctl deadline=$((SECONDS + 30)) line
	touch "$ctl.go"
	until [[ -e $ctl.done ]]; do
		kill -0 "$holder_pid" 2> /dev/null || fail "$1: the holder ended during its checks: $(cat "$tmp/holder.out")"
		((SECONDS < deadline)) || fail "$1: the holder's checks did not end within 30 s"
		sleep 0.05
	done
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$1: holder: ${line#ok - }" ;;
		*) fail "$1: holder: ${line#FAIL - }" ;;
		esac
	done < "$tmp/holder.out"
}

# end_holder: the holder closes and unmaps, and exits.
end_holder()
{
	local st=0
	touch "$tmp/ctl.end"
	wait "$holder_pid" || st=$?
	holder_pid=
	((st == 0)) || fail "the holder exited with status $st: $(cat "$tmp/holder.out")"
}

# 1. The passthrough path: the mount goes, and its memory once the holder ends.
start_daemon "$daemon" "$tmp/log" -o passthrough=on,memory_limit=256M
eq "passthrough: stats" "$(stat_of passthrough "$hmnt")" on
s0=$(shmem_kib)
write_pattern "$hmnt/big" 64
s1=$(shmem_kib)
ok "passthrough: 64 MiB written (Shmem $s0 -> $s1 KiB)"
start_holder "$hmnt/big" pt
kill_daemon
gone_within passthrough 10
holder_checks passthrough
before=$(shmem_kib)
end_holder
start=$SECONDS
while now=$(shmem_kib) && ((before - now < 48 * 1024)); do
	((SECONDS - start < 10)) ||
		fail "passthrough: Shmem fell by $((before - now)) KiB only ($before -> $now KiB) 10 s after the holder ended, want >= 48 MiB"
	sleep 0.1
done
ok "passthrough: within $((SECONDS - start + 1)) s of the holder's end, Shmem fell by $(((before - now) / 1024)) MiB ($before -> $now KiB)"
rmdir "$hmnt"
hmnt=

# 2. The classic path: the mount goes too.
start_daemon "$daemon" "$tmp/log" -o passthrough=off,memory_limit=256M
write_pattern "$hmnt/f" 1
start_holder "$hmnt/f" classic
kill_daemon
gone_within classic 10
holder_checks classic
end_holder
rmdir "$hmnt"
hmnt=

# 3. auto_unmount=off: the dead mount stays, as before.
start_daemon "$daemon" "$tmp/log" -o passthrough=on,auto_unmount=off
echo data > "$hmnt/f"
kill_daemon
sleep 1
is_mounted "$hmnt" || fail "auto_unmount=off: the mount went away when the daemon died"
expect_fail "auto_unmount=off: the dead mount stays (ENOTCONN) after 1 s" \
	"Transport endpoint is not connected" stat "$hmnt/f"
umount -l "$hmnt"
rmdir "$hmnt"
hmnt=
st=0
m=$(mktemp -d)
out=$(timeout 20 "$daemon" -f -o auto_unmount=maybe "$m" 2>&1) || st=$?
is_mounted "$m" && { umount -l "$m"; fail "auto_unmount=maybe mounted"; }
rmdir "$m"
eq "auto_unmount=maybe: exit status" "$st" 1
[[ $out == *"auto_unmount=maybe"* ]] || fail "auto_unmount=maybe: message '$out' does not name it"
ok "auto_unmount=maybe is refused: $out"

# 4. The watchdog holds none of the caller's descriptors.  fsname= leaves
# libfuse without a default subtype, and it then runs fusermount3 with our
# standard output and error.  Daemonizing: the daemon leaves the output file
# once mounted, so whoever still has it open is the watchdog.
hmnt=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-test.XXXXXX")
out=$tmp/out
st=0
timeout 20 "$daemon" -o fsname=vfsdeath,passthrough=off "$hmnt" > "$out" 2>&1 < /dev/null || st=$?
eq "fsname=, daemonizing: exit status" "$st" 0
is_mounted "$hmnt" || fail "fsname=, daemonizing: $hmnt not mounted"
holders=$(find /proc/[0-9]*/fd -lname "$out" 2> /dev/null | cut -d/ -f3 | sort -u) || true
[[ -z $holders ]] ||
	fail "fsname=, daemonizing: the output file is held by: $(for p in $holders; do tr '\0' ' ' < "/proc/$p/cmdline"; echo; done)"
ok "fsname=, daemonizing: nobody holds the caller's output once mounted"
watchdog=$(pgrep -f -- "fusermount3 .*-- $hmnt\$") || fail "fsname=: no fusermount3 watching $hmnt"
umount "$hmnt"
start=$SECONDS
while kill -0 "$watchdog" 2> /dev/null; do
	((SECONDS - start < 10)) || fail "fusermount3 $watchdog still runs 10 s after umount"
	sleep 0.05
done
[[ ! -s $out ]] || fail "fsname=: output after umount: $(cat "$out")"
ok "fsname=: umount ends the watchdog, nothing printed"
rmdir "$hmnt"
hmnt=
