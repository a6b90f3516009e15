#!/bin/bash
# volatile.sh DAEMON - volatile ranges through setfattr/getfattr (DESIGN 4, 5).
#
# Mounted with -o memory_limit=512M,allow_other,mode=0777 (mode 0777 rather
# than tmpfs's 1777: on a sticky directory the kernel itself refuses user.*
# attributes to non-owners, which would hide the daemon's own EPERM check).
# With the real setfattr/getfattr (package attr), one line per check:
# - names: no user.volatile.* listed by getfattr -d -m - (file, directory,
#   root; before and after marking and purging); get of mark/unmark/purge is
#   "No such attribute"; set of ranges/stats is "Invalid argument"; unknown
#   user.volatile.foo: set "Invalid argument", get "No such attribute";
#   mark/unmark on a directory: "Is a directory"; cp --preserve=xattr copies
#   no volatility;
# - grammar: the example of volatilefs(8) EXAMPLES, all, separators (spaces, commas, tabs,
#   newlines), trailing NUL, hex and K/M/G suffixes in either case, length
#   rounding, unbounded, age, priority=N wherever it stands; malformed values
#   (mark and unmark) fail with "Invalid argument" and change neither the
#   units nor the purged set, even when their first ranges are good;
# - the ranges value byte for byte ("OFFSET:LENGTH STATE priority=N[ age]",
#   sorted, final newline, empty when no unit); absorption (union, new
#   priority and flags), touching units kept apart, unmark splitting;
# - the purged set: coalesced, within the file's size (a unit past EOF adds
#   nothing, an unbounded unit adds up to the size); purged bytes read back as
#   zeros even when the page cache held them, every other byte unchanged (cmp
#   against a reference copy); writing removes exactly the written bytes;
#   truncation cuts purged bytes and bounded units (to the new size rounded up
#   to a page; a unit wholly beyond goes, an unbounded one stays);
#   PUNCH_HOLE removes the punched bytes; removexattr forgets the set;
# - user.volatile.stats: exactly its key=value keys, and how they move
#   (units on mark/absorb/split, files, purges_total, purged_bytes_total,
#   volatile_bytes and data_bytes on a purge, memory_low = 90% of the limit);
# - statfs: f_blocks = limit, f_bsize 4096, f_bfree/f_bavail = limit minus
#   NON-volatile data (marking 10 MiB raises free blocks by 10 MiB);
# - user.volatile.memory_limit: get, set (stats, memory_low and stat -f
#   follow), lowering it under the volatile data purges at once;
# - uid 65534 (setpriv): EPERM for memory_limit and root purge, allowed to
#   read stats and to purge a file it can write, "Permission denied" on one it
#   cannot write;
# - purge on the root: all; SIZE frees whole units in purge order and stops
#   as soon as SIZE bytes are freed; order is priority, then age, then least
#   recently used, where a unit is made most recently used by marking it
#   again, by a write, and by an O_DIRECT read (reads served from the page
#   cache never reach the daemon; O_DIRECT ones always do);
# - a ranges value over 64 KiB: "Argument list too long" (E2BIG);
# - last, as the one reading of DESIGN 5 a reader might contest: purge all on
#   the root purges a unit that holds no memory (sparse), as purge on the file
#   and ashmem's PURGE_ALL_CACHES do.
#
# $VFS_TEST_LIMIT_MB (default 32) is the limit the memory_limit checks lower
# to; sanitizer builds, whose baseline RSS is larger, set it higher.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=vollib.sh
. "$(dirname "${BASH_SOURCE[0]}")/vollib.sh"

limit_mb=${VFS_TEST_LIMIT_MB:-32}
[[ $limit_mb =~ ^[1-9][0-9]*$ ]] || fail "VFS_TEST_LIMIT_MB=$limit_mb is not a number of MiB"
mount_mb=$((limit_mb * 4 > 512 ? limit_mb * 4 : 512))

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need setfattr attr
	need setpriv util-linux
	need fallocate util-linux
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" \
		-o "memory_limit=${mount_mb}M,allow_other,mode=0777"
fi

cd "$VFS_TEST_DIR"
root=$VFS_TEST_DIR
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
MiB=1048576

# ---------------------------------------------------------------- helpers

# snap PATH: ranges and purged set of PATH, for "nothing changed" checks.
snap()
{
	local r p
	r=$(raw user.volatile.ranges "$1") && p=$(raw user.volatile.purged "$1") &&
		printf '%s|%s' "$r" "$p"
}

