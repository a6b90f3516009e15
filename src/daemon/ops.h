/*
 * ops.h - the FUSE low-level operations of volatilefs (ops.c).  The
 * session's userdata is the struct fs the operations act on.
 */
#ifndef VOLATILEFS_OPS_H
#define VOLATILEFS_OPS_H

struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops volatilefs_ops;

#endif
