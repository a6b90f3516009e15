/*
 * main.c - the volatilefs daemon: options, session set-up and the loop.
 *
 *   volatilefs [-f] [-d] [-s] [-o OPT[,OPT...]] [SOURCE] MOUNTPOINT
 *
 * Set-up runs in order (options, filesystem, session, signal handlers,
 * mount, daemonize, loop) and unwinds in reverse through labels named
 * for what they undo.  A bad option fails before anything is mounted,
 * with exit status 1.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <syslog.h>
#include <unistd.h>

#include "evict.h"
#include "fs.h"
#include "fuseio.h"
#include "mem.h"
#include "notify.h"
#include "opts.h"
#include "ops.h"
#include "pressure.h"
#include "remount.h"

static void usage(const char *prog)
{
	printf("usage: %s [options] MOUNTPOINT\n\n"
	       "An in-memory filesystem whose files can hold volatile ranges.\n\n"
	       "volatilefs options:\n"
	       "    -o memory_limit=SIZE   memory limit: RSS + shared memory (default: half of RAM)\n"
	       "    -o memory_low=SIZE     purging stops at or under this (default: 90%% of limit)\n"
	       "    -o purged_read=zero|eio  reading purged bytes gives zeros or EIO (default zero)\n"
	       "    -o write_policy=keep|unmark  a write into a volatile page keeps it volatile\n"
	       "                           or makes it non-volatile (default keep)\n"
	       "    -o auto=off|mark|unlink  new files in the root (and new directories) are\n"
	       "                           marked volatile; under unlink a purge removes them\n"
	       "    -o pressure=on|off     purge volatile data when the cgroup or the machine\n"
	       "                           runs short of memory (default on)\n"
	       "    -o pressure_headroom=SIZE  how close to a limit counts as short (default:\n"
	       "                           the larger of 64M and 5%% of the tightest limit)\n"
	       "    -o passthrough=auto|on|off  file data held once, in shared memory the\n"
	       "                           kernel serves itself (FUSE passthrough: root, Linux\n"
	       "                           6.9+); auto falls back to the classic path, on\n"
	       "                           refuses to mount without it (default auto)\n"
	       "    -o auto_unmount=on|off  when the daemon dies, the mount goes (through\n"
	       "                           fusermount3) and its memory once the last open\n"
	       "                           file on it is closed; off leaves it dead (default on)\n"
	       "    -o mode=OCTAL          permissions of the root (default 1777 as root, else 0755)\n"
	       "    -o uid=N,gid=N         owner of the root (default: the mounting user)\n"
	       "SIZE: bytes, decimal or 0x hex, with an optional K, M, G or T suffix (binary).\n\n",
	       prog);
}

/*
 * mount(8) runs us through mount.fuse3 as "volatilefs SOURCE MOUNTPOINT
 * -o ...", where SOURCE is the first field of an fstab line (the name
 * "volatilefs", say).  With two positional arguments, drop the first.
 */
static void drop_mount_source(int *argc, char *argv[])
{
	int pos[3], npos = 0;

	for (int i = 1; i < *argc; i++) {
		if (strcmp(argv[i], "-o") == 0)
			i++; /* its value */
		else if (argv[i][0] != '-' && npos < 3)
			pos[npos++] = i;
	}
	if (npos != 2)
		return;
	for (int i = pos[0]; i < *argc - 1; i++)
		argv[i] = argv[i + 1];
	(*argc)--;
	argv[*argc] = NULL;
}

/* The FUSE connection number of our mount (its device minor), or -1. */
static int fuse_connection(const char *mountpoint)
{
	struct mount_entry me;

	return mount_entry_find(mountpoint, &me) == 0 ? (int)me.minor : -1;
}

/* Abort our FUSE connection (as `echo 1 > .../abort`): pending requests fail. */
static void abort_connection(int conn)
{
	char path[64];
	FILE *f;

	if (conn < 0)
		return;
	snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%d/abort", conn);
	f = fopen(path, "we");
	if (f) {
		fputs("1", f);
		fclose(f);
	}
}

