#!/usr/bin/env bash
# contrib/xfstests.sh: xfstests' generic tests on tmpfs and on volatilefs (both data paths).
#
#   contrib/xfstests.sh [--src DIR] [--tests 'generic/001 generic/002 ...' | --group GROUP]
#                       [--exclude 'generic/449 ...'] [--budget SECONDS]
#                       [--fs tmpfs,pt-on,pt-off] [--daemon PATH]
#                       [--work DIR] [--out FILE] [--no-deps] [--report-only]
#
# As root on Debian 12, outside the CI suite (the quick group takes far longer than its budget).
#
# 1. xfstests source: DIR (--src) or $XFSTESTS_SRC, a checkout of xfstests (fstests).  Without
#    internet access, get one from a stored snapshot, e.g. with the session tool `fetch` of
#    source github:kdave/xfstests, which leaves a bare repository, then:
#        git clone /work/.mirror/kdave+xfstests/repo /work/xfstests-src
#    With internet access:  git clone https://git.kernel.org/pub/scm/fs/xfs/xfstests-dev.git
#    The tree is copied to WORK/xfstests (default WORK: /var/tmp/volatilefs-xfstests) and built
#    there with `make` (again only when the source's commit changed; make itself is
#    incremental), after installing xfstests' Debian build and run dependencies (its README's
#    list) with apt-get unless --no-deps.
# 2. volatilefs: the daemon --daemon PATH, or $VOLATILEFS_DAEMON, or one built here with meson in
#    ./build-xfstests.  The suite mounts it as users do, through mount(8) and mount.fuse3:
#    `mount -t fuse.volatilefs vfs-test DIR -o fsname=vfs-test,allow_other,passthrough=on|off`.
#    mount(8) runs helpers without our PATH, so /bin/sh finds `volatilefs` on its default path:
#    the script installs a symlink /usr/local/sbin/volatilefs -> the daemon for the run (it
#    refuses to replace an existing one that is something else) and removes it at the end.
#    xfstests sees FSTYP=fuse, FUSE_SUBTYP=.volatilefs; TEST_DEV/SCRATCH_DEV are the fsname=
#    tags vfs-test/vfs-scratch (with fsname= given the mount's type reads `fuse`, the FSTYP
#    xfstests checks).  The baseline is tmpfs in the same harness: FSTYP=tmpfs.
#    A FUSE mount empties when unmounted (files live in the daemon); tmpfs's do too, but
#    xfstests does not unmount tmpfs between a test's steps the way it cycles a fuse mount
#    (see the table's "unmounts" column).
# 3. Runs `./check -g generic/quick` (or --group GROUP, or the --tests list) on each filesystem
#    in turn (default all three: tmpfs, pt-on = volatilefs passthrough=on, pt-off =
#    passthrough=off), less the tests of --exclude (check -e).  --budget SECONDS caps each
#    filesystem's run (timeout(1)); tests not
#    reached are counted as such.  Results go to WORK/results/FS/ (check.log, per-test
#    .out.bad, .notrun, .full, .dmesg); the markdown table (pass/fail/not run per filesystem,
#    then the tests failing or not run on a volatilefs path that pass on tmpfs, with the first
#    differing line of the .out.bad diff or the .notrun/.dmesg/.full hint) is printed and saved
#    with the date, kernel, commits and exact command to bench/results/xfstests-latest.md (or
#    --out FILE).
#    --report-only makes the table again from the results of the last run in WORK, each
#    filesystem's from its latest run (`--fs tmpfs` reruns tmpfs alone); each run's command and
#    ./check arguments are kept in WORK/results/FS/command and the table shows them.
# 4. Every mount it makes is under WORK/mnt and is unmounted by an EXIT trap, also on failure or
#    Ctrl-C; the trap also removes the /usr/local/sbin/volatilefs symlink if it made it.
#
# Tests that need user fsgqa (and fsgqa2, 123456-fsgqa) are "not run" unless those users exist;
# this script does not create users.
set -euo pipefail

