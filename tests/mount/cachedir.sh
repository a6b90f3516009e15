#!/bin/bash
# cachedir.sh DAEMON - cache directories (DESIGN section 8).
#
# user.volatile.auto on directories: off by default, set and read back,
# inherited by directories created inside, refused on files and for bad
# words; -o auto= sets the root.  Under mark, each new regular file is one
# unbounded unit.  Under unlink, programs that know nothing of volatility
# (cp, a shell loop, tar) fill a directory past the limit: the oldest files
# are gone (names and memory), the newest are intact, the daemon's VmRSS
# stays under the limit, files_unlinked_total counts them, and a file that
# is open when its turn comes is skipped until it is closed.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need setfattr attr
	need tar tar
	status=0
	err=$("$1" -f -o auto=sometimes /nonexistent-mountpoint 2>&1) || status=$?
	[[ $status == 1 && $err == *auto=sometimes* ]] ||
		fail "-o auto=sometimes: status $status, message '$err'"
	ok "-o auto=sometimes is refused with a message"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o "memory_limit=${VFS_TEST_LIMIT_MB:-64}M,auto=mark"
fi

limit_kib=$(( ${VFS_TEST_LIMIT_MB:-64} * 1024 ))
cd "$VFS_TEST_DIR"
auto() { getfattr --only-values -n user.volatile.auto "$1"; }

eq "-o auto=mark sets the root" "$(auto .)" mark
mkdir plain
setfattr -n user.volatile.auto -v off plain
eq "set off" "$(auto plain)" off
mkdir plain/inner
eq "a new directory inherits its parent's setting" "$(auto plain/inner)" off
mkdir marked
eq "inherits mark from the root" "$(auto marked)" mark
echo data > marked/f
eq "under mark a new file is one unbounded unit" \
	"$(getfattr --only-values -n user.volatile.ranges marked/f)" "0:0 volatile priority=3"
echo data > plain/f
eq "under off a new file has no unit" "$(getfattr --only-values -n user.volatile.ranges plain/f)" ""
expect_fail "auto on a file is refused" "Invalid argument" setfattr -n user.volatile.auto -v mark plain/f
expect_fail "a bad word is refused" "Invalid argument" setfattr -n user.volatile.auto -v sometimes plain
eq "a refused value changes nothing" "$(auto plain)" off

mkdir cache
setfattr -n user.volatile.auto -v unlink cache
eq "set unlink" "$(auto cache)" unlink
mkdir cache/sub
eq "unlink is inherited" "$(auto cache/sub)" unlink
[[ $(stat_of files_unlinked_total) == 0 ]] ||
	fail "stats lack files_unlinked_total=0 once a directory has auto=unlink"
ok "stats count files_unlinked_total"

# An open file is skipped, whatever its age.
head -c 1M /dev/urandom > cache/held
exec 3< cache/held

# Fill past the limit three ways, oldest first: each way writes 5/8 of
# the limit in 1 MiB files.
n=$(( ${VFS_TEST_LIMIT_MB:-64} * 5 / 8 ))
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
for i in $(seq -w 1 "$n"); do head -c 1M /dev/urandom > "$src/c$i"; done
for i in $(seq -w 1 "$n"); do cp "$src/c$i" cache/; done
for i in $(seq -w 1 "$n"); do head -c 1M /dev/urandom > "cache/sub/l$i"; done
(cd "$src" && tar cf - c*) > "$src/all.tar"
mkdir cache/t
tar xf "$src/all.tar" -C cache/t
# Whatever the writes left over the limit, the monitor thread purges (every
# 100 ms): wait for it with a deadline only a hang reaches, not one period (a
# fixed 0.3 s, which a loaded machine can outlast).
deadline=$((SECONDS + 30))
until rss=$(daemon_rss_kib) && ((rss <= limit_kib)); do
	((SECONDS < deadline)) || fail "daemon VmRSS ${rss} KiB still over the ${limit_kib} KiB limit 30 s after the writes"
	sleep 0.1
done
ok "daemon VmRSS ${rss} KiB is under the limit"
first=$(printf '%0*d' ${#n} 1)
[[ ! -e cache/c$first ]] || fail "the oldest cp'd file is still there"
ok "the oldest files are gone"
for i in $(seq -w $((n - 4)) "$n"); do
	cmp -s "$src/c$i" "cache/t/c$i" || fail "newest file t/c$i missing or changed"
done
ok "the newest files are present and intact"
[[ -e cache/held ]] || fail "the open file was unlinked"
ok "the open file was skipped"
unlinked=$(stat_of files_unlinked_total)
(( unlinked >= n )) || fail "files_unlinked_total=$unlinked, want >= $n"
ok "files_unlinked_total=$unlinked"
names=$(find cache -type f | wc -l)
(( names < 3 * n )) || fail "$names names left: nothing was unlinked from the listings"
ok "listings lost the purged names ($names left)"

exec 3<&-
# close(2) returns before the kernel's RELEASE reaches the daemon: give it
# a moment (up to 30 s, a hang), purging until the file goes.
deadline=$((SECONDS + 30))
while :; do
	setfattr -n user.volatile.purge -v all .
	if [[ ! -e cache/held ]] || ((SECONDS >= deadline)); then
		break
	fi
	sleep 0.1
done
[[ ! -e cache/held ]] || fail "once closed, a purge still left the file"
ok "once closed, a purge takes the file"
[[ -e marked/f && -e plain/f ]] || fail "files outside auto=unlink lost their names"
ok "files outside auto=unlink keep their names"