# listed PATH: user.volatile.* names getfattr -d -m - lists on PATH.
listed()
{
	local dump
	dump=$(getfattr --absolute-names -d -m - "$1") || return 1
	grep '^user\.volatile\.' <<< "$dump" | tr '\n' ' ' || true
}

# names PATH: every attribute name getfattr -d -m - lists on PATH.
names()
{
	local dump
	dump=$(getfattr --absolute-names -d -m - "$1") || return 1
	sed -n 's/^\([^#][^=]*\)\(=.*\)\{0,1\}$/\1/p' <<< "$dump" | sort | tr '\n' ' '
}

# zeros WHAT PATH OFF LEN: PATH reads as zeros for LEN bytes at OFF.
zeros()
{
	local diff
	diff=$(cmp -n "$4" -i "$3:0" "$2" /dev/zero 2>&1) || true
	[[ -z $diff ]] || fail "$1: $2 at $3 (+$4) is not zeros: $diff"
	ok "$1"
}

as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }

# ------------------------------------------------------------------ names

mkdir d
mkfile f 65536
setfattr -n user.keep -v 1 f
for p in "$root" d f; do
	eq "$p: getfattr -d -m - lists no user.volatile.*" "$(listed "$p")" ""
done
eq "f: getfattr -d -m - lists exactly user.keep" "$(names f)" "user.keep "
mark "0:16K age" f
purge all f
eq "marked, purged file: getfattr -d -m - lists exactly user.keep" "$(names f)" "user.keep "
eq "root after a mark and a purge: no user.volatile.* listed" "$(listed "$root")" ""
cp --preserve=xattr f f.copy
rg "cp --preserve=xattr copies no units" f.copy
pg "cp --preserve=xattr copies no purged set" f.copy
eq "cp --preserve=xattr copies the plain user.keep" \
	"$(getfattr --absolute-names --only-values -n user.keep f.copy)" 1

for n in mark unmark purge; do
	expect_fail "file: get user.volatile.$n gives No such attribute" "No such attribute" \
		getfattr --absolute-names -n "user.volatile.$n" f
done
expect_fail "root: get user.volatile.purge gives No such attribute" "No such attribute" \
	getfattr --absolute-names -n user.volatile.purge "$root"
for n in ranges purged; do
	expect_fail "file: set user.volatile.$n gives Invalid argument" "Invalid argument" \
		setfattr -n "user.volatile.$n" -v 0:4096 f
done
expect_fail "root: set user.volatile.stats gives Invalid argument" "Invalid argument" \
	setfattr -n user.volatile.stats -v x=1 "$root"
for p in f d "$root"; do
	expect_fail "$p: set unknown user.volatile.foo gives Invalid argument" "Invalid argument" \
		setfattr -n user.volatile.foo -v all "$p"
	expect_fail "$p: get unknown user.volatile.foo gives No such attribute" \
		"No such attribute" getfattr --absolute-names -n user.volatile.foo "$p"
done
# Root-only and file-only names elsewhere are "any other name" (DESIGN 5).
expect_fail "file: get user.volatile.stats gives No such attribute" "No such attribute" \
	getfattr --absolute-names -n user.volatile.stats f
expect_fail "file: set user.volatile.memory_limit gives Invalid argument" "Invalid argument" \
	setfattr -n user.volatile.memory_limit -v 64M f
expect_fail "directory: get user.volatile.ranges gives No such attribute" "No such attribute" \
	getfattr --absolute-names -n user.volatile.ranges d
for p in d "$root"; do
	for n in mark unmark; do
		expect_fail "$p: set user.volatile.$n gives Is a directory" "Is a directory" \
			setfattr -n "user.volatile.$n" -v all "$p"
	done
done
eq "directory: still no user.volatile.* listed" "$(listed d)" ""

# ---------------------------------------------------------------- grammar

mkfile g $((4 * MiB))
rg "no unit: ranges is the empty value" g
pg "never purged: purged is the empty value" g

# gcase WHAT VALUE LINE...: on a g without units, mark VALUE gives LINE...
gcase()
{
	unmark all g
	mark "$2" g
	rg "$1" g "${@:3}"
}

gcase "man page example '0:64K 1M:1M priority=1'" "0:64K 1M:1M priority=1" \
	"0:65536 volatile priority=1" "1048576:1048576 volatile priority=1"
unmark 0:64K g
rg "man page example: unmark 0:64K leaves the 1M unit" g "1048576:1048576 volatile priority=1"
pg "man page example: nothing purged" g
gcase "all = 0:0, default priority 3" all "0:0 volatile priority=3"
gcase "separators: commas, tabs, newlines, runs of spaces" \
	$'0:4K,8K:4K\t16K:4K\n24K:4K  32K:4K, 40K:4K\n' \
	"0:4096 volatile priority=3" "8192:4096 volatile priority=3" \
	"16384:4096 volatile priority=3" "24576:4096 volatile priority=3" \
	"32768:4096 volatile priority=3" "40960:4096 volatile priority=3"
