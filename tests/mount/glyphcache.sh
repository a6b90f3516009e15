#!/bin/bash
# glyphcache.sh DAEMON - contrib/examples/glyphcache, a compositor-style glyph
# cache whose atlas lives on volatilefs, renders the same image however much
# of its atlas is purged.
#
# The binary comes from $GLYPHCACHE; it draws with DejaVu Sans (Debian package
# fonts-dejavu-core). The test writes a deterministic text of 1500 lines with
# a wide character set (Latin with diacritics, Greek, Cyrillic, Armenian,
# ligatures, mathematical and box-drawing symbols) and renders it at 48 px,
# two passes, from an atlas on two mounts (through with-mount.sh each):
# - spare: -o memory_limit=1G, nothing else on the mount: nothing is purged,
#   so no regeneration and no purge seen by the program's poll thread;
# - tight: -o memory_limit=${VFS_TEST_LIMIT_MB:-32}M while, in the background,
#   one loop keeps writing 4 MiB files and marking them volatile (together
#   more than the limit, so the daemon purges by memory) and another purges
#   the whole mount every 100 ms (setfattr -n user.volatile.purge -v all on
#   the root): the program must regenerate glyphs (regenerations > 0) and its
#   poll thread must see purges (purges_seen > 0).
# Both runs must print the same checksum of the rendered image, the same
# number of lines, lookups and first rasterisations (misses), and the counts
# must add up (hits + misses + refills + regenerations = lookups). Each mount
# must still answer after the run.
# Off volatilefs (an atlas in a temporary directory), the program must fail
# with status 1 and say that the file is not on volatilefs, leaving no atlas
# behind and an existing file as it was; a FIFO is refused as not a regular
# file, and left alone.

set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

font=/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
limit_mb=${VFS_TEST_LIMIT_MB:-32}
render=(--size 48 --passes 2)

