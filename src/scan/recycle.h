/* recycle: the proof behind strict and fast mode's address recycling (heap/reclaim.h). Before
 * the addresses of reclaimed chunks are handed out again, the world is stopped and every
 * aligned word of every root (scan/roots.h) and of every live object is read; a chunk some
 * word points into, or one past the end of, is kept out of use. */
#ifndef OSCAR_SCAN_RECYCLE_H
#define OSCAR_SCAN_RECYCLE_H
#include "base/core.h"

/* Registers the proof with the reclaim sweep (reclaim_set_prove_hook). At init, after
 * reclaim_init. */
void recycle_init(void);
#endif
