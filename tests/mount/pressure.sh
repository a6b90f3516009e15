#!/bin/bash
# pressure.sh DAEMON - volatile data goes first when the daemon's memory cgroup
# runs short, before anything is killed (DESIGN section 10), on a real cgroup v1
# memory controller.
#
# Each case makes its own memory cgroup under /sys/fs/cgroup/memory with
# memory.limit_in_bytes 1536M, starts the daemon inside it (-o memory_limit=4G,
# far above, so only the cgroup can make it purge), writes from outside the
# cgroup a 64 MiB ordinary file and 1 GiB in 16 files of 64 MiB, then runs
# memhog (a plain program: malloc and touch, nothing else) inside the cgroup,
# asking for 900 MiB.  Together that is 400 MiB over the limit.
#   1. volatile: the 16 files are marked volatile.  memhog must complete,
#      memory.oom_control must count no OOM kill, the daemon must be alive, the
#      ordinary file intact byte for byte, and purged_bytes_total and
#      pressure_bytes_total must show that some but not all of the volatile
#      gigabyte was purged; pressure_sources names cgroup1.
#   2. nothing volatile: the same files, not marked.  It must end the way it
#      would without volatilefs: the OOM killer acts (oom_kill >= 1).
#   3. pressure=off: marked as in 1, but the daemon does not watch the cgroup:
#      the OOM killer acts, as before DESIGN section 10.
# Every case removes its cgroup and unmounts, on failure too (pressurelib.sh).
# Needs root and the v1 memory controller mounted at /sys/fs/cgroup/memory
# (this machine and CI have both); elsewhere it is skipped (exit 77) saying
# why.  The churn and mixed scenarios are pressure-churn.sh.
# memhog's path comes in $MEMHOG.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

vfs_usage_check "$@"
daemon=$(daemon_path "$1")
memhog=${MEMHOG:?MEMHOG must name the memhog program}
# shellcheck source-path=SCRIPTDIR source=pressurelib.sh
. "$(dirname "${BASH_SOURCE[0]}")/pressurelib.sh"
pressure_init

# --- 1. volatile data: it is purged and nobody is killed ---------------------
pressure_setup volatile yes "" 16
eq "volatile: 1 GiB of volatile data held" "$(stat_of volatile_bytes)" $((1024 * mib))
eq "volatile: pressure sources include the v1 cgroup" \
	"$(stat_of pressure_sources | grep -o cgroup1)" cgroup1
status=0
ms=$(in_cgroup "$memhog" 900) || status=$?
eq "volatile: memhog 900 completed next to the daemon (exit status)" "$status" 0
ok "volatile: memhog took $ms ms"
eq "volatile: memory.oom_control counts no OOM kill" "$(oom_kills)" 0
kill -0 "$pid" 2> /dev/null || fail "volatile: the daemon died"
ok "volatile: the daemon is alive"
purged=$(stat_of purged_bytes_total)
pbytes=$(stat_of pressure_bytes_total)
((purged > 0)) || fail "volatile: purged_bytes_total=$purged: nothing was purged"
((purged < 1024 * mib)) || fail "volatile: purged_bytes_total=$purged: all of it went"
ok "volatile: purged_bytes_total=$purged: some, not all, of the volatile GiB"
((pbytes > 0 && pbytes <= purged)) ||
	fail "volatile: pressure_bytes_total=$pbytes against purged_bytes_total=$purged"
ok "volatile: pressure_bytes_total=$pbytes, pressure_purges_total=$(stat_of pressure_purges_total)"
# What was not purged still reads back, and so does the ordinary file.
check_files volatile 16
((kept > 0)) || fail "volatile: every file reports a purge"
ok "volatile: the 64 MiB ordinary file is intact byte for byte"
ok "volatile: $kept unpurged files read back intact"
pressure_teardown

# --- 2. nothing volatile: the OOM killer acts, as without volatilefs ----------
pressure_setup nothing no "" 16
eq "nothing: no volatile data held" "$(stat_of volatile_bytes)" 0
in_cgroup "$memhog" 900 > /dev/null 2>&1 || true
kills=$(oom_kills)
((kills >= 1)) || fail "nothing: oom_kill=$kills: the OOM killer did not act"
ok "nothing: with no volatile data the OOM killer acts (oom_kill=$kills)"
pressure_teardown

# --- 3. pressure=off: today's behaviour, the OOM killer acts ------------------
pressure_setup off yes ",pressure=off" 16
eq "off: pressure_sources" "$(stat_of pressure_sources)" none
in_cgroup "$memhog" 900 > /dev/null 2>&1 || true
kills=$(oom_kills)
((kills >= 1)) || fail "off: oom_kill=$kills: the OOM killer did not act"
ok "off: with pressure=off the OOM killer acts although 1 GiB was volatile (oom_kill=$kills)"
pressure_teardown
