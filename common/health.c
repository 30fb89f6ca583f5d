/*
 * health — see health.h. The script only reads (TIME, ZRANGE, ZCOUNT,
 * ZMSCORE, HKEYS, HGET, GET), so it may run against a replica-backed primary under
 * any load without changing what the scanners see.
 */
#include "health.h"

#include <stdio.h>
#include <string.h>

#include "layout.h"

/*
 * In flight: the IDs of a claim's record in f (common/lua/lib/inflight.lua:
 * field = lease "<ms>.25", value cmsgpack of groups { deadline, { id, ... },
 * ... } and pairs { id, deadline, ... }) that
 * were not written since (not in the zset, or a repeating one still on the
 * lease), and the IDs holding an older kind of lease (".5", ".75": the
 * score) that has a record ("id deadline ..." or a space and cmsgpack). The
 * earliest deadline being dispatched counts only those: a reset one left
 * the record but is no longer in flight. A field that is not a lease (an
 * entry of lapse before records) is skipped, as claim.lua does.
 */
static const char health_lua[] =
    "local z, f = KEYS[1], KEYS[2]\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local first = redis.call('ZRANGE', z, 0, 0, 'WITHSCORES')\n"
    "local oldest = -1\n"
    "if first[2] and tonumber(first[2]) <= now then oldest = math.floor(tonumber(first[2])) end\n"
    "local inflight, earliest = 0, -1\n"
    "for _, l in ipairs(redis.call('HKEYS', f)) do\n"
    "    if string.sub(l, -3) == '.25' and tonumber(l) then\n"
    "        local groups, flat = cmsgpack.unpack(redis.call('HGET', f, l))\n"
    "        local list, ids = {}, {}\n"
    "        for g = 1, #groups, 2 do\n"
    "            for _, id in ipairs(groups[g + 1]) do list[#list + 1] = id; list[#list + 1] = groups[g] end\n"
    "        end\n"
    "        for i = 1, #flat do list[#list + 1] = flat[i] end\n"
    "        for i = 1, #list, 2 do ids[#ids + 1] = list[i] end\n"
    "        for k = 1, #ids, 1000 do\n"
    "            local cur = redis.call('ZMSCORE', z, unpack(ids, k, math.min(k + 999, #ids)))\n"
    "            for j = 1, #cur do\n"
    "                if not cur[j] or cur[j] == l then\n"
    "                    inflight = inflight + 1\n"
    "                    local d = tonumber(list[2 * (k + j - 1)])\n"
    "                    if d and (earliest < 0 or d < earliest) then earliest = d end\n"
    "                end\n"
    "            end\n"
    "        end\n"
    "    elseif string.find(l, '.', 1, true) and tonumber(l) then\n"
    "        local held = redis.call('ZRANGEBYSCORE', z, l, l)\n"
    "        inflight = inflight + #held\n"
    "        if #held > 0 then\n"
    "            local set = {}\n"
    "            for i = 1, #held do set[held[i]] = true end\n"
    "            local rec, list = redis.call('HGET', f, l), {}\n"
    "            if rec and string.byte(rec, 1) == 32 then list = cmsgpack.unpack(string.sub(rec, 2))\n"
    "            elseif rec then\n"
    "                for id, d in string.gmatch(rec, '([^ ]+) ([^ ]+)') do\n"
    "                    list[#list + 1] = id; list[#list + 1] = d\n"
    "                end\n"
    "            end\n"
    "            for i = 1, #list, 2 do\n"
    "                local d = tonumber(list[i + 1])\n"
    "                if set[list[i]] and d and (earliest < 0 or d < earliest) then earliest = d end\n"
    "            end\n"
    "        end\n"
    "    end\n"
    "end\n"
    "return { redis.call('ZCARD', z), redis.call('ZCOUNT', z, '-inf', now),\n"
    "         inflight, oldest, now, redis.call('GET', KEYS[3]) or '', earliest }\n";

int lapse_health_read(lapse_redis *r, const struct lapse_config *cfg, uint32_t shard,
                      struct lapse_health *out, char *errstr, size_t size)
{
    char z[LAPSE_KEY_MAX], f[LAPSE_KEY_MAX], l[LAPSE_KEY_MAX];
    lapse_key(z, sizeof z, cfg, LAPSE_KEY_DUE, shard);
    lapse_key(f, sizeof f, cfg, LAPSE_KEY_INFLIGHT, shard);
    lapse_key(l, sizeof l, cfg, LAPSE_KEY_LOCK, shard);
    redisReply *rep = lapse_redis_command(r, "EVAL %s 3 %s %s %s", health_lua, z, f, l);
    if (!rep) {
        snprintf(errstr, size, "%s", lapse_redis_errstr(r));
        return -2;
    }
    int ok = rep->type == REDIS_REPLY_ARRAY && rep->elements == 7;
    for (size_t i = 0; ok && i < 7; i++)
        ok = rep->element[i]->type == (i == 5 ? REDIS_REPLY_STRING : REDIS_REPLY_INTEGER);
    if (ok) {
        long long now = rep->element[4]->integer, oldest = rep->element[3]->integer;
        long long earliest = rep->element[6]->integer;
        out->now_ms = now;
        out->pending = rep->element[0]->integer;
        out->due = rep->element[1]->integer;
        out->inflight = rep->element[2]->integer;
        out->oldest_due_ms = oldest >= 0 ? now - oldest : -1;
        out->oldest_inflight_ms = earliest >= 0 && earliest <= now ? now - earliest : -1;
        snprintf(out->holder, sizeof out->holder, "%s", rep->element[5]->str);
    } else {
        snprintf(errstr, size, "%s: shard %u: unexpected reply to the counters' script%s%s",
                 lapse_redis_name(r), shard, rep->type == REDIS_REPLY_ERROR ? ": " : "",
                 rep->type == REDIS_REPLY_ERROR ? rep->str : "");
    }
    freeReplyObject(rep);
    return ok ? 0 : -1;
}

int64_t lapse_health_overdue_ms(const struct lapse_health *h)
{
    return h->oldest_due_ms > h->oldest_inflight_ms ? h->oldest_due_ms : h->oldest_inflight_ms;
}
