/*
 * fuseio.h - the daemon's own reading and writing of /dev/fuse, for what
 * libfuse 3.14 cannot ask the kernel for: FUSE passthrough (DESIGN section
 * 11).
 *
 * libfuse 3.14 builds the INIT reply from the 32-bit capabilities it
 * knows and fills struct fuse_open_out without a backing id, so its API
 * cannot negotiate passthrough nor answer an open with it.  Its custom io
 * hook (fuse_session_custom_io) hands us every read of a request and
 * every write of a reply; this module
 *   - reads each request as libfuse would, and notes the kernel's INIT
 *     (its unique id and the flags it offers, flags2 included);
 *   - writes each reply as libfuse would, except that it adds to the
 *     INIT reply FUSE_INIT_EXT | FUSE_PASSTHROUGH and a max_stack_depth
 *     of 1 when passthrough was asked for and offered (with
 *     FUSE_HANDLE_KILLPRIV_V2 when asked for), and to an OPEN or
 *     CREATE reply sent through fuseio_reply_open/_create the flag
 *     FOPEN_PASSTHROUGH and the backing id;
 *   - registers and drops backing files (FUSE_DEV_IOC_BACKING_OPEN and
 *     _CLOSE).
 *
 * The kernel ABI it relies on (include/uapi/linux/fuse.h, protocol 7.40,
 * Linux 6.9; read in 6.18's fs/fuse/inode.c process_init_reply,
 * backing.c, iomode.c):
 *   - struct fuse_init_in: flags at byte 12, flags2 at byte 16 (when the
 *     kernel's minor >= 36 and FUSE_INIT_EXT is in flags);
 *   - struct fuse_init_out: flags at byte 12, flags2 at byte 32,
 *     max_stack_depth at byte 36 (u32);
 *   - FUSE_HANDLE_KILLPRIV_V2 = 1 << 28 (flags): the kernel sets SB_NOSEC,
 *     so an inode found free of set-id bits and security.capability is
 *     marked S_NOSEC and later writes skip file_remove_privs, which would
 *     otherwise send a GETXATTR of security.capability before every
 *     write(2) (the one request a passthrough write still made); an
 *     attribute refresh clears S_NOSEC again.  In exchange fuse_setattr
 *     computes no mode for ATTR_KILL_SUID/SGID: a chown of a
 *     non-directory and a truncate without CAP_FSETID carry
 *     FATTR_KILL_SUIDGID (which libfuse 3.14 drops), and a write or
 *     fallocate to a set-id file sends a SETATTR with no attribute;
 *   - FUSE_INIT_EXT = 1 << 30 (flags), FUSE_PASSTHROUGH = 1 << 37 (bit 5
 *     of flags2); the kernel turns passthrough on only with
 *     0 < max_stack_depth <= FILESYSTEM_MAX_STACK_DEPTH and no
 *     FUSE_WRITEBACK_CACHE;
 *   - struct fuse_open_out { u64 fh; u32 open_flags; s32 backing_id; },
 *     FOPEN_PASSTHROUGH = 1 << 7 (combines only with FOPEN_DIRECT_IO,
 *     FOPEN_PARALLEL_DIRECT_WRITES and FOPEN_NOFLUSH: never KEEP_CACHE);
 *   - FUSE_DEV_IOC_BACKING_OPEN = _IOW(229, 1, struct fuse_backing_map
 *     { s32 fd; u32 flags; u64 padding; }), returning the id (> 0);
 *     FUSE_DEV_IOC_BACKING_CLOSE = _IOW(229, 2, u32).  Both need
 *     CAP_SYS_ADMIN in the initial user namespace.
 * tests/unit/test_fuseio.c checks these offsets on byte images, and
 * tests/mount/passthrough.sh that a mount negotiates them.
 *
 * Splice: libfuse does not splice under a custom io without splice
 * hooks, and without a write_buf operation it does not splice requests
 * in at all: a classic mount (fuseio_attach with want 0, for O_TMPFILE
 * alone) reads them with read(2) as it would without these hooks.
 *
 * State is per process (one session), set up once before the session
 * loop; the INIT fields are written by the one thread that reads INIT
 * before any other request exists, the rest is thread-local or atomic.
 */
