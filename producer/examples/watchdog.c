/*
 * A device-signal pipeline embedding lapse: every signal pushes the device's
 * "offline" deadline 60 s ahead; the batch is flushed when the input goes
 * quiet. Build: cc watchdog.c -Icommon -Iproducer liblapse... (see README).
 * Input: one device ID per line on stdin.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "producer.h"

static void on_error(void *ctx, uint64_t tag, const char *reason)
{
    (void)ctx;
    fprintf(stderr, "signal %" PRIu64 " not applied: %s\n", tag, reason);
}

int main(int argc, char **argv)
{
    char err[256], line[600];
    lapse_producer *p = lapse_producer_open(argc > 1 ? argv[1] : "lapse.conf", on_error, NULL,
                                            err, sizeof err);
    if (!p) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    uint64_t n = 0;
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strcspn(line, "\r\n");
        if (lapse_producer_extend(p, line, len, LAPSE_WHEN_REL, 60000, NULL, 0, ++n, err,
                                  sizeof err) < 0)
            fprintf(stderr, "signal %" PRIu64 ": %s\n", n, err);
    }
    int rc = lapse_producer_flush(p, err, sizeof err);
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    lapse_producer_free(p);
    return rc < 0;
}
