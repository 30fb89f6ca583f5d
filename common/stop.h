/*
 * stop — how a lapse program learns that it should stop: SIGTERM and SIGINT
 * only set lapse_stop, and the program's loop, seeing it, takes its own
 * clean way out (drain, release, exit 0). One handler for the programs
 * (lapse-tail, the tests' independent event reader, keeps its own), so
 * none of them can die by a signal's default action halfway.
 */
#ifndef LAPSE_STOP_H
#define LAPSE_STOP_H

#include <pthread.h>
#include <signal.h>

/* Set (to 1) by SIGTERM and SIGINT once lapse_stop_on_signals ran. */
extern volatile sig_atomic_t lapse_stop;

/*
 * Installs the handler for SIGTERM and SIGINT without SA_RESTART, so a
 * blocked poll, read or sleep returns (EINTR) at once. With ignore_sigpipe,
 * SIGPIPE is ignored as well: a write to a closed socket then fails with
 * EPIPE instead of killing the program (a command-line filter writing to a
 * pipe keeps the default, and ends with its reader). Call it before
 * anything slow, such as connecting. 0, or -1 with errno set.
 */
int lapse_stop_on_signals(int ignore_sigpipe);

/*
 * Starts fn(arg) on a helper thread named `name` (as top -H and perf show
 * it; 15 characters at most), with every signal blocked there: SIGTERM and
 * SIGINT then reach the main thread, whose blocked poll or read they must
 * interrupt. 0, or pthread_create's error.
 */
int lapse_stop_thread(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name);

#endif
