#!/bin/bash
# pressure-seam.sh DAEMON - the PSI and MemAvailable paths of DESIGN section 10,
# driven through the daemon's test seam instead of by starving the machine.
#
# VOLATILEFS_PROC names a directory the daemon reads in place of /proc
# (src/daemon/pressure.h).  Ours has no self/cgroup (so both cgroup sources are
# skipped), a FIFO at pressure/memory (each line written to it is one PSI
# event) and a meminfo file the test rewrites.  With -o pressure_headroom=100M
# and eight volatile files of 1 MiB (one unit each), checks:
# - pressure_sources is "psi,meminfo";
# - MemAvailable between the headroom and twice it purges nothing by itself;
#   then one PSI event
#   purges one step, an eighth of the volatile bytes and at least one unit:
#   exactly the coldest unit (the file marked first) goes;
# - two more events purge two more units, coldest first;
# - MemAvailable under the headroom purges the rest, in steps, until nothing
#   volatile holds memory; the ordinary file is intact;
# - MemAvailable back above the headroom: new volatile data is left alone,
#   and a PSI event then purges nothing (MemAvailable, which counts the page
#   cache the kernel can drop, is far above the headroom: churn).

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

mib=$((1024 * 1024))

# meminfo AVAILABLE_MIB FILE: a /proc/meminfo as the daemon reads it.
meminfo()
{
	printf 'MemTotal:       %d kB\nMemFree:        %d kB\nMemAvailable:   %d kB\n' \
		$((24 * 1024 * 1024)) $(($1 * 1024)) $(($1 * 1024)) > "$2"
}

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	proc=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-proc.XXXXXX")
	mkdir "$proc/pressure"
	mkfifo "$proc/pressure/memory"
	meminfo 20480 "$proc/meminfo"
	export VOLATILEFS_PROC=$proc
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o pressure_headroom=100M -- "$proc"
fi
proc=$2
trap 'rm -rf "$proc"' EXIT
cd "$VFS_TEST_DIR"
need python3 python3

# wait_stat KEY VALUE: until the stats show KEY=VALUE (10 s at most).
wait_stat()
{
	local i got
	for ((i = 0; i < 200; i++)); do
		got=$(stat_of "$1")
		[[ $got == "$2" ]] && return 0
		sleep 0.05
	done
	fail "$1 is $got after 10 s, want $2"
}

# purged_files: the names of the files v* whose purged set is not empty.
purged_files()
{
	local f out=()
	for f in v*; do
		[[ -n $(getfattr --only-values -n user.volatile.purged "$f") ]] && out+=("$f")
	done
	echo "${out[*]}"
}

eq "pressure_sources with no cgroup in the seam" "$(stat_of pressure_sources)" psi,meminfo

head -c $((4 * mib)) /dev/urandom > ordinary
cp ordinary "$proc/ordinary.ref"
for i in 0 1 2 3 4 5 6 7; do
	head -c $mib /dev/urandom > "v$i"
	setfattr -n user.volatile.mark -v all "v$i"
done
eq "8 MiB volatile in 8 units" "$(stat_of volatile_bytes) $(stat_of volatile_units)" \
	"$((8 * mib)) 8"
eq "no pressure purge before any pressure" "$(stat_of pressure_purges_total)" 0

# MemAvailable 150 MiB: over the headroom (no need of its own), under twice it.
meminfo 150 "$proc/meminfo"
sleep 1
eq "MemAvailable under twice the headroom alone purges nothing" \
	"$(stat_of pressure_purges_total)" 0
echo x > "$proc/pressure/memory"
wait_stat pressure_purges_total 1
eq "one PSI event: one step, one unit, 1 MiB" "$(stat_of pressure_bytes_total)" "$mib"
eq "one PSI event took the coldest unit" "$(purged_files)" v0

printf 'x\nx\n' > "$proc/pressure/memory"
wait_stat pressure_purges_total 3
eq "two more events: the next two coldest" "$(purged_files)" "v0 v1 v2"
eq "pressure purges are counted in purges_total too" "$(stat_of purges_total)" 3

meminfo 50 "$proc/meminfo"
wait_stat volatile_bytes 0
eq "MemAvailable under the headroom purged every unit" "$(stat_of pressure_purges_total)" 8
eq "pressure_bytes_total" "$(stat_of pressure_bytes_total)" $((8 * mib))
cmp ordinary "$proc/ordinary.ref" || fail "the ordinary file changed"
ok "the ordinary file is intact"

meminfo 20480 "$proc/meminfo"
# Nothing volatile is left, so the daemon looks again every 100 ms.
sleep 0.5
head -c $mib /dev/urandom > w
setfattr -n user.volatile.mark -v all w
# The daemon re-reads meminfo at least every 250 ms; give it four times that.
sleep 1
eq "MemAvailable above the headroom: new volatile data stays" \
	"$(stat_of volatile_bytes) $(stat_of pressure_purges_total)" "$mib 8"

# A PSI event now is churn: wait until the daemon has read it from the FIFO,
# then give its round (which reads meminfo again) a second.
echo x > "$proc/pressure/memory"
python3 - "$proc/pressure/memory" <<'EOF2' || fail "the daemon did not read the PSI event"
import array, fcntl, os, sys, termios, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
for _ in range(200):
    n = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, n)
    if n[0] == 0:
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
EOF2
sleep 1
eq "a PSI event with 20 GiB available purges nothing" \
	"$(stat_of volatile_bytes) $(stat_of pressure_purges_total)" "$mib 8"
