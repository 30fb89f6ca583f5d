/*
 * batch — the life of a claim in flight (struct batch, scanner_priv.h): its
 * references, one per flight not yet done with, and the scanner's settle
 * list of claims with acknowledged IDs. Calls nothing else of the scanner:
 * ack.c settles through it, lease.c empties it on a fence, scanner.c on
 * free.
 *
 * Keeps: a batch is freed (with the claim's reply, which holds its IDs)
 * exactly when its last flight is settled, given up or never sent; it is on
 * the settle list exactly while its acked list is not empty.
 */
#include <stdlib.h>

#include "redis.h"
#include "scanner_priv.h"

/* n flights of b are done with (settled, given up or never sent). */
void scanner_batch_unref(struct batch *b, size_t n)
{
    b->refs -= n;
    if (b->refs == 0) {
        freeReplyObject(b->reply);
        free(b);
    }
}

/* Takes the acknowledged flights of b up to `stop` off its list (and b off
 * the settle list when none are left); they are done with. */
void scanner_settled(lapse_scanner *s, struct batch *b, struct flight *stop)
{
    size_t n = 0;
    for (struct flight *f = b->acked; f != stop; f = f->next)
        n++;
    b->acked = stop;
    b->nacked -= n;
    if (!stop) { /* the list is short: batches with acks not yet settled */
        struct batch **pb = &s->settle;
        while (*pb != b)
            pb = &(*pb)->next;
        *pb = b->next;
        if (!b->next)
            s->settle_tail = pb;
    }
    scanner_batch_unref(b, n);
}

/* Gives up every acknowledged flight waiting to be settled. */
void scanner_drop_acks(lapse_scanner *s)
{
    while (s->settle)
        scanner_settled(s, s->settle, NULL);
}
