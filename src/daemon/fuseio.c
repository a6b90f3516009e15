/*
 * fuseio.c - /dev/fuse I/O for passthrough: see fuseio.h for what it
 * changes in the protocol and the kernel ABI it relies on.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fuseio.h"

#define IN_HEADER_SIZE  40 /* struct fuse_in_header */
#define IN_OPCODE       4
#define IN_UNIQUE       8
#define OUT_HEADER_SIZE 16 /* struct fuse_out_header */
#define OUT_ERROR       4
#define OUT_UNIQUE      8
#define OP_INIT         26
#define OP_CREATE       35
#define OP_TMPFILE      51 /* since protocol 7.38; its arguments are CREATE's */

struct backing_map {
	int32_t fd;
	uint32_t flags;
	uint64_t padding;
};
#define BACKING_OPEN  _IOW(229, 1, struct backing_map)
#define BACKING_CLOSE _IOW(229, 2, uint32_t)

static struct {
	int devfd;
	uint64_t want;
	_Atomic uint64_t init_unique; /* 0: no INIT seen, or answered */
	_Atomic uint64_t offered;
	_Atomic bool passthrough;
	_Atomic bool killpriv; /* FUSE_HANDLE_KILLPRIV_V2 in the INIT reply */
} io = { .devfd = -1 };

/* The backing id the OPEN/CREATE reply this thread is writing carries. */
static _Thread_local int32_t reply_backing;

static uint32_t get32(const void *p, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)p + off, sizeof(v));
	return v;
}

static void put32(void *p, size_t off, uint32_t v)
{
	memcpy((char *)p + off, &v, sizeof(v));
}

uint64_t fuseio_init_offered(const void *arg, size_t len)
{
	uint64_t flags;

	if (len < FUSEIO_INIT_IN_FLAGS + 4)
		return 0;
	flags = get32(arg, FUSEIO_INIT_IN_FLAGS);
	/* flags2 exists from protocol 7.36, and only with FUSE_INIT_EXT. */
	if ((flags & FUSEIO_INIT_EXT) && get32(arg, FUSEIO_INIT_IN_MINOR) >= 36 &&
	    len >= FUSEIO_INIT_IN_FLAGS2 + 4)
		flags |= (uint64_t)get32(arg, FUSEIO_INIT_IN_FLAGS2) << 32;
	return flags;
}

uint64_t fuseio_init_patch(void *out, size_t len, uint64_t offered, uint64_t want)
{
	uint64_t add = want & offered &
		       (FUSEIO_PASSTHROUGH | FUSEIO_PARALLEL_DIROPS | FUSEIO_HANDLE_KILLPRIV_V2);
	uint32_t flags;

	if (len < FUSEIO_INIT_OUT_FLAGS + 4)
		return 0;
	flags = get32(out, FUSEIO_INIT_OUT_FLAGS);
	if (len < FUSEIO_INIT_OUT_MIN_SIZE || (flags & FUSEIO_WRITEBACK_CACHE) ||
	    !(offered & FUSEIO_INIT_EXT))
		add &= ~FUSEIO_PASSTHROUGH;
	if (!(add & FUSEIO_PASSTHROUGH))
		add &= ~FUSEIO_HANDLE_KILLPRIV_V2; /* set-id clearing is tested there */
	if (!add)
		return 0;
	flags |= (uint32_t)add;
	if (add & FUSEIO_PASSTHROUGH) {
		flags |= (uint32_t)FUSEIO_INIT_EXT;
		put32(out, FUSEIO_INIT_OUT_FLAGS2,
		      get32(out, FUSEIO_INIT_OUT_FLAGS2) | (uint32_t)(add >> 32));
		/* Backing files are on tmpfs (depth 0): one level is enough. */
		put32(out, FUSEIO_INIT_OUT_DEPTH, 1);
	}
	put32(out, FUSEIO_INIT_OUT_FLAGS, flags);
	return add;
}

