#ifndef OSCAR_FORK_H
#define OSCAR_FORK_H
/* Register the fork handlers (see fork.c). */
void fork_init(void);
#endif
