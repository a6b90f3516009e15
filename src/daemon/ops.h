/*
 * ops.h - the FUSE low-level operations of volatilefs (ops.c).  The
 * session's userdata is the struct fs the operations act on.
 */
#ifndef VOLATILEFS_OPS_H
#define VOLATILEFS_OPS_H

struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops volatilefs_ops;

/* The mount's FUSE connection number (its device minor), before the
 * session's threads start: the first request widens its readahead window. */
void ops_set_connection(int minor);

/* Free the calling thread's reply buffer (the main thread, at exit:
 * worker threads free theirs when they end). */
void ops_thread_cleanup(void);

#endif