bool fuseio_open_patch(void *out, size_t len, int32_t backing_id)
{
	char *o;

	if (len < FUSEIO_OPEN_OUT_SIZE)
		return false;
	o = (char *)out + len - FUSEIO_OPEN_OUT_SIZE;
	put32(o, 8, (get32(o, 8) | FUSEIO_FOPEN_PASSTHROUGH) & ~FUSEIO_FOPEN_KEEP_CACHE);
	put32(o, 12, (uint32_t)backing_id);
	return true;
}

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t r = read(fd, buf, len);

	(void)userdata;
	/* libfuse 3.14 answers TMPFILE as unknown.  It is a CREATE of the
	 * name "/" (the kernel's name for the dentry of an O_TMPFILE open),
	 * a name no CREATE can carry: ops.c's create makes an unnamed file
	 * for it, and its reply is the one TMPFILE expects. */
	if (r >= IN_HEADER_SIZE && get32(buf, IN_OPCODE) == OP_TMPFILE)
		put32(buf, IN_OPCODE, OP_CREATE);
	if (r >= IN_HEADER_SIZE && get32(buf, IN_OPCODE) == OP_INIT) {
		uint64_t unique;

		memcpy(&unique, (char *)buf + IN_UNIQUE, sizeof(unique));
		atomic_store(&io.offered, fuseio_init_offered((char *)buf + IN_HEADER_SIZE,
							      (size_t)r - IN_HEADER_SIZE));
		atomic_store(&io.init_unique, unique);
	}
	return r;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	(void)userdata;
	if (count >= 2 && iov[0].iov_len >= OUT_HEADER_SIZE &&
	    (int32_t)get32(iov[0].iov_base, OUT_ERROR) == 0) {
		uint64_t unique, init = atomic_load(&io.init_unique);

		memcpy(&unique, (char *)iov[0].iov_base + OUT_UNIQUE, sizeof(unique));
		if (init && unique == init) {
			uint64_t add = fuseio_init_patch(iov[1].iov_base, iov[1].iov_len,
							 atomic_load(&io.offered), io.want);

			atomic_store(&io.passthrough, (add & FUSEIO_PASSTHROUGH) != 0);
			atomic_store(&io.killpriv, (add & FUSEIO_HANDLE_KILLPRIV_V2) != 0);
			atomic_store(&io.init_unique, 0);
		} else if (reply_backing > 0) {
			fuseio_open_patch(iov[count - 1].iov_base, iov[count - 1].iov_len,
					  reply_backing);
		}
	}
	return writev(fd, iov, count);
}

int fuseio_attach(struct fuse_session *se, uint64_t want)
{
	static const struct fuse_custom_io hooks = { .read = io_read, .writev = io_writev };
	int fd = fuse_session_fd(se);

	if (fd < 0)
		return -EBADF;
	io.devfd = fd;
	io.want = want;
	return fuse_session_custom_io(se, &hooks, fd) == 0 ? 0 : -EINVAL;
}

uint64_t fuseio_offered(void)
{
	return atomic_load(&io.offered);
}

bool fuseio_passthrough(void)
{
	return atomic_load(&io.passthrough);
}

bool fuseio_killpriv(void)
{
	return atomic_load(&io.killpriv);
}

int fuseio_backing_open(int fd)
{
	struct backing_map map = { .fd = fd };
	int id;

	if (io.devfd < 0)
		return -ENODEV;
	id = ioctl(io.devfd, BACKING_OPEN, &map);
	if (id < 0)
		return -errno;
	return id > 0 ? id : -EIO;
}

void fuseio_backing_close(int32_t id)
{
	uint32_t v = (uint32_t)id;

	if (io.devfd >= 0 && id > 0)
		(void)ioctl(io.devfd, BACKING_CLOSE, &v);
}

int fuseio_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int32_t backing_id)
{
	int r;

	reply_backing = backing_id;
	r = fuse_reply_open(req, fi);
	reply_backing = 0;
	return r;
}

int fuseio_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			const struct fuse_file_info *fi, int32_t backing_id)
{
	int r;

	reply_backing = backing_id;
	r = fuse_reply_create(req, e, fi);
	reply_backing = 0;
	return r;
}
