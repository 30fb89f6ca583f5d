/*
 * slack — what the producer last wrote for each ID, for bounded-slack
 * coalescing (producer.slack_ms).
 *
 * A watchdog extends a device's deadline on every signal, far more often
 * than the deadline needs to move. With slack S, the producer writes
 * "deadline + S" and remembers it here; a later extend whose deadline is not
 * past the remembered one is already covered (the pending deadline is at
 * least as late, and at most S later than the signal asked) and needs no
 * Redis write. So Redis sees about one write per ID per S ms; an ID never
 * fires early and at most S ms late.
 *
 * Entries whose deadline has passed are useless (the ID fired, or will) and
 * are swept when the table grows, so its size follows the live IDs. Pure
 * data structure: no I/O, the caller passes "now". Not thread-safe.
 */
#ifndef LAPSE_SLACK_H
#define LAPSE_SLACK_H

#include <stddef.h>
#include <stdint.h>

typedef struct lapse_slack lapse_slack;

lapse_slack *lapse_slack_new(void);    /* NULL on allocation failure */
void lapse_slack_free(lapse_slack *s); /* accepts NULL */

/* 1 if the deadline remembered for the ID is >= `at`, else 0. `hash` is
 * lapse_hash(id, len). When 1 and `mark` is not NULL, *mark is the mark the
 * deadline was remembered with. */
int lapse_slack_covered(const lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t at,
                        uint32_t *mark);

/* Remembers `deadline` for the ID (replacing what was there), with the
 * caller's `mark` (the producer: which batch writes it). Sweeps entries
 * older than `now` when it must grow. Returns 0, or -1 on allocation failure
 * (the table is unchanged). */
int lapse_slack_set(lapse_slack *s, uint64_t hash, const char *id, size_t len, int64_t deadline,
                    int64_t now, uint32_t mark);

/* A hint: the ID with this hash is about to be looked up. Starts loading
 * the memory the lookup reads first, so a caller that knows the next few
 * IDs overlaps their cache misses instead of waiting for each in turn. */
void lapse_slack_prefetch(const lapse_slack *s, uint64_t hash);

/* Forgets the ID (after a touch, repeat or cancel made the memory wrong). */
void lapse_slack_forget(lapse_slack *s, uint64_t hash, const char *id, size_t len);

size_t lapse_slack_count(const lapse_slack *s); /* IDs remembered */

#endif