gcase "separators lead and trail" $' \t0:4K,\n' "0:4096 volatile priority=3"
gcase "hex offsets and lengths" "0x2000:0x1000 0x10000:0X2000" \
	"8192:4096 volatile priority=3" "65536:8192 volatile priority=3"
gcase "suffixes K M G in either case" "4k:1K 1M:8k 2m:1m 1G:4K 2g:0x1000" \
	"4096:4096 volatile priority=3" "1048576:8192 volatile priority=3" \
	"2097152:1048576 volatile priority=3" "1073741824:4096 volatile priority=3" \
	"2147483648:4096 volatile priority=3"
gcase "length rounded up to a page: 0:1" 0:1 "0:4096 volatile priority=3"
gcase "length rounded up to a page: 4K:4097" 4K:4097 "4096:8192 volatile priority=3"
gcase "unbounded: 8K:0 shown as 8192:0" 8K:0 "8192:0 volatile priority=3"
gcase "'all' with a range inside it: one unbounded unit" "all 4K:4K" "0:0 volatile priority=3"
gcase "age flag: line ends in ' age'" "0:4K age" "0:4096 volatile priority=3 age"
gcase "priority=5 first applies to every range" "priority=5 0:4K 8K:4K" \
	"0:4096 volatile priority=5" "8192:4096 volatile priority=5"
gcase "priority=0 between ranges applies to both" "0:4K priority=0 8K:4K" \
	"0:4096 volatile priority=0" "8192:4096 volatile priority=0"
gcase "priority=7 and age last apply to every range" "0:4K 8K:4K age priority=7" \
	"0:4096 volatile priority=7 age" "8192:4096 volatile priority=7 age"
unmark all g
hex=$(printf '0:4K' | od -An -v -tx1 | tr -d ' \n')
setfattr -n user.volatile.mark -v "0x${hex}00" g || fail "mark '0:4K\\0' (trailing NUL) refused"
rg "a trailing NUL is allowed" g "0:4096 volatile priority=3"

# Malformed values, on h with units and a purged set: EINVAL, nothing changes.
mkfile h 65536
mark "0:8K 16K:8K priority=2" h
mark "32K:0 age" h
purge all h
unmark 4K:4K h
before=$(snap h)
rg "h set up for the malformed values" h "0:4096 purged priority=2" \
	"16384:8192 purged priority=2" "32768:0 purged priority=3 age"
pg "h has a purged set" h "0:8192" "16384:8192" "32768:32768"

bad()
{
	expect_fail "$1 '$(vis "$3")' gives Invalid argument" "Invalid argument" \
		sx "user.volatile.$1" "$3" h
	unchanged "$2"
}
unchanged()
{
	local after
	after=$(snap h)
	[[ $after == "$before" ]] ||
		fail "$1 changed h: '$(vis "$before")' became '$(vis "$after")'"
	ok "... and changes nothing ($1)"
}
for v in 4095:4K 1:4K 0x800:4K "0:4K priority=8" "0:4K priority=" "0:4K priority=-1" \
	"0:4K priority=12" "0:4K bogus" "0:4K AGE" "" " " "1:2:3" "0:4K:" ":4K" "0:" \
	"4K" "0 : 4K" "0:4X" "0:1KK" "0x:4K" "-4096:4K" "0:-1" "0:99999999999999999999" \
	"99999999999999999999:4K" "0:4K 8K:4K 12K:x" "40K:4K 8K:4K 5:4K" \
	"priority=1" "age" "al" "0:4K;8K:4K" "0:4K/8K:4K"; do
	bad mark "malformed mark value" "$v"
done
for v in "0:4K age" "0:4K priority=1" "priority=3 all" "4095:4K" "" "0:4K bogus" \
	"0:4K 1:2:3" "8K:4K 12K:1Y"; do
	bad unmark "malformed unmark value" "$v"
done
hex=$(printf '0:4K' | od -An -v -tx1 | tr -d ' \n')
expect_fail "mark with a NUL inside ('0:4K\\0 0:4K') gives Invalid argument" \
	"Invalid argument" setfattr -n user.volatile.mark -v "0x${hex}00${hex}" h
unchanged "NUL inside"
expect_fail "mark with a control byte ('0:4K\\x01') gives Invalid argument" \
	"Invalid argument" setfattr -n user.volatile.mark -v "0x${hex}01" h
