/*
 * script — the server-side Lua scripts lapse runs (the .lua files of common/lua, embedded
 * at build time). Each is loaded once per connection with SCRIPT LOAD and
 * called by SHA; lapse_redis reloads them after a reconnect or NOSCRIPT.
 */
#ifndef LAPSE_SCRIPT_H
#define LAPSE_SCRIPT_H

enum lapse_script {
    LAPSE_SCRIPT_APPLY = 0, /* producer ops on one shard (apply.lua) */
    LAPSE_SCRIPT_CLAIM,     /* take due IDs for dispatch (claim.lua) */
    LAPSE_SCRIPT_ACK,       /* compare-and-delete after Kafka ack (ack.lua) */
    LAPSE_SCRIPT_ACQUIRE,   /* become a shard's active scanner (acquire.lua) */
    LAPSE_SCRIPT_RELEASE,   /* give the shard up on shutdown (release.lua) */
    LAPSE_SCRIPT_TAKE,      /* split: reserve old-shard twins (take.lua) */
    LAPSE_SCRIPT_SEED,      /* split: copy twins into the new shard (seed.lua) */
    LAPSE_SCRIPT_DROP,      /* split: remove stale twins (drop.lua) */
    LAPSE_SCRIPT_SLEEP,     /* idle scanner: renew the lock, mark its nap (sleep.lua) */
    LAPSE_SCRIPT_MOVED,     /* split: which IDs a new shard holds markers of (moved.lua) */
    LAPSE_SCRIPT_FORGET,    /* scanner: offline IDs past the retention (forget.lua) */
    LAPSE_SCRIPT_COUNT
};

/* take.lua's reply, by name: the lease (element 0), then for each ID asked
 * LAPSE_TAKE_PARTS elements (its header says what each holds). */
enum lapse_take_part {
    LAPSE_TAKE_STATE,    /* "t" taken, "b" busy (in flight), "a" absent */
    LAPSE_TAKE_DEADLINE, /* the twin's deadline (t, b) */
    LAPSE_TAKE_PAYLOAD,  /* its payload, or nil */
    LAPSE_TAKE_REPEAT,   /* its repeat record, or nil */
    LAPSE_TAKE_WATCH,    /* its watch record (lib/watch.lua), or nil */
    LAPSE_TAKE_PARTS
};

/* The Lua source of script `s`. */
const char *lapse_script_source(enum lapse_script s);

#endif