# gen_text LINES: deterministic text with a wide character set, on stdout.
gen_text()
{
	local -a words=(
		lorem ipsum dolor sit amet consectetur adipiscing elit sed 'do' eiusmod tempor
		incididunt ut labore et dolore magna aliqua Ut enim ad minim veniam quis
		nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat
		Ärger façade naïve Straße œuvre smørrebrød ångström Øresund crème brûlée
		jalapeño Łódź Dvořák Šťastný Ærø Íslenska þorn ðæt ĳsvogel Ŋ ǅ Șțara ẞ
		λόγος φιλοσοφία Ελληνικά ψυχή Ωμέγα αβγδεζηθ πρόβλημα
		Кириллица пример жёлтый щука Україна ЁЖЗИЙ съешь
		Ա Բ Գ Դ ﬁ ﬂ € £ ¥ ± ½ ¾ © ® ™ § ¶ † ‡ • … ‰ ∑ ∏ √ ∞ ≠ ≤ ≥ ∫ ∂ ∇
		→ ← ↑ ↓ ⇒ ♥ ♦ ♣ ♠ ★ ☃ ♪ ☺ ✓ ✗ ░ ▒ ▓ █ ┌ ┐ └ ┘ ─ │
		0 1 2 3 4 5 6 7 8 9 42 1984 3.14159 '2^63' '(x)' '[y]' '{z}' '<a>' '"q"'
		"'r'" '#!' @ '$' % '&' '*'
	)
	local n=${#words[@]} i w line
	RANDOM=20261203
	for ((i = 0; i < $1; i++)); do
		line=
		for ((w = 0; w < 8 + RANDOM % 8; w++)); do
			line+="${words[RANDOM % n]} "
		done
		printf '%s\n' "${line% }"
	done
}

# val KEY FILE: the value of KEY=... in the program's output FILE.
val()
{
	local v
	v=$(awk -F= -v k="$1" '$1 == k { print $2 }' "$2")
	[[ $v =~ ^[0-9a-z:]+$ ]] || fail "no $1=VALUE in $2: $(short "$(tr '\n' ' ' < "$2")")"
	printf '%s' "$v"
}

# ------------------------------------------------------------- mounted part
# --mounted RUN WORKDIR: render $WORKDIR/text, the output into $WORKDIR/RUN.out.

if [[ ${1:-} == --mounted ]]; then
	run=$2 work=$3
	cd "$VFS_TEST_DIR"
	stop=$work/stop.$run
	pids=()
	if [[ $run == tight ]]; then
		# Competition: 4 MiB volatile files, together a bit more than the limit.
		mkdir competitors
		nfiles=$((limit_mb / 4 + 2))
		(
			while :; do
				for ((i = 0; i < nfiles; i++)); do
					[[ -e $stop ]] && exit 0
					head -c 4M /dev/urandom > "competitors/$i"
					setfattr -n user.volatile.mark -v all "competitors/$i"
				done
			done
		) &
		pids+=($!)
		(
			while [[ ! -e $stop ]]; do
				setfattr -n user.volatile.purge -v all .
				sleep 0.1
			done
		) &
		pids+=($!)
		ok "tight: $nfiles competing 4 MiB volatile files and a purge of the mount every 100 ms"
	fi

	status=0
	SECONDS=0
	timeout 120 "$GLYPHCACHE" --atlas "$VFS_TEST_DIR/glyphs.atlas" --text "$work/text" \
		"${render[@]}" > "$work/$run.out" || status=$?
	took=$SECONDS
	touch "$stop"
	for pid in "${pids[@]}"; do
		wait "$pid" || fail "$run: a background loop failed (status $?)"
	done
	sed "s/^/$vfs_test: $run: /" "$work/$run.out"
	[[ $status -eq 0 ]] || fail "$run: glyphcache exited with status $status after ${took}s"
	ok "$run: glyphcache rendered the text in ${took}s"
	[[ ! -e glyphs.atlas ]] || fail "$run: glyphcache left its atlas behind"
	if [[ $run == tight ]]; then
		purges=$(stat_of purges_total)
		((purges > 0)) || fail "tight: the daemon purged nothing (purges_total=$purges)"
		ok "tight: the daemon purged $purges units meanwhile"
	fi
	mount_answers
	exit 0
fi

# ------------------------------------------------------------- not mounted

vfs_usage_check "$@"
[[ -n ${GLYPHCACHE:-} && -x $GLYPHCACHE ]] ||
	fail "set GLYPHCACHE to the glyphcache binary (contrib/examples, needs libfreetype-dev)"
[[ $limit_mb =~ ^[1-9][0-9]*$ ]] || fail "VFS_TEST_LIMIT_MB=$limit_mb is not a number of MiB"
[[ -r $font ]] || fail "$font not found (Debian package fonts-dejavu-core)"
need setfattr attr
need getfattr attr
need timeout coreutils
need mkfifo coreutils
daemon=$1

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gen_text 1500 > "$work/text"
ok "text: $(wc -l < "$work/text") lines, $(wc -m < "$work/text") characters"

# Off volatilefs: a clear message, status 1, nothing left behind.
status=0
err=$("$GLYPHCACHE" --atlas "$work/plain.atlas" --text "$work/text" 2>&1 > /dev/null) || status=$?
[[ $status -eq 1 ]] || fail "off volatilefs: exit status $status, want 1 (said '$err')"
[[ $err == *"not on a volatilefs mount"* ]] ||
	fail "off volatilefs: message '$err' does not say the atlas is not on volatilefs"
[[ ! -e $work/plain.atlas ]] || fail "off volatilefs: the atlas file was left behind"
ok "off volatilefs: status 1: $(short "$err")"
echo precious > "$work/existing"
status=0
err=$("$GLYPHCACHE" --atlas "$work/existing" --text "$work/text" 2>&1 > /dev/null) || status=$?
[[ $status -eq 1 && $err == *"not on a volatilefs mount"* ]] ||
	fail "off volatilefs, existing file: status $status, said '$err'"
eq "off volatilefs: an existing file is left as it was" "$(cat "$work/existing")" precious
mkfifo "$work/fifo"
status=0
err=$("$GLYPHCACHE" --atlas "$work/fifo" --text "$work/text" 2>&1 > /dev/null) || status=$?
[[ $status -eq 1 && $err == *"not a regular file"* ]] ||
	fail "a FIFO as the atlas: status $status, said '$err', want 1 and 'not a regular file'"
[[ -p $work/fifo ]] || fail "a FIFO as the atlas: the FIFO is gone"
ok "a FIFO as the atlas: refused and left alone: $(short "$err")"

failed=
for run in spare tight; do
	case $run in
	spare) mopts=memory_limit=1G ;;
	tight) mopts=memory_limit=${limit_mb}M ;;
	esac
	status=0
	bash "$vfs_dir/with-mount.sh" "$daemon" -o "$mopts" -- \
		bash "${BASH_SOURCE[0]}" --mounted "$run" "$work" || status=$?
	[[ $status -eq 0 ]] || failed+=" $run (-o $mopts, status $status)"
done
[[ -z $failed ]] || fail "mounted runs failed:$failed"

spare=$work/spare.out tight=$work/tight.out
for r in spare tight; do
	f=$work/$r.out
	sum=$(($(val hits "$f") + $(val misses "$f") + $(val refills "$f") + $(val regenerations "$f")))
	eq "$r: hits + misses + refills + regenerations = lookups" "$sum" "$(val lookups "$f")"
done
eq "spare: no regeneration" "$(val regenerations "$spare")" 0
eq "spare: no purge seen" "$(val purges_seen "$spare")" 0
for k in lines lookups misses distinct_glyphs; do
	eq "tight: $k as in the spare run" "$(val "$k" "$tight")" "$(val "$k" "$spare")"
done
regen=$(val regenerations "$tight")
seen=$(val purges_seen "$tight")
((regen > 0)) || fail "tight: no glyph was regenerated: purges missed the atlas?"
ok "tight: $regen glyphs regenerated ($(val regenerations_after_poll "$tight") dropped by" \
	"the poll thread first, $(val regenerations_after_unmark "$tight") found at unmark)"
((seen > 0)) || fail "tight: the poll thread saw no purge"
ok "tight: the poll thread saw $seen purges and dropped $(val slots_dropped "$tight") slots"
eq "tight: the image checksum is the spare run's" "$(val checksum "$tight")" \
	"$(val checksum "$spare")"
