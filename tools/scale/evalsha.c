/*
 * evalsha — see evalsha.h.
 */
#include "evalsha.h"

#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define SCRIPTS 8 /* more than lapse-scale has */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *known_src[SCRIPTS];
static char known_sha[SCRIPTS][41];

const char *lapse_scale_script_sha(const char *src)
{
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < SCRIPTS && known_src[i] && known_src[i] != src)
        i++;
    if (i < SCRIPTS && !known_src[i]) {
        unsigned char md[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)src, strlen(src), md);
        for (int k = 0; k < SHA_DIGEST_LENGTH; k++)
            snprintf(known_sha[i] + 2 * k, 3, "%02x", md[k]);
        known_src[i] = src;
    }
    /* (a table full of other scripts cannot happen: SCRIPTS is more than
     * there are; it would give a SHA no server knows, and so EVAL) */
    const char *sha = i < SCRIPTS ? known_sha[i] : "0000000000000000000000000000000000000000";
    pthread_mutex_unlock(&lock);
    return sha;
}

int lapse_scale_noscript(const redisReply *rep)
{
    return rep && rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "NOSCRIPT", 8) == 0;
}
