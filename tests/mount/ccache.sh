#!/bin/bash
# ccache.sh DAEMON - ccache's cache directory (CCACHE_DIR) on an auto=unlink
# volatilefs.
#
# A user points CCACHE_DIR at a volatilefs (~/.cache/ccache on a mount):
# compiles must succeed and produce the same objects whether ccache finds a
# result, finds it purged (a cache miss: it compiles again) or loses a stats
# or manifest file.
#
# The project: N C files (N sized to twice the headroom tighten_limit
# leaves, in 512 KiB objects, at least 24), each with a 512 KiB table of
# pseudo-random bytes (a string literal: cheap to compile, incompressible,
# so ccache stores about 512 KiB per result) and a function hashing it, a
# shared header, and main.c printing every hash.  The reference objects
# are compiled with gcc -O1 directly.  With CCACHE_DIR on the mount (-o
# auto=unlink, the limit lowered to the RSS plus a little), two
# passes of `ccache gcc -O1 -c` (two at a time) must each exit 0 and give
# objects byte-identical to the reference; the program linked from the
# second pass must print the hashes computed independently (Python);
# `ccache -s` must still work; user.volatile.stats shows purges_total > 0
# and files_unlinked_total > 0; the mount still answers.  ccache's log (off
# the mount: its stats files may be purged) must count each compile as a
# hit, a miss or a fallback to the compiler (its temporary file purged): pass 1 no
# hit; pass 2, run newest first, some hits
# (what the purges spared: tighten_limit leaves 4 MiB and more, several
# results) and
# some misses (what they took).  Needs ccache, gcc and python3.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=cachelib.sh
. "$(dirname "${BASH_SOURCE[0]}")/cachelib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	need ccache ccache
	need gcc gcc
	need python3 python3
	need setfattr attr
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o auto=unlink,memory_limit=1G
fi

# The compiler by its full path, found as the shell finds it: ccache's own
# PATH search takes a directory named gcc (meson puts the directories of the
# test's libraries, /usr/lib among them, first in PATH; /usr/lib/gcc exists).
GCC=$(command -v gcc)

tighten_limit 4
table=$((512 * 1024))
n=$((2 * headroom / table + 1))
((n >= 24)) || n=24

