#!/bin/bash
# fontconfig.sh DAEMON - fontconfig's font cache on an auto=unlink volatilefs.
#
# A user points fontconfig's <cachedir> at a volatilefs (~/.cache/fontconfig
# on a mount): fc-cache, fc-list and fc-match must go on working when purges
# remove cache files, rescanning the fonts where a cache is gone.
#
# The fonts: the six of fonts-dejavu-core, linked into D directories of a
# temporary directory off the mount (fontconfig writes one cache file of
# about 16 KiB per directory; D is sized to 1.5 times the headroom
# tighten_limit leaves, at least 256: every process that finds a cache file
# gone scans those fonts again and writes it back).  A configuration file
# of our own (FONTCONFIG_FILE: only these fonts, so the output does not
# depend on the machine) names that directory and a <cachedir>.  The
# reference is fc-list (file, family, style, weight, slant and the whole
# charset of every font, sorted) and fc-match for two patterns, with the
# cache in a directory off the mount.  Then, with the cache directory on
# the mount (-o auto=unlink, the limit lowered to the RSS plus a little):
#   fc-cache (exit 0), fc-list and fc-match, fc-cache -f (rebuild
#   everything, exit 0), fc-list and fc-match again: each listing equal to
#   the reference; user.volatile.stats shows purges_total > 0 and
#   files_unlinked_total > 0; the mount still answers.
# Needs fontconfig (fc-cache, fc-list, fc-match) and fonts-dejavu-core.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=cachelib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cachelib.sh"

font_dir=/usr/share/fonts/truetype/dejavu
fonts=(DejaVuSans.ttf DejaVuSans-Bold.ttf DejaVuSansMono.ttf DejaVuSansMono-Bold.ttf
	DejaVuSerif.ttf DejaVuSerif-Bold.ttf)

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need fc-cache fontconfig
	need fc-list fontconfig
	need fc-match fontconfig
	need setfattr attr
	for f in "${fonts[@]}"; do
		[[ -f $font_dir/$f ]] || fail "$font_dir/$f missing (Debian package fonts-dejavu-core)"
	done
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o auto=unlink,memory_limit=1G
fi

tighten_limit 4
ndirs=$((3 * headroom / 2 / 16384))
((ndirs >= 256)) || ndirs=256

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-fontconfig.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# One process for the lot: a fork per link is slow on a loaded machine.
python3 - "$tmp/fonts" "$ndirs" "$font_dir" "${fonts[@]}" << 'PY'
import os, sys
top, n, src, fonts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
for i in range(n):
    d = os.path.join(top, "d%d" % i)
    os.makedirs(d)
    for f in fonts:
        os.symlink(os.path.join(src, f), os.path.join(d, f))
PY

# conf CACHEDIR: a fontconfig configuration with our fonts only.
conf()
{
	cat << EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
  <dir>$tmp/fonts</dir>
  <cachedir>$1</cachedir>
</fontconfig>
EOF
}

# listing: what the fonts look like to fontconfig, in a stable order.
listing()
{
	fc-list --format '%{file}\t%{family}\t%{style}\t%{weight}\t%{slant}\t%{charset}\n' | LC_ALL=C sort
	for p in 'DejaVu Sans:bold' 'monospace:weight=200'; do
		fc-match --format '%{file} %{family} %{style}\n' "$p"
	done
}

conf "$tmp/refcache" > "$tmp/ref.conf"
export FONTCONFIG_FILE=$tmp/ref.conf
fc-cache || fail "fc-cache with the cache off the mount failed"
listing > "$tmp/ref.txt"
n=$(grep -c $'\t' "$tmp/ref.txt") || true
eq "reference: fonts listed" "$n" "$((ndirs * ${#fonts[@]}))"
ok "reference ($SECONDS s): $ndirs directories, $(du -sk "$tmp/refcache" | cut -f1) KiB of cache off the mount"

cache=$VFS_TEST_DIR/fontconfig
conf "$cache" > "$tmp/mnt.conf"
export FONTCONFIG_FILE=$tmp/mnt.conf

# compare WHAT: the listing now is the reference.
compare()
{
	listing > "$tmp/got.txt" || fail "$1: fc-list or fc-match failed"
	if ! cmp -s "$tmp/got.txt" "$tmp/ref.txt"; then
		diff "$tmp/ref.txt" "$tmp/got.txt" | head -n 10 >&2
		fail "$1: the fonts differ from the reference (diff above)"
	fi
	ok "$1: fc-list and fc-match as the reference ($(wc -l < "$tmp/got.txt") lines)"
}

fc-cache || fail "fc-cache with the cache on volatilefs exited with status $?"
ok "fc-cache ($SECONDS s): exit 0 ($(find "$cache" -type f | wc -l) cache files left)"
compare "after fc-cache"
fc-cache -f || fail "fc-cache -f with the cache on volatilefs exited with status $?"
ok "fc-cache -f ($SECONDS s): exit 0 ($(find "$cache" -type f | wc -l) cache files left)"
compare "after fc-cache -f"
purges_check
mount_answers