/*
 * The log: syslog (the journal), where a daemon's notes belong whether it
 * runs in the foreground or not; with -d, stderr too.
 */
/* FUSE passthrough came with Linux 6.9. */
static bool kernel_has_passthrough(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;

	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 9);
}

/*
 * The data path (DESIGN section 11): shared memory and passthrough when
 * asked for (auto, on) and possible; NULL, or why not.  Before the
 * mount, so that passthrough=on refuses to mount.
 */
static const char *passthrough_setup(struct fs *fs, const struct opts *o, char *buf, size_t len)
{
	int ret;

	if (o->passthrough == OPTS_PT_OFF)
		return "passthrough=off";
	if (o->purged_eio)
		return "purged_read=eio needs the classic path: the kernel would serve purged "
		       "bytes of a passthrough file as zeros";
	if (o->write_unmark)
		return "write_policy=unmark needs the classic path: stores through a mapping of a "
		       "passthrough file reach its backing file without a request, so the daemon "
		       "cannot tell which pages were written";
	if (!kernel_has_passthrough())
		return "the kernel has no FUSE passthrough (Linux 6.9 or later)";
	ret = fs_shm_setup(fs, atomic_load(&fs->mem.limit));
	if (ret) {
		snprintf(buf, len, "cannot mount a private tmpfs for file data: %s%s", strerror(-ret),
			 ret == -EPERM ? " (passthrough needs CAP_SYS_ADMIN)" : "");
		return buf;
	}
	return NULL;
}

/*
 * fuse_session_mount, with the caller's standard input, output and error
 * kept from fusermount3.  Under auto_unmount, libfuse 3.14 mounts through fusermount3
 * (as root too), which then stays, watching us, for as long as we live,
 * holding every descriptor it inherited (the fusermount3 of libfuse 3.18 and
 * later lets go of them): a caller waiting for the end of our output (a
 * shell's $(...), a pipe) would wait until we die, not until we detach, and
 * without a subtype= (fsname= given) it says "not mounted" there after every
 * clean unmount.  So it inherits /dev/null and, for standard error, a pipe
 * copied to ours once the mount is made: what fusermount3 and libfuse say of
 * a mount is written before the device reaches us or fusermount3 exits.
 * Nothing else runs yet (threads start after fuse_daemonize).
 */
static int session_mount(struct fuse_session *se, const char *mountpoint)
{
	int saved[3], p[2], null, ret;
	char buf[4096];
	ssize_t n;

	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
		if (null >= 0)
			close(null);
		return fuse_session_mount(se, mountpoint);
	}
	for (int i = 0; i < 3; i++)
		saved[i] = fcntl(i, F_DUPFD_CLOEXEC, 3); /* -1: closed, stays /dev/null */
	(void)dup2(null, STDIN_FILENO);
	(void)dup2(null, STDOUT_FILENO);
	(void)dup2(p[1], STDERR_FILENO);
	ret = fuse_session_mount(se, mountpoint);
	for (int i = 0; i < 3; i++) {
		(void)dup2(saved[i] >= 0 ? saved[i] : null, i);
		if (saved[i] >= 0)
			close(saved[i]);
	}
	close(null);
	close(p[1]);
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		if (write(STDERR_FILENO, buf, (size_t)n) != n)
			break;
	close(p[0]);
	return ret;
}

static bool log_stderr;

static void log_line(void *ctx, const char *msg)
{
	(void)ctx;
	syslog(LOG_INFO, "%s", msg);
	if (log_stderr)
		fprintf(stderr, "volatilefs: %s\n", msg);
}

static uint64_t pressure_volatile_bytes(void *ctx)
{
	struct fs *fs = ctx;

	return atomic_load(&fs->lru.resident) * ARENA_PAGE_SIZE;
}

static uint64_t pressure_purge(void *ctx, uint64_t bytes)
{
	return evict_for_pressure(ctx, bytes);
}