unchanged "control byte"
big=$(printf '%070000d' 0)
expect_fail "a mark value over 64 KiB gives Argument list too long" "Argument list too long" \
	setfattr -n user.volatile.mark -v "0:4K $big" h
unchanged "value over 64 KiB"

# ------------------------------------------ ranges format, absorption, unmark

mkfile r $MiB
mark 64K:4K r
mark 0:4K r
mark "16K:8K priority=6" r
rg "units listed sorted by offset, one line each" r "0:4096 volatile priority=3" \
	"16384:8192 volatile priority=6" "65536:4096 volatile priority=3"
mark "4K:4K priority=1" r
rg "touching units stay separate" r "0:4096 volatile priority=3" \
	"4096:4096 volatile priority=1" "16384:8192 volatile priority=6" \
	"65536:4096 volatile priority=3"
unmark all r
mark "0:8K priority=1" r
mark "16K:8K priority=2 age" r
mark "4K:16K priority=5" r
rg "absorption: union of the overlapped units, the new priority, no age" r \
	"0:24576 volatile priority=5"
mark "20K:16K age priority=0" r
rg "absorption: the new call's age flag and priority" r "0:36864 volatile priority=0 age"
unmark all r
mark "0:8K 4K:8K" r
rg "one call: a later range absorbs an earlier one it overlaps" r "0:12288 volatile priority=3"
unmark all r
mark "0:4K 4K:4K" r
rg "one call: touching ranges stay two units" r "0:4096 volatile priority=3" \
	"4096:4096 volatile priority=3"
unmark all r
mark "8K:0 priority=4" r
mark 0:12K r
rg "absorbing an unbounded unit gives an unbounded unit" r "0:0 volatile priority=3"
unmark all r
rg "unmark all: no unit left" r
mark "0:64K priority=2 age" r
unmark 16K:8K r
rg "unmark in the middle splits the unit, keeping priority and age" r \
	"0:16384 volatile priority=2 age" "24576:40960 volatile priority=2 age"
unmark 0:4K r
unmark 60K:8K r
rg "unmark at either end shortens the units" r "4096:12288 volatile priority=2 age" \
	"24576:36864 volatile priority=2 age"
unmark 128K:64K r
rg "unmark of non-volatile pages changes nothing" r "4096:12288 volatile priority=2 age" \
	"24576:36864 volatile priority=2 age"
unmark "0:8K 28K:4K" r
rg "unmark with two ranges" r "8192:8192 volatile priority=2 age" \
	"24576:4096 volatile priority=2 age" "32768:28672 volatile priority=2 age"
unmark all r
mark 0:0 r
unmark 8K:4K r
rg "unmark inside an unbounded unit: a bounded unit and an unbounded one" r \
	"0:8192 volatile priority=3" "12288:0 volatile priority=3"
unmark 1M:0 r
rg "unmark unbounded from 1M (the size) bounds the unit" r \
	"0:8192 volatile priority=3" "12288:1036288 volatile priority=3"
unmark all r
mark 0:8K r
purge all r
mark 8K:8K r
rg "STATE: purged unit 'purged', new touching one 'volatile'" r \
	"0:8192 purged priority=3" "8192:8192 volatile priority=3"
mark 4K:16K r
rg "STATE: a unit with any purged byte is 'purged'" r "0:20480 purged priority=3"
put r 0 8192
rg "STATE: 'volatile' once every purged byte was written" r "0:20480 volatile priority=3"
pg "... and the purged set is empty" r

# ------------------------------------------------------------- purged set

mkfile p $((256 * 1024))
cat p > /dev/null # into the page cache: a purge must not leave it readable there
mark "16K:16K 64K:8K" p
mark 0:8K p
mark 8K:8K p
purge all p
rg "purged file: every unit stays, now 'purged'" p "0:8192 purged priority=3" \
	"8192:8192 purged priority=3" "16384:16384 purged priority=3" \
	"65536:8192 purged priority=3"
pg "purged set coalesced: three touching units are one extent" p "0:32768" "65536:8192"
zero_ref p 0 32768
zero_ref p 65536 8192
zeros "purged bytes read as zeros (0..32K)" p 0 32768
zeros "purged bytes read as zeros (64K..72K)" p 65536 8192
same p "bytes outside the units unchanged (whole file compared)"
put p 20000 100
pg "writing 100 bytes at 20000 removes exactly them" p "0:20000" "20100:12668" "65536:8192"
same p "... and they read back"
put p 32668 200
pg "a write across the end of an extent removes its part" p "0:20000" "20100:12568" \
	"65536:8192"
