# vollib.sh - what the tests of the volatile interface share (volatile.sh,
# vpolicy.sh): setting and reading its attributes, and a reference copy of a
# file's bytes to compare the file with.  Sourced after lib.sh; the reference
# copies live in the directory $scratch, which the test makes.
# shellcheck shell=bash disable=SC2154 # $scratch is the test's

# sx NAME VALUE PATH: set NAME to exactly VALUE. Passed hex-encoded, because
# setfattr itself decodes values that begin with 0x, 0s or a quote.
sx()
{
	local hex
	if [[ -z $2 ]]; then
		setfattr -n "$1" "$3"
		return
	fi
	hex=$(printf '%s' "$2" | od -An -v -tx1 | tr -d ' \n')
	setfattr -n "$1" -v "0x$hex" "$3"
}

mark() { sx user.volatile.mark "$1" "$2" || fail "mark '$(vis "$1")' on $2 refused"; }
unmark() { sx user.volatile.unmark "$1" "$2" || fail "unmark '$(vis "$1")' on $2 refused"; }
purge() { sx user.volatile.purge "$1" "$2" || fail "purge '$1' on $2 refused"; }

# raw NAME PATH: the value followed by "." (command substitution would eat
# a final newline otherwise).
raw() { getfattr --absolute-names --only-values -n "$1" "$2" && printf .; }

# is_val WHAT NAME PATH [LINE...]: the value is exactly LINE... each ended by
# a newline (no LINE: the empty value).
is_val()
{
	local what=$1 name=$2 path=$3 got l want=''
	shift 3
	for l in "$@"; do
		want+=$l$'\n'
	done
	got=$(raw "$name" "$path") || fail "$what: getfattr -n $name $path failed"
	got=${got%.}
	[[ $got == "$want" ]] ||
		fail "$what: $name of $path is '$(vis "$got")', want '$(vis "$want")'"
	ok "$what: '$(short "$(vis "$want")")'"
}
rg() { is_val "$1" user.volatile.ranges "${@:2}"; }
pg() { is_val "$1" user.volatile.purged "${@:2}"; }

# mkfile PATH SIZE: PATH with SIZE random bytes, and its reference copy
# $scratch/PATH (which the checks update as they change PATH).
mkfile()
{
	head -c "$2" /dev/urandom > "$scratch/$1"
	cp "$scratch/$1" "$1"
}

# put PATH OFF LEN [BYTE]: write LEN bytes 'x' (or BYTE) at OFF, into PATH and
# its reference. One write(2): it reaches the daemon as one write.
put()
{
	local f
	for f in "$1" "$scratch/$1"; do
		head -c "$3" /dev/zero | tr '\0' "${4:-x}" |
			dd of="$f" bs="$3" seek="$2" oflag=seek_bytes iflag=fullblock \
				conv=notrunc status=none
	done
}

# zero_ref PATH OFF LEN: the reference now reads zeros there.
zero_ref()
{
	head -c "$3" /dev/zero |
		dd of="$scratch/$1" bs="$3" seek="$2" oflag=seek_bytes iflag=fullblock \
			conv=notrunc status=none
}

# same PATH WHAT: PATH holds exactly its reference's bytes.
same()
{
	local diff
	diff=$(cmp "$1" "$scratch/$1" 2>&1) || true
	[[ -z $diff ]] || fail "$2: $1 differs from what it should hold: $diff"
	ok "$2"
}