readonly DEB_PKGS=(acl attr automake autoconf bc dbench dump e2fsprogs fio gawk gcc git indent
	libacl1-dev libaio-dev libcap-dev libgdbm-dev libgdbm-compat-dev libtool libtool-bin
	liburing-dev libuuid1 make psmisc python3 quota sed uuid-dev uuid-runtime xfsprogs
	xfslibs-dev sqlite3 pkg-config libattr1-dev fuse3 meson ninja-build libfuse3-dev libbsd-dev)
readonly SYS_LINK=/usr/local/sbin/volatilefs

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=${XFSTESTS_SRC:-}
tests=
exclude=
group=generic/quick
budget=0
fslist=tmpfs,pt-on,pt-off
daemon=${VOLATILEFS_DAEMON:-}
work=/var/tmp/volatilefs-xfstests
out=$repo/bench/results/xfstests-latest.md
deps=1
report_only=0
made_link=0
command_line="$0${*:+ $(printf '%q ' "$@")}"
command_line=${command_line% }

die() { echo "xfstests.sh: $*" >&2; exit 1; }
log() { echo "== $*" >&2; }

usage()
{
	sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
	exit "${1:-0}"
}

parse_args()
{
	while (($#)); do
		case $1 in
		--src) src=$2; shift ;;
		--tests) tests=$2; shift ;;
		--exclude) exclude=$2; shift ;;
		--group) group=$2; shift ;;
		--budget) budget=$2; shift ;;
		--fs) fslist=$2; shift ;;
		--daemon) daemon=$2; shift ;;
		--work) work=$2; shift ;;
		--out) out=$2; shift ;;
		--no-deps) deps=0 ;;
		--report-only) report_only=1 ;;
		-h|--help) usage 0 ;;
		*) echo "unknown argument: $1" >&2; usage 1 ;;
		esac
		shift
	done
	[[ -n $src ]] || die "no xfstests source: give --src DIR or XFSTESTS_SRC (see the header)"
	[[ -f $src/check && -f $src/common/rc ]] || die "$src does not look like an xfstests tree"
	src=$(realpath "$src")
	[[ $budget =~ ^[0-9]+$ ]] || die "--budget takes whole seconds"
	[[ $(id -u) -eq 0 ]] || die "needs root (mount -t, xfstests)"
	[[ -c /dev/fuse ]] || die "/dev/fuse is missing"
}

install_deps()
{
	local missing=() p
	((deps)) || return 0
	for p in "${DEB_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	log "apt-get install ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get update -q > /dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# Copy the source tree to WORK/xfstests (when its commit changed) and make it.
build_xfstests()
{
	local dst=$work/xfstests stamp rev
	rev=$(git -C "$src" rev-parse HEAD 2> /dev/null || echo "no-git-$(stat -c %Y "$src/check")")
	stamp=$dst/.volatilefs-src-rev
	if [[ ! -f $stamp || $(cat "$stamp") != "$rev" ]]; then
		log "copying $src ($rev) to $dst"
		rm -rf "$dst"
		mkdir -p "$dst"
		cp -a "$src/." "$dst/"
		echo "$rev" > "$stamp"
	fi
	log "building xfstests in $dst"
	nice make -C "$dst" -j"$(nproc)" > "$work/make.log" 2>&1 ||
		{ tail -30 "$work/make.log" >&2; die "xfstests build failed (log: $work/make.log)"; }
	[[ -x $dst/ltp/fsx && -f $dst/tests/generic/group.list ]] || die "xfstests build incomplete"
	xfs_dir=$dst
	xfs_rev=$rev
}

build_daemon()
{
	if [[ -z $daemon ]]; then
		local b=$repo/build-xfstests
		[[ -f $b/build.ninja ]] || meson setup "$b" "$repo" > /dev/null
		nice ninja -C "$b" src/daemon/volatilefs > /dev/null
		daemon=$b/src/daemon/volatilefs
	fi
	daemon=$(realpath "$daemon")
	[[ -x $daemon ]] || die "daemon $daemon is not executable"
}

# /usr/local/sbin/volatilefs -> the daemon, for mount.fuse3's /bin/sh to find.
install_link()
{
	if [[ -L $SYS_LINK || -e $SYS_LINK ]]; then
		[[ $(realpath "$SYS_LINK") == "$daemon" ]] ||
			die "$SYS_LINK exists and is not $daemon; remove it or pass --daemon $(realpath "$SYS_LINK")"
		return 0
	fi
	ln -s "$daemon" "$SYS_LINK"
	made_link=1
}

mounts_under()
{
	awk -v root="$1/" 'index($2, root) == 1 { print $2 }' /proc/mounts | sort -r
}

cleanup()
{
	local status=$? m
	trap - EXIT INT TERM
	set +e
	if [[ -d $work/mnt ]]; then
		for m in $(mounts_under "$work/mnt"); do
			umount "$m" 2> /dev/null || umount -l "$m"
		done
		[[ -z $(mounts_under "$work/mnt") ]] || echo "xfstests.sh: still mounted under $work/mnt" >&2
	fi
	if ((made_link)) && [[ $(readlink "$SYS_LINK") == "$daemon" ]]; then
		rm -f "$SYS_LINK"
	fi
	exit "$status"
}

# fs_opts FS TAG: mount options of FS for the mount tagged TAG.
fs_opts()
{
	case $1 in
	tmpfs) echo "" ;;
	pt-on) echo "-o fsname=$2,allow_other,passthrough=on" ;;
	pt-off) echo "-o fsname=$2,allow_other,passthrough=off" ;;
	esac
}