#ifndef VOLATILEFS_FUSEIO_H
#define VOLATILEFS_FUSEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fuse_session;
struct fuse_file_info;
struct fuse_entry_param;
typedef struct fuse_req *fuse_req_t;

/* Bits of the 64-bit INIT flags (flags | flags2 << 32). */
#define FUSEIO_INIT_EXT         (1ull << 30)
#define FUSEIO_PARALLEL_DIROPS  (1ull << 18)
#define FUSEIO_HANDLE_KILLPRIV_V2 (1ull << 28)
#define FUSEIO_WRITEBACK_CACHE  (1ull << 16)
#define FUSEIO_PASSTHROUGH      (1ull << 37)
#define FUSEIO_FOPEN_KEEP_CACHE   (1u << 1)
#define FUSEIO_FOPEN_PASSTHROUGH  (1u << 7)

/* Byte offsets in the kernel's structures (above). */
#define FUSEIO_INIT_IN_MINOR      4
#define FUSEIO_INIT_IN_FLAGS      12
#define FUSEIO_INIT_IN_FLAGS2     16
#define FUSEIO_INIT_IN_SIZE       64
#define FUSEIO_INIT_OUT_FLAGS     12
#define FUSEIO_INIT_OUT_FLAGS2    32
#define FUSEIO_INIT_OUT_DEPTH     36
#define FUSEIO_INIT_OUT_MIN_SIZE  40
#define FUSEIO_OPEN_OUT_SIZE      16

/*
 * The flags (flags | flags2 << 32) a FUSE_INIT request's argument
 * offers; arg is what follows the 40-byte request header, len its
 * length.  0 when it is too short.
 */
uint64_t fuseio_init_offered(const void *arg, size_t len);
/*
 * Add to an INIT reply's argument (out, len bytes, as libfuse built
 * it) what `want` asks for among FUSEIO_PASSTHROUGH,
 * FUSEIO_PARALLEL_DIROPS and FUSEIO_HANDLE_KILLPRIV_V2, where `offered`
 * allows it.  Returns the bits added; passthrough is added only with a
 * reply long enough to carry max_stack_depth, and never beside a
 * writeback cache; FUSEIO_HANDLE_KILLPRIV_V2 only with passthrough.
 */
uint64_t fuseio_init_patch(void *out, size_t len, uint64_t offered, uint64_t want);
/*
 * Turn the fuse_open_out at the end of a reply argument (out, len
 * bytes) into a passthrough open of backing_id: FOPEN_PASSTHROUGH set,
 * FOPEN_KEEP_CACHE cleared.  False (nothing changed) when len is too
 * short.
 */
bool fuseio_open_patch(void *out, size_t len, int32_t backing_id);

/*
 * Take over the session's device I/O (after fuse_session_mount, before
 * the loop).  want: FUSEIO_PASSTHROUGH, FUSEIO_PARALLEL_DIROPS,
 * FUSEIO_HANDLE_KILLPRIV_V2.
 * Zero or -errno.
 */
int fuseio_attach(struct fuse_session *se, uint64_t want);
/* What the kernel's INIT offered (0 before INIT, or without fuseio_attach). */
uint64_t fuseio_offered(void);
/* Whether the INIT reply turned passthrough on. */
bool fuseio_passthrough(void);
/*
 * Whether the INIT reply took over clearing set-user-ID and set-group-ID
 * (FUSE_HANDLE_KILLPRIV_V2): the kernel then clears none of them itself
 * and the daemon must, on write, truncate, chown and the empty SETATTR a
 * write or fallocate sends for a set-id file (ops.c, drop_setid).
 */
bool fuseio_killpriv(void);

/* Register fd as a backing file: the id (> 0) or -errno. */
int fuseio_backing_open(int fd);
/* Drop a backing id (the kernel keeps the file while opens use it). */
void fuseio_backing_close(int32_t id);

/*
 * fuse_reply_open / fuse_reply_create, answered as passthrough opens of
 * backing_id when it is > 0 (as the plain calls otherwise).  The reply
 * is written on the calling thread, which is how the writer knows it.
 */
int fuseio_reply_open(fuse_req_t req, const struct fuse_file_info *fi, int32_t backing_id);
int fuseio_reply_create(fuse_req_t req, const struct fuse_entry_param *e,
			const struct fuse_file_info *fi, int32_t backing_id);

#endif
