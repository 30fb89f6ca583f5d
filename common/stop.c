/* stop — see stop.h. */
#define _GNU_SOURCE /* pthread_setname_np */
#include "stop.h"

#include <string.h>

volatile sig_atomic_t lapse_stop;

static void on_stop_signal(int sig)
{
    (void)sig;
    lapse_stop = 1;
}

int lapse_stop_on_signals(int ignore_sigpipe)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0)
        return -1;
    if (!ignore_sigpipe)
        return 0;
    sa.sa_handler = SIG_IGN;
    return sigaction(SIGPIPE, &sa, NULL);
}

int lapse_stop_thread(pthread_t *thread, void *(*fn)(void *), void *arg, const char *name)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the new thread inherits the mask */
    int rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc == 0)
        pthread_setname_np(*thread, name);
    return rc;
}