write_config()
{
	local fs=$1 cfg=$2 mnt=$work/mnt/$1
	mkdir -p "$mnt/test" "$mnt/scratch"
	if [[ $fs == tmpfs ]]; then
		cat > "$cfg" <<-EOF
			export FSTYP=tmpfs
			export TEST_DEV=tmpfs-test
			export SCRATCH_DEV=tmpfs-scratch
		EOF
	else
		cat > "$cfg" <<-EOF
			export FSTYP=fuse
			export FUSE_SUBTYP=.volatilefs
			export TEST_DEV=vfs-test
			export SCRATCH_DEV=vfs-scratch
			export TEST_FS_MOUNT_OPTS="$(fs_opts "$fs" vfs-test)"
			export MOUNT_OPTIONS="$(fs_opts "$fs" vfs-scratch)"
		EOF
	fi
	cat >> "$cfg" <<-EOF
		export TEST_DIR=$mnt/test
		export SCRATCH_MNT=$mnt/scratch
		export RESULT_BASE=$work/results/$fs
	EOF
}

# Mount FS's test directory ourselves, as xfstests would, so that check finds it mounted.
mount_test()
{
	local fs=$1 mnt=$work/mnt/$1/test
	if [[ $fs == tmpfs ]]; then
		mount -t tmpfs tmpfs-test "$mnt"
	else
		# shellcheck disable=SC2046 # fs_opts gives "-o LIST"
		mount -t fuse.volatilefs vfs-test "$mnt" $(fs_opts "$fs" vfs-test)
	fi
}

test_list()
{
	if [[ -n $tests ]]; then
		echo "$tests"
	else
		echo "-g $group"
	fi
	[[ -z $exclude ]] || echo "-e ${exclude// /,}"
}

run_fs()
{
	local fs=$1 cfg=$work/config-$1 t0 rc=0 m
	write_config "$fs" "$cfg"
	rm -rf "$work/results/$fs"
	mkdir -p "$work/results/$fs"
	for m in $(mounts_under "$work/mnt/$fs"); do umount "$m"; done
	mount_test "$fs"
	log "$fs: ./check $(test_list)"
	echo "\`$command_line\`: \`./check $(test_list | tr '\n' ' ')\`, budget $( ((budget)) && echo "$budget s" || echo none)" \
		> "$work/results/$fs/command"
	t0=$(date +%s)
	# shellcheck disable=SC2046 # the list is words
	(cd "$xfs_dir" && HOST_OPTIONS=$cfg \
		timeout --foreground -k 30 "${budget/#0/1000000}" ./check $(test_list)) \
		2>&1 | tee "$work/results/$fs/check.stdout" || rc=$?
	echo "$(($(date +%s) - t0))" > "$work/results/$fs/seconds"
	log "$fs: done in $(cat "$work/results/$fs/seconds") s (status $rc)"
	for m in $(mounts_under "$work/mnt/$fs"); do umount "$m" || umount -l "$m"; done
}

