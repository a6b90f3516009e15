#!/bin/bash
# readme.sh DAEMON - the README's snippets for other languages run as written.
#
# README.md's section "From other languages, without the C library" holds a
# Python program and a shell loop, each between the marker comments
# `<!-- readme-test: NAME -->` and `<!-- /readme-test -->`, and what each
# prints between `<!-- readme-test: NAME-output -->` markers.  This test
# takes them out of README.md (code fences dropped), runs the Python one
# with python3 on a file at the top of a fresh mount, the shell one with sh
# in a directory of three 64 KiB files, and requires exit status 0 and
# exactly the output the README shows.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [[ ${1:-} != --mounted ]]; then
	vfs_usage_check "$@"
	vfs_run_mounted "${BASH_SOURCE[0]}" "$1" -o memory_limit=256M
fi
need python3 python3
need setfattr attr
readme=$vfs_dir/../../README.md
[[ -f $readme ]] || fail "no $readme"

# snippet NAME: the text between NAME's markers, without the code fences.
snippet()
{
	local text
	text=$(awk -v name="$1" '
		$0 == "<!-- readme-test: " name " -->" { on = 1; next }
		on && $0 == "<!-- /readme-test -->" { exit }
		on && !/^```/ { print }' "$readme")
	[[ -n $text ]] || fail "README.md has no snippet '$1' between readme-test markers"
	printf '%s\n' "$text"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/readme-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

snippet python > "$tmp/cache.py"
status=0
out=$(cd / && python3 "$tmp/cache.py" "$VFS_TEST_DIR/cache.bin" 2>&1) || status=$?
eq "README's Python snippet: exit status" "$status" 0
eq "README's Python snippet prints what the README shows" "$out" "$(snippet python-output)"
[[ -z $(getfattr --absolute-names --only-values -n user.volatile.purged "$VFS_TEST_DIR/cache.bin") ]] ||
	fail "the Python snippet left purged bytes"
ok "the Python snippet regenerated what was purged"

mkdir "$VFS_TEST_DIR/thumbs"
for f in a b c; do
	head -c 64K /dev/urandom > "$VFS_TEST_DIR/thumbs/$f.png"
done
snippet shell > "$tmp/loop.sh"
status=0
out=$(cd "$VFS_TEST_DIR/thumbs" && sh "$tmp/loop.sh" 2>&1) || status=$?
eq "README's shell loop: exit status" "$status" 0
eq "README's shell loop prints what the README shows" "$out" "$(snippet shell-output)"
