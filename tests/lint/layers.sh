#!/bin/bash
# layers.sh - the daemon's layers only look down.
#
# Reads the layer list from docs/ARCHITECTURE.md (the block fenced as
# ```layers: one layer a line, the top first, its name then its files)
# and checks every `#include "x.h"` in src/daemon: x.h (which belongs to
# the layer of x.c, or is listed itself) must be in the includer's layer
# or one below it.  A file of src/daemon that no layer lists fails too,
# so a new module has to be given its place.  Headers from elsewhere
# (include/volatilefs.h) are not ours to place and are skipped.
#
# On commit c6593e2 it fails with:
#   fs.c (fs) includes evict.h (volatile): up a layer
#   fs.c (fs) includes vxattr.h (requests): up a layer
#
# One awk over everything: the machine it runs on is often loaded.
# Usage: layers.sh [ARCHITECTURE.md [src/daemon]]   (defaults: this tree's)
set -eu

root=$(cd "$(dirname "$0")/../.." && pwd)
doc=${1:-$root/docs/ARCHITECTURE.md}
src=${2:-$root/src/daemon}

exec awk -v doc="$doc" '
function base(p) { sub(/.*\//, "", p); return p }
# The layer of a file: as listed, else (a header) that of its .c; -1 if none.
function layer(f, c) {
	if (f in at)
		return at[f]
	c = f; sub(/\.h$/, ".c", c)
	return (c in at) ? at[c] : -1
}
BEGIN {
	n = 0
	for (i = 2; i < ARGC; i++)
		ours[base(ARGV[i])] = 1
}
FILENAME == doc {
	if ($0 == "```layers") { on = 1; next }
	if ($0 ~ /^```/) { on = 0; next }
	if (on && NF > 1) {
		for (i = 2; i <= NF; i++)
			at[$i] = n
		name[n++] = $1
	}
	next
}
FNR == 1 {
	if (n == 0) { print "no ```layers block in " doc; bad = 2; exit }
	me = layer(base(FILENAME))
}
/^#include "/ {
	inc = $2; gsub(/"/, "", inc)
	if (!(inc in ours))
		next
	it = layer(inc)
	if (it >= 0 && it < me) {
		printf "%s (%s) includes %s (%s): up a layer\n", base(FILENAME), name[me], inc, name[it]
		bad = 1
	}
}
END {
	if (bad == 2)
		exit 1
	for (f in ours)
		if (layer(f) < 0) { print f ": in no layer of " doc; bad = 1 }
	exit bad
}
' "$doc" "$src"/*.c "$src"/*.h