put p 65536 8192
pg "writing a whole extent removes it" p "0:20000" "20100:12568"
rg "... its unit is 'volatile' again, the others still 'purged'" p \
	"0:8192 purged priority=3" "8192:8192 purged priority=3" \
	"16384:16384 purged priority=3" "65536:8192 volatile priority=3"
fallocate -p -o 1000 -l 2000 p
pg "PUNCH_HOLE removes the punched bytes" p "0:1000" "3000:17000" "20100:12568"
fallocate -p -o 40000 -l 1000 p
zero_ref p 40000 1000
pg "PUNCH_HOLE outside the set changes nothing" p "0:1000" "3000:17000" "20100:12568"
same p "after writes and holes every byte is right"
setfattr -x user.volatile.purged p
pg "removexattr user.volatile.purged forgets the purged set" p
rg "... and every unit reads 'volatile'" p "0:8192 volatile priority=3" \
	"8192:8192 volatile priority=3" "16384:16384 volatile priority=3" \
	"65536:8192 volatile priority=3"
same p "... and the data is unchanged (the lost bytes still zeros)"

mkfile e 10000
mark "8K:8K 1M:4K" e
mkfile u 10000
mark 4K:0 u
purge all e
purge all u
pg "unit across EOF: purged only up to the size; a unit past EOF adds nothing" e \
	"8192:1808"
rg "... the unit past EOF stays 'volatile'" e "8192:8192 purged priority=3" \
	"1048576:4096 volatile priority=3"
pg "unbounded unit: purged up to the size" u "4096:5904"
zero_ref u 4096 5904
same u "unbounded unit: purged bytes zeros, the first page kept"
truncate -s 20000 u
truncate -s 20000 "$scratch/u"
pg "growing the file adds nothing to the purged set" u "4096:5904"
rg "... and the unbounded unit is unchanged" u "4096:0 purged priority=3"
same u "... and the new bytes read as zeros"

mkfile t $((128 * 1024))
mark "0:8K 16K:16K 48K:16K 96K:0" t
purge all t
pg "t purged" t "0:8192" "16384:16384" "49152:16384" "98304:32768"
truncate -s 20000 t
eq "t truncated to 20000" "$(stat -c %s t)" 20000
pg "truncate removes the purged bytes at and beyond the new size" t "0:8192" "16384:3616"
rg "truncate: bounded units end at the size rounded up to a page, units beyond go, unbounded stays" \
	t "0:8192 purged priority=3" "16384:4096 purged priority=3" "98304:0 volatile priority=3"
truncate -s 128K t
truncate -s 20000 "$scratch/t"
zero_ref t 0 8192
zero_ref t 16384 3616
truncate -s 128K "$scratch/t"
pg "growing again adds nothing to the purged set" t "0:8192" "16384:3616"
same t "after truncate and growth every byte is right"
truncate -s 0 t
pg "truncate to 0 empties the purged set" t
rg "truncate to 0: bounded units go, the unbounded one stays" t "98304:0 volatile priority=3"

put u 30000 100
pg "writing past EOF beside an unbounded unit adds nothing to the purged set" u "4096:5904"
purge all u
pg "the unbounded unit grew with the file: purged up to the new size" u "4096:26004"
mkfile z 0
mark all z
put z 0 10000
purge all z
pg "'all' on an empty file covers what is written later" z "0:10000"

want=$(raw user.volatile.ranges p)
want=${want%.}
ln p p.link
rg "a hard link shows the same units" p.link "${want%$'\n'}"
mv p.link p.moved
rg "rename keeps the units" p.moved "${want%$'\n'}"
rm p.moved
# DESIGN 5 is silent: like any absent attribute.
expect_fail "removexattr user.volatile.ranges gives No such attribute" "No such attribute" \
	setfattr -x user.volatile.ranges p

# ------------------------------------------------------------------ stats

keys=$(getfattr --absolute-names --only-values -n user.volatile.stats "$root")
eq "stats: exactly the fifteen keys" "$(cut -d= -f1 <<< "$keys" | sort | tr '\n' ' ')" \
	"data_bytes enospc_total files memory_limit memory_low passthrough pressure_bytes_total pressure_purges_total pressure_sources purged_bytes_total purges_total rss shared_bytes volatile_bytes volatile_units "
eq "stats: every line but pressure_sources and passthrough is key=decimal" \
	"$(grep -vE '^(pressure_sources|passthrough)=' <<< "$keys" | grep -cvE '^[a-z_]+=[0-9]+$' || true)" 0
