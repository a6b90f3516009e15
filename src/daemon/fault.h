/*
 * fault.h - fault injection points (libfiu), compiled in only by a build
 * with -Dfiu=enabled (VOLATILEFS_FIU).  FAULT("volatilefs/NAME") is true
 * when libfiu was told to fail that point (fiu-run -c 'enable_random
 * name=volatilefs/...,probability=P'); in any other build it is a
 * constant false and costs nothing.
 *
 * Points: volatilefs/meta (meta.c: a metadata block), volatilefs/arena
 * (arena.c: a new chunk of pages), volatilefs/reserve (mem.c: a
 * reservation against the limit).
 */
#ifndef VOLATILEFS_FAULT_H
#define VOLATILEFS_FAULT_H

#ifdef VOLATILEFS_FIU
#define FIU_ENABLE 1 /* without it, fiu.h compiles every point to 0 */
#include <fiu.h>
#define FAULT(name) (fiu_fail(name) != 0)
#else
#define FAULT(name) 0
#endif

#endif
