# cachelib.sh - what the cache-program tests share (ccache.sh, fontconfig.sh,
# pycache.sh); sourced after lib.sh, inside with-mount.sh (the mount, made
# with -o auto=unlink, in $VFS_TEST_DIR).
#
# Each test points a real program's cache directory at the mount, lowers the
# limit so that its cache data cannot all stay, and requires the program to
# keep working with correct results while purges unlink its files (cache
# misses), and the stats to show purges and unlinked files.
# shellcheck shell=bash

# tighten_limit MIB: set the mount's memory_limit (user.volatile.memory_limit
# on the root) to the daemon's RSS plus a headroom of MIB MiB +
# RSS/8, and set headroom (bytes) for the caller to size its work: twice the
# headroom in cache data forces purges in any build (a sanitizer runtime makes
# the idle RSS several times the plain daemon's 2 MiB).  The RSS is taken
# after a warm-up (four writers of 4 MiB at once, then deleted): the worker
# threads' request buffers the program's writes will touch are resident
# then (with meson's MALLOC_PERTURB_, all of each), and the headroom covers
# the allocator's slack that DESIGN section 3 allows (up to 4 MiB: MIB is 4
# or more), so that
# purging can always bring RSS under memory_low, which follows at 90% of the
# new limit, and writes do not fail with ENOSPC.
tighten_limit()
{
	local rss limit i
	eq "auto=unlink on the mount's root" \
		"$(getfattr --absolute-names --only-values -n user.volatile.auto "$VFS_TEST_DIR")" unlink
	for i in 1 2 3 4; do
		head -c 4M /dev/zero > "$VFS_TEST_DIR/.warm-up.$i" &
	done
	wait
	rm -f "$VFS_TEST_DIR"/.warm-up.*
	sleep 0.2
	rss=$(($(daemon_rss_kib) * 1024))
	headroom=$(($1 * 1024 * 1024 + rss / 8))
	limit=$((rss + headroom))
	setfattr -n user.volatile.memory_limit -v "$limit" "$VFS_TEST_DIR"
	eq "memory_limit lowered to RSS $((rss / 1024)) KiB + $((headroom / 1024)) KiB" \
		"$(stat_of memory_limit)" "$limit"
}

# purges_check: the limit forced purges that unlinked files.
purges_check()
{
	local purges unlinked
	purges=$(stat_of purges_total)
	unlinked=$(stat_of files_unlinked_total)
	((purges > 0)) || fail "purges_total=$purges: the limit forced no purge"
	((unlinked > 0)) || fail "files_unlinked_total=$unlinked: no cache file was unlinked"
	ok "purges_total=$purges files_unlinked_total=$unlinked purged_bytes_total=$(stat_of purged_bytes_total) (daemon VmRSS $(daemon_rss_kib) KiB)"
}
