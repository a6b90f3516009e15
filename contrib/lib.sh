# contrib/lib.sh - what the contrib scripts share: messages, root, Debian packages.
# Sourced, not run.  The script sets prog (its name, for messages) first, and may set
# die_status (default 1) for die() to exit with.
# shellcheck shell=bash

say() { printf '%s: %s\n' "$prog" "$*" >&2; }
die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit "${die_status:-1}"
}

# Run as root, or through sudo when we are not.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root to run: $* (run this script as root or install sudo)"
	fi
}

# Print the packages among "$@" that dpkg does not list as installed.
missing_packages() {
	local pkg status
	for pkg in "$@"; do
		status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
		[[ $status == "install ok installed" ]] || printf '%s\n' "$pkg"
	done
}

# Install whichever of "$@" are missing (apt-get update only if something is), with
# apt's output on stderr.  Without dpkg and apt-get, say what is needed and go on.
install_missing() {
	local -a missing
	if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
		say "no dpkg/apt-get here: make sure these are installed: $*"
		return 0
	fi
	mapfile -t missing < <(missing_packages "$@")
	[[ ${#missing[@]} -gt 0 ]] || return 0
	say "installing missing Debian packages: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
}
