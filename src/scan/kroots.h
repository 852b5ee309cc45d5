/* kroots: pointers only the kernel holds, as roots. A program may keep the only pointer to an
 * object in the kernel: epoll's user data (a server's connection, registered with
 * EPOLL_CTL_ADD, found again by epoll_wait). A mark that reads the process's memory alone
 * would release such an object, and the next event would hand the program a new one.
 *
 * The epoll instances the program creates are noted (export/export_kroots.c: epoll_create,
 * epoll_create1, and dup, dup2, dup3, fcntl's F_DUPFD of one; the first walk also finds the
 * instances made before, /proc/self/fd); a mark reads each one's registrations from
 * /proc/self/fdinfo/<fd> (a line per watched descriptor, with its user data) and scans those
 * values as a root. Likewise the counter of each eventfd the program made (eventfd, a copy of
 * one, or found by the first walk; "eventfd-count" in its fdinfo: a value written and not
 * read yet, which an event loop may use to pass an object with the wakeup), the messages
 * waiting in the System V queues it sent to (copied without taking them: msgrcv's MSG_COPY,
 * their bytes at every offset), the messages it sent to POSIX queues and not known to be
 * received yet, and their notifications' values (scan/mqlog.h), the value of a
 * POSIX timer's sigevent, once the program made a
 * timer that signals (/proc/self/timers), and the values of the signals the program queued to
 * itself with sigqueue or pthread_sigqueue, while one of that number is pending (ShdPnd and
 * each thread's SigPnd in /proc/self/status). An io_uring's completions wait in its ring,
 * memory of the process's (a root like any); once the ring is full they wait in the kernel's
 * overflow list, which the ring's /proc/self/fdinfo/<fd> lists with the buffers registered
 * with the ring (the kernel may write into one after the program freed it): both are scanned
 * too (rings are found from their mappings; liburing makes its system calls itself, so no
 * wrapper sees them made). What was written to the pipes and the local socket pairs (stream,
 * datagram, sequenced-packet) the program made (noted by the wrappers of pipe, pipe2 and
 * socketpair), to the local sockets connected to another of its own through an address
 * (accept, connect), and to its bound local datagram sockets (bind), and not read yet is
 * read at every mark, tee(2)'d or peeked, and its words at
 * every byte offset scanned. The user data of an
 * io_uring request still in flight and pointers the program hides are not seen (README,
 * Limitations). */
#ifndef OSCAR_SCAN_KROOTS_H
#define OSCAR_SCAN_KROOTS_H
#include "scan/roots.h"

/* fd is an epoll instance's (any thread, lock-free, no lock held or taken; signal-safe). */
void kroots_note_epoll(int fd);
/* The program made a POSIX timer that signals (any thread; signal-safe). */
void kroots_note_timer(void);
/* The program queued signal sig with value to itself (sigqueue, pthread_sigqueue): the value
 * is a root while such a signal is pending (any thread; signal-safe). */
void kroots_note_signal(int sig, uintptr_t value);
/* The io_uring rings the program has mapped, as the latest walk of its mappings found them:
 * a digest of their inodes, 0 for none (roots_for_each_of, the marking thread). A change
 * makes the next kroots_for_each look for their descriptors again. */
void kroots_rings(uint64_t digest);
/* fd is an epoll instance's that was noted: copies are noted as well (dup). */
bool kroots_is_epoll(int fd);
/* fd is an eventfd's (eventfd, or a copy of a noted one): its counter is a root (any thread,
 * lock-free; signal-safe). */
void kroots_note_eventfd(int fd);
bool kroots_is_eventfd(int fd);
/* The program is sending to System V message queue id (msgsnd): the messages waiting in it
 * are roots (any thread, lock-free; signal-safe). */
void kroots_note_msgq(int id);
/* fd is the read end of a pipe, or an end of a local socket pair, the program made (pipe,
 * pipe2, socketpair; or a copy of one): what is written to it and not read yet is a root
 * (any thread, lock-free; signal-safe). */
void kroots_note_stream(int fd);
bool kroots_is_stream(int fd);
/* fd is a local (AF_UNIX) socket the program connected (connect) or accepted (accept,
 * accept4): noted as a stream when the process at its other end is this one (SO_PEERCRED);
 * or, bound (bind), a datagram socket: anyone may send to it, this process too. Any thread;
 * keeps errno. */
void kroots_note_local_socket(int fd, bool bound);
/* Calls fn on the user data of every registration of every noted epoll instance, and on the
 * timers' values, in batches (kind ROOT_KERNEL). Forgets instances whose descriptor is
 * closed. From roots_for_each: the marking thread with the world stopped, one walk at a time
 * (its buffers are static), holding what its caller holds (a mark, or strict mode's proof
 * of recycled addresses) and taking no lock.
 * 0, or -errno (then no proof holds): -ENOSPC when the program had more epoll instances (or
 * eventfds, or message queues) than could be noted (or more queued signals, while any signal
 * is pending, or more io_urings than are read), -ENOTSUP when it made a timer and the kernel
 * has no /proc/self/timers, or sent to a message queue and the kernel cannot copy its
 * messages, -EBUSY when an io_uring's buffers could not be listed (its lock stayed busy) or
 * a parked thread holds the POSIX queues' log, -EMSGSIZE when what a pipe or socket pair
 * holds, or a message, could not be read whole (or a POSIX queue's message was not copied),
 * -EMFILE when no descriptor was left to read a pipe through. */
int kroots_for_each(roots_fn fn, void *arg);
#endif