tmp=$(mktemp -d "${TMPDIR:-/tmp}/volatilefs-ccache.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src
mkdir "$src" "$tmp/ref" "$tmp/out1" "$tmp/out2"

# The sources, and the hashes main.c must print.
python3 - "$src" "$n" "$table" > "$tmp/expected.txt" << 'PY'
import random, sys
top, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(top + "/table.h", "w") as h:
    h.write("#include <stddef.h>\n#define HASH_STEP(s, b) ((s) * 31 + (b))\n")
with open(top + "/main.c", "w") as m:
    m.write("#include <stdio.h>\n")
    for i in range(n):
        m.write("unsigned long table_hash_%d(void);\n" % i)
    m.write("int main(void)\n{\n")
    for i in range(n):
        m.write('\tprintf("%%d %%lu\\n", %d, table_hash_%d());\n' % (i, i))
    m.write("\treturn 0;\n}\n")
for i in range(n):
    data = random.Random(i).randbytes(size)
    with open("%s/t%d.c" % (top, i), "w") as f:
        f.write('#include "table.h"\nstatic const unsigned char table[%d] =\n' % size)
        for j in range(0, size, 64):
            f.write('"' + "".join("\\%03o" % b for b in data[j:j + 64]) + '"\n')
        f.write(";\nunsigned long table_hash_%d(void)\n{\n\tunsigned long s = 0;\n\n"
                "\tfor (size_t i = 0; i < sizeof table; i++)\n"
                "\t\ts = HASH_STEP(s, table[i]);\n\treturn s;\n}\n" % i)
    s = 0
    for b in data:
        s = (s * 31 + b) % 2**64
    print(i, s)
PY
ok "$n sources of 512 KiB tables generated"

# compile_all OUTDIR ORDER [ccache]: every t*.c to OUTDIR/t*.o, two at a
# time, in ORDER: up (t0 first) or down (the last one first).
compile_all()
{
	local out=$1 order=$2
	shift 2
	if [[ $order == up ]]; then seq 0 $((n - 1)); else seq $((n - 1)) -1 0; fi |
		(cd "$src" && xargs -P 2 -I '{}' "$@" "$GCC" -O1 -c 't{}.c' -o "$out/t{}.o")
}

compile_all "$tmp/ref" up || fail "the reference compile (gcc without ccache) failed"
ok "reference objects ($SECONDS s)"

export CCACHE_DIR=$VFS_TEST_DIR/ccache
# Only ccache's defaults: no configuration of the machine's or the user's.
export CCACHE_CONFIGPATH=$tmp/ccache.conf
: > "$CCACHE_CONFIGPATH"
unset CCACHE_DISABLE CCACHE_RECACHE CCACHE_READONLY CCACHE_NODIRECT CCACHE_TEMPDIR CCACHE_LOGFILE

# same PASS OUTDIR: every object of OUTDIR is the reference's, byte for byte.
same()
{
	local i
	for ((i = 0; i < n; i++)); do
		cmp -s "$tmp/ref/t$i.o" "$2/t$i.o" || fail "$1: t$i.o differs from the reference object"
	done
	ok "$1: $n objects identical to the reference ($SECONDS s; $(find "$CCACHE_DIR" -type f | wc -l) files in CCACHE_DIR)"
}

# results PASS: hits, misses and fallbacks (set) in PASS's ccache log.  A
# fallback: ccache's own temporary file (the preprocessor's output, in
# CCACHE_DIR/tmp on the mount, volatile like everything under auto=unlink)
# was purged and its name removed before ccache read it back ("Failed to
# read ...: No such file or directory"); ccache then runs the real compiler,
# whose object the same check compares.  Seen here in 2 of 11 runs of the
# tight limit, on the classic path.
results()
{
	hits=$(grep -cE 'Result: (direct|preprocessed)_cache_hit$' "$tmp/$1.log") || true
	misses=$(grep -cE 'Result: cache_miss$' "$tmp/$1.log") || true
	fallbacks=$(grep -c 'Failed; falling back to running the real compiler$' "$tmp/$1.log") ||
		true
	if ((hits + misses + fallbacks != n)); then
		# What ccache said of the compile that was none of those (for the report).
		grep -B4 -E 'Result: |rror|ailed|orrupt|issing' "$tmp/$1.log" |
			grep -vE 'Result: ((direct|preprocessed)_cache_(hit|miss)|cache_miss)$' |
			head -20 | sed "s/^/$vfs_test: $1.log: /" >&2 || true
	fi
	eq "$1: every compile is a hit, a miss or a fallback (ccache's log)" \
		"$((hits + misses + fallbacks))" "$n"
	ok "$1: $hits hits, $misses misses, $fallbacks fallbacks to the compiler"
}

CCACHE_LOGFILE=$tmp/pass1.log compile_all "$tmp/out1" up ccache || fail "pass 1: a ccache gcc -c failed"
same "pass 1 (cold cache)" "$tmp/out1"
results pass1
eq "pass 1: a cold cache has no hit" "$hits" 0
# Backwards: the newest results, which the purges (coldest first) spared,
# come first, before this pass's own misses push them out.
CCACHE_LOGFILE=$tmp/pass2.log compile_all "$tmp/out2" down ccache || fail "pass 2: a ccache gcc -c failed"
same "pass 2 (newest first)" "$tmp/out2"
results pass2
((hits > 0)) || fail "pass 2: no hit: the purges left ccache nothing"
((misses + fallbacks > 0)) || fail "pass 2: no miss: the limit did not cost ccache anything"
ok "pass 2: ccache still hits under the limit, and misses what was purged"

(cd "$src" && ccache "$GCC" -O1 -o "$tmp/prog" main.c "$tmp"/out2/t*.o) || fail "linking the program failed"
"$tmp/prog" > "$tmp/got.txt" || fail "the program failed"
cmp -s "$tmp/got.txt" "$tmp/expected.txt" || fail "the program's hashes differ from Python's"
ok "the program linked from pass 2 prints the $n hashes Python computed"

ccache -s > /dev/null || fail "ccache -s failed"
ok "ccache -s"
purges_check
mount_answers
