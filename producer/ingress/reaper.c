/*
 * reaper — destroys what a thread is done with on a thread of its own (see
 * reaper.h for why).
 *
 * Three lists of items, each owned by one side at a time: `staged` by the
 * owner (put, no lock), `handed` under the lock, `work` by the thread while
 * it destroys. A hand-over moves staged into handed (a swap when handed is
 * empty, the usual case); the thread swaps handed with its empty work list
 * and destroys outside the lock. `busy` counts work's items while it is
 * not empty, so handed + busy is the backlog, and both zero means
 * everything handed is destroyed.
 */
#include "reaper.h"

#include <pthread.h>
#include <stdlib.h>

#include "stop.h"

#define REAPER_FIRST 1024 /* a list's first capacity */

struct list {
    void **item;   /* the items, in the order put */
    size_t n, cap; /* items held, room for */
};

struct lapse_reaper {
    void (*destroy)(void *item); /* the owner's: what destroying an item is */
    int threaded;                /* the thread runs: else the owner destroys */
    pthread_t thread;            /* reaper_main, when threaded */
    pthread_mutex_t lock;        /* over handed, busy, stop, and the two conditions */
    pthread_cond_t more;         /* something handed, or stop */
    pthread_cond_t idle;         /* nothing handed or busy */
    struct list staged;          /* the owner's */
    struct list handed;          /* under lock */
    size_t busy;                 /* under lock: items the thread is destroying */
    int stop;                    /* under lock: the thread ends once nothing is handed */
};

static void list_swap(struct list *a, struct list *b)
{
    struct list t = *a;
    *a = *b;
    *b = t;
}

/* Room for `more` items in l; -1 when out of memory (l unchanged). */
static int list_room(struct list *l, size_t more)
{
    if (l->n + more <= l->cap)
        return 0;
    size_t cap = l->cap ? l->cap : REAPER_FIRST;
    while (cap < l->n + more)
        cap *= 2;
    void **item = realloc(l->item, cap * sizeof *item);
    if (!item)
        return -1;
    l->item = item;
    l->cap = cap;
    return 0;
}

static void list_destroy_all(struct list *l, void (*destroy)(void *item))
{
    for (size_t i = 0; i < l->n; i++)
        destroy(l->item[i]);
    l->n = 0;
}

static void *reaper_main(void *arg)
{
    lapse_reaper *r = arg;
    struct list work = {0};
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->handed.n && !r->stop)
            pthread_cond_wait(&r->more, &r->lock);
        if (!r->handed.n)
            break; /* stopped, and nothing left */
        list_swap(&work, &r->handed);
        r->busy = work.n;
        pthread_mutex_unlock(&r->lock);
        list_destroy_all(&work, r->destroy);
        pthread_mutex_lock(&r->lock);
        r->busy = 0;
        if (!r->handed.n)
            pthread_cond_broadcast(&r->idle);
    }
    pthread_mutex_unlock(&r->lock);
    free(work.item);
    return NULL;
}

lapse_reaper *lapse_reaper_new(void (*destroy)(void *item))
{
    lapse_reaper *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->destroy = destroy;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        return r; /* unthreaded */
    if (pthread_cond_init(&r->more, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        return r;
    }
    if (pthread_cond_init(&r->idle, NULL) != 0) {
        pthread_cond_destroy(&r->more);
        pthread_mutex_destroy(&r->lock);
        return r;
    }
    r->threaded = lapse_stop_thread(&r->thread, reaper_main, r, "lapse-reaper") == 0;
    if (!r->threaded) {
        pthread_cond_destroy(&r->idle);
        pthread_cond_destroy(&r->more);
        pthread_mutex_destroy(&r->lock);
    }
    return r;
}

void lapse_reaper_put(lapse_reaper *r, void *item)
{
    if (!r->threaded || list_room(&r->staged, 1) < 0) {
        r->destroy(item);
        return;
    }
    r->staged.item[r->staged.n++] = item;
}

void lapse_reaper_hand(lapse_reaper *r)
{
    if (!r->staged.n)
        return;
    int handed = 0;
    pthread_mutex_lock(&r->lock);
    if (r->handed.n + r->busy + r->staged.n <= LAPSE_REAPER_BACKLOG) {
        if (!r->handed.n) {
            list_swap(&r->staged, &r->handed);
            handed = 1;
        } else if (list_room(&r->handed, r->staged.n) == 0) {
            for (size_t i = 0; i < r->staged.n; i++)
                r->handed.item[r->handed.n++] = r->staged.item[i];
            r->staged.n = 0;
            handed = 1;
        }
    }
    if (handed)
        pthread_cond_signal(&r->more);
    pthread_mutex_unlock(&r->lock);
    if (!handed) /* far behind, or out of memory: the owner does it */
        list_destroy_all(&r->staged, r->destroy);
}

void lapse_reaper_drain(lapse_reaper *r)
{
    if (!r->threaded)
        return;
    lapse_reaper_hand(r);
    pthread_mutex_lock(&r->lock);
    while (r->handed.n || r->busy)
        pthread_cond_wait(&r->idle, &r->lock);
    pthread_mutex_unlock(&r->lock);
}

void lapse_reaper_free(lapse_reaper *r)
{
    if (!r)
        return;
    if (r->threaded) {
        lapse_reaper_drain(r);
        pthread_mutex_lock(&r->lock);
        r->stop = 1;
        pthread_cond_signal(&r->more);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
        pthread_cond_destroy(&r->idle);
        pthread_cond_destroy(&r->more);
        pthread_mutex_destroy(&r->lock);
    }
    free(r->staged.item);
    free(r->handed.item);
    free(r);
}
