/* stop — see stop.h. */
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
