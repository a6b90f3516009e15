/*
 * nullfuse - the fastest a FUSE write and read can be on this machine:
 * a daemon that keeps nothing (bench/, built by contrib/bench.sh).
 *
 *   nullfuse MOUNTPOINT      (foreground; unmount with fusermount3 -u)
 *
 * The mount holds one regular file, "f", of 4 GiB.  A WRITE is answered
 * at once without storing its data (the bytes have been copied into the
 * daemon's request buffer by then, as for any FUSE daemon); a READ is
 * answered with bytes from one static buffer, without looking anything
 * up.  Caching as volatilefs mounts it (keep_cache, no write-back cache,
 * 64 worker threads, the readahead window widened to 1 MiB when root), so
 * fio against it measures what the kernel's FUSE path and the machine cost
 * with no filesystem behind them: the bound of volatilefs's sequential
 * rows (contrib/bench.sh rows null_*).
 */
#define FUSE_USE_VERSION 34
#include <fuse_lowlevel.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#define FILE_INO 2
#define FILE_SIZE (4ull << 30)

static char data[1 << 20];

static void fill_stat(fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)FILE_SIZE;
	}
}

static void null_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	conn->want &= ~(unsigned)(FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_WRITEBACK_CACHE);
}

static void null_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "f") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = FILE_INO;
	e.attr_timeout = e.entry_timeout = 3600;
	fill_stat(FILE_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void null_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	fill_stat(ino, &st);
	fuse_reply_attr(req, &st, 3600);
}

static void null_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
			 struct fuse_file_info *fi)
{
	(void)attr; (void)to_set;
	null_getattr(req, ino, fi);
}

static void null_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void null_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	if ((uint64_t)off >= FILE_SIZE)
		size = 0;
	else if (size > FILE_SIZE - (uint64_t)off)
		size = (size_t)(FILE_SIZE - (uint64_t)off);
	fuse_reply_buf(req, data, size < sizeof(data) ? size : sizeof(data));
}

static void null_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino; (void)buf; (void)off; (void)fi;
	fuse_reply_write(req, size);
}

static void null_ok(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino; (void)fi;
	fuse_reply_err(req, 0);
}

static void null_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
	(void)datasync;
	null_ok(req, ino, fi);
}

static const struct fuse_lowlevel_ops ops = {
	.init = null_init,
	.lookup = null_lookup,
	.getattr = null_getattr,
	.setattr = null_setattr,
	.open = null_open,
	.read = null_read,
	.write = null_write,
	.flush = null_ok,
	.release = null_ok,
	.fsync = null_fsync,
};

/* The mount's readahead window, as volatilefs sets it (src/daemon/ops.c). */
static void widen_readahead(const char *mnt)
{
	char path[96];
	struct stat st;
	FILE *f;

	if (stat(mnt, &st) != 0)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb", major(st.st_dev),
		 minor(st.st_dev));
	f = fopen(path, "w");
	if (f) {
		fputs("1024\n", f);
		fclose(f);
	}
}

int main(int argc, char **argv)
{
	char *fargv[] = { argv[0], "-o", "default_permissions", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, fargv);
	struct fuse_loop_config *cfg;
	struct fuse_session *se;
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: nullfuse MOUNTPOINT\n");
		return 2;
	}
	memset(data, 'n', sizeof(data));
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se || fuse_session_mount(se, argv[1]) != 0)
		return 1;
	if (fork() == 0) { /* after INIT: the first request waits for it */
		widen_readahead(argv[1]);
		_exit(0);
	}
	cfg = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(cfg, 64);
	ret = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	return ret ? 1 : 0;
}