eq "stats: passthrough is on or off" "$(grep -cE '^passthrough=(on|off)$' <<< "$keys")" 1
eq "stats: pressure_sources is a list of known sources" \
	"$(grep -cE '^pressure_sources=(none|(cgroup2|cgroup1|psi|meminfo)(,(cgroup1|psi|meminfo))*)$' <<< "$keys")" 1
limit=$(stat_num memory_limit)
eq "stats: memory_limit is the mount option" "$limit" $((mount_mb * MiB))
# ninety WHAT LOW LIMIT: LOW is 90% of LIMIT, to the byte (rounded either way).
ninety()
{
	local d=$((10 * $2 - 9 * $3))
	((d > -10 && d < 10)) || fail "$1: memory_low=$2 is not 90% of $3"
	ok "$1: $2"
}
ninety "stats: memory_low is 90% of memory_limit" "$(stat_num memory_low)" "$limit"
rss=$(stat_num rss)
vm=$(($(daemon_rss_kib) * 1024))
((rss > 0 && rss < 2 * vm + 4 * MiB && vm < 2 * rss + 4 * MiB)) ||
	fail "stats: rss=$rss is not the daemon's RSS (VmRSS $vm bytes)"
ok "stats: rss=$rss is about the daemon's VmRSS ($vm)"
eq "stats: enospc_total 0" "$(stat_num enospc_total)" 0

units0=$(stat_num volatile_units)
files0=$(stat_num files)
mkfile s1 $MiB
mkfile s2 $MiB
eq "stats: files counts two new files" "$(stat_num files)" $((files0 + 2))
mark "0:4K 8K:4K 16K:4K" s1
eq "stats: volatile_units +3 after marking three ranges" "$(stat_num volatile_units)" $((units0 + 3))
mark 0:12K s1
eq "stats: volatile_units -1 after one unit absorbed two" "$(stat_num volatile_units)" $((units0 + 2))
unmark 4K:4K s1
eq "stats: volatile_units +1 after an unmark split one" "$(stat_num volatile_units)" $((units0 + 3))
unmark all s1
eq "stats: volatile_units back after unmark all" "$(stat_num volatile_units)" "$units0"
vb0=$(stat_num volatile_bytes)
mark all s2
vb1=$(stat_num volatile_bytes)
eq "stats: volatile_bytes +1 MiB after marking a 1 MiB file" "$((vb1 - vb0))" $MiB
pt0=$(stat_num purges_total)
pb0=$(stat_num purged_bytes_total)
db0=$(stat_num data_bytes)
purge all s2
eq "stats: purges_total +1 after purging one unit" "$(stat_num purges_total)" $((pt0 + 1))
eq "stats: purged_bytes_total +1 MiB" "$(stat_num purged_bytes_total)" $((pb0 + MiB))
eq "stats: volatile_bytes falls by 1 MiB" "$(stat_num volatile_bytes)" "$vb0"
eq "stats: data_bytes falls by 1 MiB" "$(stat_num data_bytes)" $((db0 - MiB))
rm -f s1 s2
for ((i = 0; i < 100; i++)); do
	[[ $(stat_num files) == "$files0" ]] && break
	sleep 0.1
done
eq "stats: files falls back after deleting them" "$(stat_num files)" "$files0"
eq "stats: ... and their units are gone" "$(stat_num volatile_units)" "$units0"

# ----------------------------------------------------------------- statfs

eq "statfs: f_bsize 4096" "$(stat -f -c %S .)" 4096
eq "statfs: f_blocks is the limit in 4 KiB blocks" "$(stat -f -c %b .)" $((limit / 4096))
free0=$(stat -f -c %f .)
mkfile n10 $((10 * MiB))
free1=$(stat -f -c %f .)
eq "statfs: writing 10 MiB takes 2560 free blocks" "$((free0 - free1))" 2560
mark all n10
free2=$(stat -f -c %f .)
eq "statfs: marking the 10 MiB volatile gives the 2560 blocks back" "$((free2 - free1))" 2560
eq "statfs: f_bavail = f_bfree" "$(stat -f -c %a .)" "$free2"
purge all n10
eq "statfs: purging volatile data changes no free block" "$(stat -f -c %f .)" "$free2"
rm -f n10

# ----------------------------------------------------------- memory_limit

eq "memory_limit: get gives the limit in bytes" \
	"$(getfattr --absolute-names --only-values -n user.volatile.memory_limit .)" "$limit"
new=$((limit_mb * MiB))
sx user.volatile.memory_limit "${limit_mb}M" . || fail "memory_limit=${limit_mb}M refused"
eq "memory_limit: set ${limit_mb}M, get follows" \
	"$(getfattr --absolute-names --only-values -n user.volatile.memory_limit .)" "$new"