int main(int argc, char *argv[])
{
	struct fuse_args args;
	struct fuse_cmdline_opts copts = { 0 };
	struct fuse_loop_config *lcfg = NULL;
	struct fuse_session *se;
	struct notifier nt;
	struct pressure pr;
	bool pressure_open_ = false;
	struct fs_config cfg;
	int conn = -1;
	const char *why_classic;
	struct opts o;
	struct fs fs;
	char err[256];
	int ret = 1;

	mem_tune_malloc();
	drop_mount_source(&argc, argv);
	openlog("volatilefs", LOG_PID, LOG_DAEMON);
	args = (struct fuse_args)FUSE_ARGS_INIT(argc, argv);
	if (opts_parse(&args, &o, err, sizeof(err)) < 0) {
		fprintf(stderr, "volatilefs: %s\n", err);
		goto out_args;
	}
	if (fuse_parse_cmdline(&args, &copts) != 0)
		goto out_args;
	/* The default data path from the environment (the test suite runs
	 * every mount test on both paths this way; volatilefs(8)). */
	if (!o.passthrough_set && getenv("VOLATILEFS_PASSTHROUGH")) {
		o.passthrough = opts_parse_passthrough(getenv("VOLATILEFS_PASSTHROUGH"));
		if (o.passthrough < 0) {
			fprintf(stderr, "volatilefs: VOLATILEFS_PASSTHROUGH=%s: must be auto, on or off\n",
				getenv("VOLATILEFS_PASSTHROUGH"));
			goto out_opts;
		}
	}
	if (copts.show_help) {
		usage(argv[0]);
		fuse_cmdline_help();
		fuse_lowlevel_help();
		ret = 0;
		goto out_opts;
	}
	if (copts.show_version) {
		printf("volatilefs version %s\n", VOLATILEFS_VERSION);
		fuse_lowlevel_version();
		ret = 0;
		goto out_opts;
	}
	if (!copts.mountpoint) {
		fprintf(stderr, "volatilefs: no mountpoint given (try --help)\n");
		goto out_opts;
	}
	/* mount -o remount (mount(8) runs us again through mount.fuse3):
	 * change the live mount and exit. */
	if (opts_asked(argc, argv, "remount")) {
		ret = remount_run(copts.mountpoint, &o, &args, err, sizeof(err)) == 0 ? 0 : 1;
		if (ret)
			fprintf(stderr, "volatilefs: %s\n", err);
		goto out_opts;
	}
	/*
	 * With a /dev/fd/N mountpoint (mount.fuse3 -o drop_privileges) the
	 * kernel mount was made by the caller, with the caller's options:
	 * our default_permissions below cannot reach it.  mount.fuse3 hands
	 * the daemon the options it mounted with, so insist on seeing it.
	 */
	if (strncmp(copts.mountpoint, "/dev/fd/", 8) == 0 &&
	    !opts_asked(argc, argv, "default_permissions")) {
		fprintf(stderr, "volatilefs: %s: the kernel mount was made by the caller and must "
			"include default_permissions (add -o default_permissions); without it "
			"every user could read every file\n", copts.mountpoint);
		goto out_opts;
	}
	log_stderr = copts.debug;
	if (fuse_opt_add_arg(&args, "-odefault_permissions") != 0) {
		fprintf(stderr, "volatilefs: out of memory\n");
		goto out_opts;
	}
	/*
	 * When we die, the mount goes (volatilefs(8), "When the daemon
	 * dies"): libfuse's auto_unmount has fusermount3 watch a socket that
	 * only we hold and, once it closes, detach the mount if its root
	 * answers ENOTCONN, which it does once no process holds the
	 * connection's /dev/fuse.  The kernel frees the connection, and with
	 * it the backing files of the passthrough path, once nothing uses the
	 * detached mount (open files, mappings, current directories); a dead
	 * mount left in place would pin them for good.  A mount the caller
	 * made (/dev/fd/N) is the caller's to watch.
	 */
	if (!o.auto_unmount_off && strncmp(copts.mountpoint, "/dev/fd/", 8) != 0 &&
	    fuse_opt_add_arg(&args, "-oauto_unmount") != 0) {
		fprintf(stderr, "volatilefs: out of memory\n");
		goto out_opts;
	}

	cfg.memory_limit = o.memory_limit;
	cfg.memory_low = o.memory_low;
	cfg.root_uid = o.uid_set ? o.uid : getuid();
	cfg.root_gid = o.gid_set ? o.gid : getgid();
	cfg.root_mode = o.mode_set ? o.mode : (getuid() == 0 ? 01777 : 0755);
	cfg.owner = getuid();
	cfg.purged_eio = o.purged_eio;
	cfg.write_unmark = o.write_unmark;
	cfg.root_auto = (unsigned)o.auto_mode;
	ret = fs_init(&fs, &cfg);
	if (ret) {
		fprintf(stderr, "volatilefs: cannot set up the filesystem: %s\n", strerror(-ret));
		ret = 1;
		goto out_opts;
	}
	evict_attach(&fs); /* a write that needs room purges (fs.h: make_room) */
	ret = 1;
	why_classic = passthrough_setup(&fs, &o, err, sizeof(err));
	if (why_classic && o.passthrough == OPTS_PT_ON) {
		fprintf(stderr, "volatilefs: passthrough=on: %s\n", why_classic);
		goto out_fs;
	}

	se = fuse_session_new(&args, &volatilefs_ops, sizeof(volatilefs_ops), &fs);
	if (!se)
		goto out_fs; /* libfuse said why (an unknown option, usually) */
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (session_mount(se, copts.mountpoint) != 0)
		goto out_signals;
	/* Our own /dev/fuse I/O (fuseio.h) passes O_TMPFILE opens on, which
	 * libfuse 3.14 answers as unknown, on both paths.  On the passthrough
	 * path it also asks for passthrough at INIT, for parallel lookups
	 * and readdirs in one directory, which libfuse 3.14 never asks for,
	 * and takes set-id clearing over from the kernel, which otherwise
	 * sends a GETXATTR before every write(2) of a passthrough file.
	 * libfuse reads requests with read(2) either way (it splices only
	 * with a write_buf operation, which ops.c does not have). */
	if (fuseio_attach(se, why_classic ? 0 : FUSEIO_PASSTHROUGH | FUSEIO_PARALLEL_DIROPS |
							 FUSEIO_HANDLE_KILLPRIV_V2) != 0) {
		fprintf(stderr, "volatilefs: cannot take over /dev/fuse I/O\n");
		goto out_unmount;
	}
	/* fusermount3 mounted nosuid,nodev: what root asked for, by a bind
	 * remount (a user's request meets EPERM, and the mount stays so). */
	if (getuid() == 0 && strncmp(copts.mountpoint, "/dev/fd/", 8) != 0 &&
	    (ret = remount_asked_flags(copts.mountpoint, argc, argv)) != 0) {
		fprintf(stderr, "volatilefs: dev or suid: %s\n", strerror(-ret));
		ret = 1;
		goto out_unmount;
	}
	ret = 1;
	if (fuse_daemonize(copts.foreground) != 0)
		goto out_unmount;
	/* Threads start after fuse_daemonize(), which forks; and our RSS is
	 * the child's now. */
	ret = mem_reopen(&fs.mem);
	if (ret) {
		fprintf(stderr, "volatilefs: cannot read /proc/self/statm: %s\n", strerror(-ret));
		ret = 1;
		goto out_unmount;
	}
	if (strncmp(copts.mountpoint, "/dev/fd/", 8) != 0)
		conn = fuse_connection(copts.mountpoint);
	ops_set_connection(conn); /* before the loop: ops.c widens its readahead window */
	ret = notifier_start(&nt, se, &fs);
	if (ret) {
		fprintf(stderr, "volatilefs: cannot start the notifier: %s\n", strerror(-ret));
		ret = 1;
		goto out_unmount;
	}
	ret = evict_monitor_start(&fs);
	if (ret) {
		fprintf(stderr, "volatilefs: cannot start the monitor: %s\n", strerror(-ret));
		ret = 1;
		goto out_notifier;
	}
	if (!o.pressure_off) {
		/* VOLATILEFS_PROC: the test seam of pressure.h (a directory laid out as /proc). */
		const char *proc = getenv("VOLATILEFS_PROC");
		struct pressure_cfg pc = { .proc = proc && *proc ? proc : "/proc",
					   .headroom = o.pressure_headroom, .log = log_line,
					   .sources_out = &fs.pressure_sources };
		struct pressure_ops po = { .ctx = &fs, .volatile_bytes = pressure_volatile_bytes,
					   .purge = pressure_purge };

		ret = pressure_open(&pr, &pc);
		if (!ret) {
			pressure_open_ = true;
			ret = pressure_start(&pr, &po);
		}
		if (ret) {
			fprintf(stderr, "volatilefs: cannot watch memory pressure: %s\n",
				strerror(-ret));
			ret = 1;
			goto out_pressure;
		}
	}
	ret = 1;

	if (copts.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lcfg = fuse_loop_cfg_create();
		if (!lcfg)
			goto out_pressure;
		fuse_loop_cfg_set_clone_fd(lcfg, copts.clone_fd);
		/* No request waits for the notifier (its replies are parked),
		 * but an invalidation in flight makes the reads filling the
		 * pages it locks wait, and needs write-backs served: leave
		 * room above libfuse's default of 10 (max_threads= rules). */
		fuse_loop_cfg_set_max_threads(lcfg, copts.max_threads == 10 ? 64 : copts.max_threads);
		ret = fuse_session_loop_mt(se, lcfg);
		fuse_loop_cfg_destroy(lcfg);
	}
	/* libfuse's signal handler leaves the signal number as the loop's
	 * result; SIGTERM, SIGINT and SIGHUP are the clean ways to stop us. */
	ret = (ret == 0 || ret == SIGTERM || ret == SIGINT || ret == SIGHUP) ? 0 : 1;

	/* libfuse's loop resets the session on its way out; mark it exited
	 * again so that a notification failing on the closed device below is
	 * not reported as an error ("fuse: writing device"). */
	fuse_session_exit(se);
	if (pressure_open_)
		pressure_stop(&pr);
	evict_monitor_stop(&fs);
	/* From here the notifier drops what is queued instead of writing it. */
	(void)notifier_stop(&nt, 0);
	/*
	 * Unmount before stopping the notifier: an invalidation in flight
	 * may be waiting for the kernel to launder a dirty mapping through a
	 * WRITE that no worker will serve now.  Unmounting closes the
	 * connection, which fails that WRITE and lets the notifier finish.
	 */
	fuse_session_unmount(se);
	/*
	 * If it is still stuck, the WRITE it waits for is queued on a
	 * connection nobody serves: abort the connection (root only, as the
	 * connections directory is), and wait for good.
	 */
	if (!notifier_stop(&nt, 2000)) {
		abort_connection(conn);
		notifier_stop(&nt, -1);
	}
out_pressure:
	if (pressure_open_) {
		pressure_stop(&pr);
		pressure_close(&pr);
		atomic_store(&fs.pressure_sources, 0);
	}
	evict_monitor_stop(&fs);
out_notifier:
	notifier_stop(&nt, -1);
	/* Nothing queues from here; poll handles left are still freed. */
	fs.hooks = (struct fs_hooks){ .ctx = fs.hooks.ctx, .poll_free = fs.hooks.poll_free };
out_unmount:
	ops_thread_cleanup();
	fuse_session_unmount(se); /* does nothing the second time */
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	fs_destroy(&fs);
out_opts:
	free(copts.mountpoint);
out_args:
	fuse_opt_free_args(&args);
	closelog();
	return ret;
}