# classify FS: lines "TEST STATUS" (pass, fail, notrun, cut) from check's output and files.
classify()
{
	local fs=$1 dir=$work/results/$1 t line
	[[ -f $dir/check.stdout ]] || return 0
	grep -aoE '^(generic|shared|tmpfs|fuse)/[0-9]+ .*' "$dir/check.stdout" | while read -r t line; do
		if [[ -f $dir/$t.notrun || $line == *"[not run]"* || $line == *"[expunged]"* ]]; then
			echo "$t notrun"
		elif [[ -f $dir/$t.out.bad || -f $dir/$t.dmesg || $line == *"[failed"* ||
			$line == *"output mismatch"* || $line == *"_check_"* ]]; then
			echo "$t fail"
		elif [[ $line =~ [0-9]+s$ ]]; then
			echo "$t pass"
		else
			echo "$t cut"
		fi
	done
}

# reason FS TEST: one line saying why TEST failed or did not run on FS.
reason()
{
	local dir=$work/results/$1 t=$2 golden r
	if [[ -f $dir/$t.notrun ]]; then
		echo "not run: $(head -1 "$dir/$t.notrun")"
		return
	fi
	if [[ -f $dir/$t.out.bad ]]; then
		golden=$xfs_dir/tests/$t.out
		[[ -f $golden ]] || golden=$(compgen -G "$golden.*" | head -1 || true)
		# The first line the test printed and should not have; else the first it left out.
		r=$(diff -u "$golden" "$dir/$t.out.bad" 2> /dev/null | sed 1,2d | grep -m1 '^+' || true)
		[[ -n $r ]] || r=$(diff -u "$golden" "$dir/$t.out.bad" 2> /dev/null | sed 1,2d |
			grep -m1 '^-' | sed 's/^-/missing: /' || true)
		[[ -n $r ]] && { echo "${r#+}" | cut -c1-160; return; }
	fi
	if [[ -f $dir/$t.dmesg ]]; then
		# The first line after xfstests' own "run fstests" mark; the kernel log is the machine's,
		# so this may come from another process (the OOM killer's victim is named).
		echo "dmesg: $(grep -m1 -vE '^\s*$|run fstests' "$dir/$t.dmesg" | cut -c1-140)"
		return
	fi
	r=$(grep -a -m1 -E "^$t .*(\[failed|_check_|mismatch)" "$dir/check.stdout" || true)
	[[ -n $r ]] && { echo "${r#"$t "}" | cut -c1-160; return; }
	[[ -f $dir/$t.full ]] && { echo ".full: $(tail -1 "$dir/$t.full" | cut -c1-140)"; return; }
	echo "(no hint)"
}

# Does TEST unmount and remount (data must outlive an unmount) or remount with -o remount?
unmounts()
{
	local f=$xfs_dir/tests/$1 u=() 
	grep -qE '_(scratch|test)_cycle_mount|_scratch_unmount|_test_unmount|_unmount |_scratch_shutdown|_scratch_mount' "$f" &&
		grep -qE '_(scratch|test)_cycle_mount|_(scratch|test)_unmount|_scratch_shutdown' "$f" && u+=(unmount)
	grep -qE '_(scratch|test)_remount|-o remount|remount,' "$f" && u+=(remount)
	local IFS=,
	echo "${u[*]:--}"
}

md_escape() { sed -e 's/|/\\|/g' -e 's/`/'"'"'/g'; }

