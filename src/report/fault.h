#ifndef OSCAR_FAULT_H
#define OSCAR_FAULT_H
/* Install the SIGSEGV/SIGBUS handler that reports use-after-free (see fault.c). */
void fault_init(void);
/* OSCAR_STATS_SIGNAL: emit the statistics whenever sig arrives. */
void fault_init_stats_signal(int sig);
#endif