eq "memory_limit: stats memory_limit follows" "$(stat_num memory_limit)" "$new"
ninety "memory_limit: memory_low follows at 90%" "$(stat_num memory_low)" "$new"
eq "memory_limit: stat -f total blocks follow" "$(stat -f -c %b .)" $((new / 4096))
sx user.volatile.memory_limit "$(printf '0x%x' "$limit")" . ||
	fail "memory_limit back to the mount's (hex) refused"
eq "memory_limit: set in hex" "$(stat_num memory_limit)" "$limit"
for v in bogus 12Q "" "1 M"; do
	expect_fail "memory_limit '$v' gives Invalid argument" "Invalid argument" \
		sx user.volatile.memory_limit "$v" .
done
eq "... and the limit is unchanged" "$(stat_num memory_limit)" "$limit"

vsize=$(((limit_mb + 16) * MiB))
head -c "$vsize" /dev/urandom > vbig
mark all vbig
vb=$(stat_num volatile_bytes)
((vb >= vsize)) || fail "volatile_bytes=$vb with $vsize bytes marked"
sx user.volatile.memory_limit "${limit_mb}m" . || fail "memory_limit=${limit_mb}m refused"
eq "lowering the limit under the volatile data purges at once: volatile_bytes 0" \
	"$(stat_num volatile_bytes)" 0
pg "... vbig was purged whole" vbig "0:$vsize"
zeros "... and reads as zeros, though its pages were in the page cache" vbig 0 "$vsize"
rss=$(stat_num rss)
((rss <= new)) || fail "stats rss=$rss after lowering the limit to $new"
ok "... stats rss $rss is under the new limit $new"
vm=$(($(daemon_rss_kib) * 1024))
((vm <= new)) || fail "VmRSS $vm after lowering the limit to $new"
ok "... VmRSS $vm is under the new limit"
sx user.volatile.memory_limit "${mount_mb}M" . || fail "memory_limit back to ${mount_mb}M refused"
rm -f vbig

# ---------------------------------------------------------- not the owner

mkfile own.w 65536
mkfile own.r 65536
chmod 666 own.w
chmod 644 own.r
mark all own.w
mark all own.r
expect_fail "uid 65534: set memory_limit on the root gives Operation not permitted" \
	"Operation not permitted" as_nobody setfattr -n user.volatile.memory_limit -v 64M .
eq "... and the limit is unchanged" "$(stat_num memory_limit)" "$limit"
expect_fail "uid 65534: purge all on the root gives Operation not permitted" \
	"Operation not permitted" as_nobody setfattr -n user.volatile.purge -v all .
expect_fail "uid 65534: purge 1M on the root gives Operation not permitted" \
	"Operation not permitted" as_nobody setfattr -n user.volatile.purge -v 1M .
pg "... and nothing was purged" own.w
as_nobody getfattr --absolute-names -n user.volatile.stats . > /dev/null ||
	fail "uid 65534 cannot read user.volatile.stats"
ok "uid 65534: reads user.volatile.stats"
as_nobody setfattr -n user.volatile.mark -v 0:16K own.w ||
	fail "uid 65534: mark on a file it can write refused"
rg "uid 65534: marks a file it can write" own.w "0:0 volatile priority=3"
as_nobody setfattr -n user.volatile.purge -v all own.w ||
	fail "uid 65534: purge all on a file it can write refused"
pg "uid 65534: purge all on a file it can write purges it" own.w "0:65536"
expect_fail "uid 65534: purge all on a file it cannot write gives Permission denied" \
	"Permission denied" as_nobody setfattr -n user.volatile.purge -v all own.r
pg "... and that file is not purged" own.r
expect_fail "uid 65534: mark on a file it cannot write gives Permission denied" \
	"Permission denied" as_nobody setfattr -n user.volatile.mark -v 0:4K own.r
chmod 600 own.r
expect_fail "uid 65534: ranges of a file it cannot read gives Permission denied" \
	"Permission denied" as_nobody getfattr -n user.volatile.ranges own.r
rm -f own.w own.r

# ---------------------------------------------------------- purge on root

mkfile keep $MiB
purge all .
eq "purge all on the root: no volatile byte left resident" "$(stat_num volatile_bytes)" 0
pg "... r's unit purged too" r "0:20480"
same keep "... non-volatile data untouched"
expect_fail "purge 'bogus' on the root gives Invalid argument" "Invalid argument" \
	sx user.volatile.purge bogus .
expect_fail "purge of a SIZE on a file gives Invalid argument" "Invalid argument" \
	sx user.volatile.purge 1M keep
