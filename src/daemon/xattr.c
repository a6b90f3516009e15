/*
 * xattr.c - plain extended attributes; see xattr.h.
 */
#include "xattr.h"
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>

static struct xattr **xattr_slot(struct xattr **list, const char *name)
{
	while (*list && strcmp((*list)->name, name) != 0)
		list = &(*list)->next;
	return list;
}

int xattr_set(struct xattr **list, const char *name, const void *value, size_t size,
	      int flags)
{
	struct xattr **slot = xattr_slot(list, name);
	struct xattr *x;

	if (*slot && (flags & XATTR_CREATE))
		return -EEXIST;
	if (!*slot && (flags & XATTR_REPLACE))
		return -ENODATA;
	x = meta_alloc(sizeof(*x) + size);
	if (!x)
		return -ENOMEM;
	x->name = meta_strdup(name);
	if (!x->name) {
		meta_free(x);
		return -ENOMEM;
	}
	x->size = size;
	if (size)
		memcpy(x->value, value, size);
	if (*slot) {
		/* Replace in place so a failed allocation above changed nothing. */
		struct xattr *old = *slot;

		x->next = old->next;
		*slot = x;
		meta_free(old->name);
		meta_free(old);
	} else {
		x->next = NULL;
		*slot = x;
	}
	return 0;
}

const struct xattr *xattr_find(const struct xattr *list, const char *name)
{
	for (; list; list = list->next)
		if (strcmp(list->name, name) == 0)
			return list;
	return NULL;
}

int xattr_remove(struct xattr **list, const char *name)
{
	struct xattr **slot = xattr_slot(list, name);
	struct xattr *x = *slot;

	if (!x)
		return -ENODATA;
	*slot = x->next;
	meta_free(x->name);
	meta_free(x);
	return 0;
}

long xattr_list(const struct xattr *list, char *buf, size_t size)
{
	size_t total = 0;

	for (const struct xattr *x = list; x; x = x->next)
		total += strlen(x->name) + 1;
	if (size == 0)
		return (long)total;
	if (size < total)
		return -ERANGE;
	for (const struct xattr *x = list; x; x = x->next) {
		size_t n = strlen(x->name) + 1;

		memcpy(buf, x->name, n);
		buf += n;
	}
	return (long)total;
}

void xattr_free_all(struct xattr **list)
{
	while (*list) {
		struct xattr *x = *list;

		*list = x->next;
		meta_free(x->name);
		meta_free(x);
	}
}