report()
{
	local fs t st kernel vrev n_pass n_fail n_not n_cut secs
	local -A status
	kernel=$(uname -r)
	vrev=$(git -C "$repo" rev-parse --short HEAD)
	{
		echo "# xfstests on tmpfs and volatilefs"
		echo
		echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "- kernel: $kernel ($(uname -m))"
		echo "- volatilefs: $vrev (daemon $daemon)"
		echo "- xfstests: $xfs_rev"
		echo "- command: \`$command_line\`"
		for fs in ${fslist//,/ }; do
			echo "- $fs run by $(cat "$work/results/$fs/command" 2> /dev/null || echo '(not recorded)')"
		done
		echo "- pt-on: volatilefs -o passthrough=on; pt-off: -o passthrough=off; both mounted with"
		echo "  \`mount -t fuse.volatilefs\` through mount.fuse3 (FSTYP=fuse, FUSE_SUBTYP=.volatilefs)"
		echo
		echo "| filesystem | passed | failed | not run | not reached | seconds |"
		echo "|---|---|---|---|---|---|"
		for fs in ${fslist//,/ }; do
			n_pass=0 n_fail=0 n_not=0 n_cut=0
			while read -r t st; do
				status[$fs:$t]=$st
				case $st in
				pass) ((++n_pass)) ;;
				fail) ((++n_fail)) ;;
				notrun) ((++n_not)) ;;
				cut) ((++n_cut)) ;;
				esac
			done < <(classify "$fs")
			secs=$(cat "$work/results/$fs/seconds" 2> /dev/null || echo -)
			echo "| $fs | $n_pass | $n_fail | $n_not | $n_cut | $secs |"
		done
		echo
		local any=0 all
		all=$(for fs in ${fslist//,/ }; do classify "$fs"; done | awk '{print $1}' | sort -u)
		for fs in ${fslist//,/ }; do
			[[ $fs == tmpfs ]] && continue
			for t in $all; do
				[[ ${status[tmpfs:$t]:-} == pass ]] || continue
				st=${status[$fs:$t]:-}
				[[ $st == fail || $st == notrun ]] || continue
				if ((!any)); then
					echo "Failing or not run on a volatilefs path, passing on tmpfs (unmounts: the"
					echo "test unmounts and mounts again, so a FUSE mount comes back empty; remount:"
					echo "it uses \`mount -o remount\`):"
					echo
					echo "| test | path | result | unmounts | reason |"
					echo "|---|---|---|---|---|"
					any=1
				fi
				echo "| $t | $fs | $st | $(unmounts "$t") | $(reason "$fs" "$t" | md_escape) |"
			done
		done
		if [[ ,$fslist, != *,tmpfs,* ]]; then
			echo "No tmpfs run to compare with."
		elif ((!any)); then
			echo "No test fails or is skipped on a volatilefs path that passes on tmpfs."
		fi
		echo
		echo "Failing on tmpfs too (not counted against volatilefs):"
		echo
		local none=1
		for t in $all; do
			[[ ${status[tmpfs:$t]:-} == fail ]] || continue
			echo "- $t: $(reason tmpfs "$t" | md_escape)"
			none=0
		done
		((!none)) || echo "- none"
	} | tee "$out.tmp"
	mv "$out.tmp" "$out"
	log "table saved to $out"
}

main()
{
	parse_args "$@"
	mkdir -p "$work"
	work=$(realpath "$work")
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	if ((report_only)); then
		xfs_dir=$work/xfstests
		xfs_rev=$(cat "$xfs_dir/.volatilefs-src-rev")
		daemon=${daemon:-$(realpath "$SYS_LINK" 2> /dev/null || echo unknown)}
		report
		return
	fi
	install_deps
	build_daemon
	build_xfstests
	install_link
	local fs
	for fs in ${fslist//,/ }; do
		case $fs in tmpfs|pt-on|pt-off) ;; *) die "unknown filesystem $fs (tmpfs, pt-on, pt-off)" ;; esac
	done
	for fs in ${fslist//,/ }; do
		run_fs "$fs"
	done
	report
}

main "$@"