expect_fail "purge on a directory gives Invalid argument" "Invalid argument" \
	sx user.volatile.purge all d

pt0=$(stat_num purges_total)
purge 0 .
eq "purge 0 on the root purges nothing" "$(stat_num purges_total)" "$pt0"

# purged_of FILE...: "FILE=0|1" for each, 1 when its purged set is not empty.
purged_of()
{
	local f v out=
	for f in "$@"; do
		v=$(getfattr --absolute-names --only-values -n user.volatile.purged "$f") || return 1
		out+="$f=$([[ -n $v ]] && echo 1 || echo 0) "
	done
	echo "${out% }"
}

for i in 1 2 3 4; do
	mkfile "q$i" $MiB
done
mark "all priority=4" q1
mark "all priority=1" q2
mark "all priority=6" q3
mark "all priority=2" q4
pt0=$(stat_num purges_total)
purge 1M .
eq "purge 1M: exactly the lowest priority unit (q2, priority 1)" "$(purged_of q1 q2 q3 q4)" \
	"q1=0 q2=1 q3=0 q4=0"
eq "... one purge" "$(stat_num purges_total)" $((pt0 + 1))
purge 1 .
eq "purge 1 (byte): one whole unit, the next priority (q4, priority 2)" \
	"$(purged_of q1 q2 q3 q4)" "q1=0 q2=1 q3=0 q4=1"
pg "... all of it" q4 "0:$MiB"
purge $((MiB + 1)) .
eq "purge 1M+1: two units (q1, q3)" "$(purged_of q1 q2 q3 q4)" "q1=1 q2=1 q3=1 q4=1"
put q1 0 10
put q2 0 10
purge 1T .
eq "purge 1T (more than there is): every resident unit" "$(purged_of q1 q2)" "q1=1 q2=1"
pg "... q1 whole again" q1 "0:$MiB"

# "freed" is memory: a unit that holds 4 KiB frees 4 KiB, whatever its length.
purge all .
truncate -s 1M sp1
put sp1 0 4096
mkfile sp2 $MiB
mark "all priority=0" sp1
mark "all priority=1" sp2
purge 8K .
eq "purge 8K: a unit holding 4 KiB is not enough, the next one goes too" \
	"$(purged_of sp1 sp2)" "sp1=1 sp2=1"

purge all .
mkfile a1 $MiB
mkfile a2 $MiB
mkfile a3 $MiB
mark all a1
mark "all age" a2
mark "all priority=2" a3
purge 1 .
eq "order: a lower priority before an age-flagged unit" "$(purged_of a1 a2 a3)" "a1=0 a2=0 a3=1"
purge 1 .
eq "order: within a priority, the age-flagged unit (more recent) first" \
	"$(purged_of a1 a2 a3)" "a1=0 a2=1 a3=1"

purge all .
for i in 1 2 3; do
	mkfile "l$i" $MiB
	mark all "l$i"
done
mark all l1
purge 1 .
eq "LRU: l1 marked again is recent, l2 goes first" "$(purged_of l1 l2 l3)" "l1=0 l2=1 l3=0"
put l3 4096 10
purge 1 .
eq "LRU: l3 written is recent, l1 goes" "$(purged_of l1 l2 l3)" "l1=1 l2=1 l3=0"

purge all .
for i in 1 2; do
	mkfile "m$i" $MiB
	mark all "m$i"
done
dd if=m1 of=/dev/null bs=64K iflag=direct status=none
purge 1 .
eq "LRU: m1 read (O_DIRECT) is recent, m2 goes" "$(purged_of m1 m2)" "m1=0 m2=1"

# --------------------------------------------------- values over 64 KiB

mkfile many 65536
units0=$(stat_num volatile_units)
list=
for ((i = 0; i < 3000; i++)); do
	list+="$((i * 8))K:4K "
done
mark "$list" many
eq "one call marks 3000 units" "$(stat_num volatile_units)" $((units0 + 3000))
expect_fail "a ranges value over 64 KiB gives Argument list too long" \
	"Argument list too long" getfattr --absolute-names -n user.volatile.ranges many
unmark all many
rg "unmark all removes the 3000 units" many
rm -f many

# Last, as DESIGN 5 leaves room to read it otherwise: "all: purge every
# unit now" includes a unit that holds no memory (a sparse file), as ashmem's
# PURGE_ALL_CACHES marks every unpinned range purged, and as purge on the
# file itself already does.
truncate -s 64K sparse
mark all sparse
purge all .
pg "purge all on the root purges a unit that holds no memory" sparse "0:65536"

mount_answers
