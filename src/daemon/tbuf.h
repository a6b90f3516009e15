/*
 * tbuf.h - one scratch buffer per thread, for data that must outlive a
 * call until its reply is out (directory listings, xattr values, the
 * bytes of a READ the shared-memory store serves).  The buffer grows to
 * the largest size asked for and is freed with its thread (a
 * pthread key's destructor): libfuse's workers come and go.
 *
 * Locking: none; each thread has its own.  A thread uses one buffer at
 * a time: a caller must be done with it (its reply sent) before the next
 * tbuf_get on that thread.
 */
#ifndef VOLATILEFS_TBUF_H
#define VOLATILEFS_TBUF_H

#include <stddef.h>

/* This thread's buffer, at least size bytes, or NULL (no memory). */
char *tbuf_get(size_t size);
/* Give this thread's buffer back if it grew past keep bytes. */
void tbuf_shrink(size_t keep);
/* Free this thread's buffer now (a thread that ends frees it anyway). */
void tbuf_release(void);

#endif
