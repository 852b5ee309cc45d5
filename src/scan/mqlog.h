/* mqlog: copies of what the program sends to POSIX message queues, for the mark (a root
 * kind of scan/kroots.h). A message waits in the kernel until some process receives it, and
 * POSIX gives no way to read a queue without taking from it: so each message the program
 * sends (export/export_kroots.c's mq_send and mq_timedsend) is copied as the send returns
 * (until then the program's own buffer holds it), into a log in
 * liboscar.so's own memory (not a root itself), and the copy is dropped once the program
 * receives that message (mq_receive, mq_timedreceive: the first copy of the queue with the
 * same priority and bytes) or once the queue is found empty (mq_getattr's mq_curmsgs 0: a
 * message received by another process). The value of a queue's notification (mq_notify,
 * SIGEV_SIGNAL or SIGEV_THREAD: the kernel holds it until a message arrives) is kept until
 * the program registers another or none.
 *
 * Queues are known by their inode (fstat of the descriptor), so copies of a descriptor, and
 * a queue opened again by its name, are the same queue; a queue whose descriptors are all
 * closed keeps its copies (its messages wait on) until the program opens it again and it is
 * found empty. The log holds MQLOG_BYTES: a message that finds no room (after the copies of
 * queues found empty are dropped) is not kept, and until its queue is found empty no mark
 * proves anything (-EMSGSIZE). A copy costs the send an fstat and two sigprocmask calls.
 *
 * Locks: the log's (rank KROOTS_MQ), held with every signal blocked for a copy, never across
 * a system call the program waits in: a stop of the world (a mark, strict and fast mode's
 * fork) parks no thread that holds it. The marking thread only tries it. */
#ifndef OSCAR_SCAN_MQLOG_H
#define OSCAR_SCAN_MQLOG_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The program sent len bytes at msg with priority prio to the queue of descriptor fd (the
 * send succeeded: the caller's buffer still holds them, the kernel read them): they are
 * copied. Any thread; keeps errno. */
void mqlog_sent(int fd, const void *msg, size_t len, unsigned prio);
/* The program received len bytes at msg with priority prio from fd's queue: one copy of that
 * message goes. Any thread; keeps errno. */
void mqlog_received(int fd, const void *msg, size_t len, unsigned prio);
/* The program registered a notification with value on fd's queue (on), or removed it. */
void mqlog_notify(int fd, bool on, uintptr_t value);

/* The marking thread, with the world stopped: the copies of queues found empty are dropped,
 * then message(fd, bytes, n, arg) for each copy left and value(fd, v, arg) for each
 * notification's value (fd: a descriptor of the queue, -1 if none is open). 0, -EBUSY (a
 * parked thread holds the log) or -EMSGSIZE (a message not copied may still wait). */
int mqlog_for_each(void (*message)(int fd, const unsigned char *p, size_t n, void *arg),
                   void (*value)(int fd, uintptr_t v, void *arg), void *arg);

/* fork's child (export/fork.c, modes/protect.c): the log's lock freed if a thread that is
 * not there held it (then its copies are dropped, and its queues taken as holding a message
 * not copied until found empty). */
void mqlog_fork_child(void);
#endif
