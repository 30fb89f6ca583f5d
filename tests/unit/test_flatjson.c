/*
 * test_flatjson — the flat-object scanner of raw signals: what it reads,
 * and that it never accepts what the ingress's jansson load would read
 * otherwise (or refuse): every input it accepts decodes to the same
 * members with jansson, and every input jansson refuses it refuses too.
 */
#include "command.h"
#include "flatjson.h"
#include "t.h"

#include <string.h>

/* Scans s; when accepted, jansson must decode the same members. */
static int scan(const char *s, struct lapse_flatjson *o)
{
    char jerr[256];
    json_t *j = lapse_command_load(s, strlen(s), jerr, sizeof jerr);
    int rc = lapse_flatjson_scan(s, strlen(s), o);
    if (rc == 0) {
        CHECK(json_is_object(j));
        CHECK(json_object_size(j) == o->n);
        for (size_t i = 0; i < o->n; i++) {
            char key[64];
            REQUIRE(o->m[i].key_len < sizeof key);
            memcpy(key, o->m[i].key, o->m[i].key_len);
            key[o->m[i].key_len] = '\0';
            const json_t *v = json_object_get(j, key);
            const struct lapse_flatjson_value *f = &o->m[i].v;
            switch (f->type) {
            case LAPSE_FLATJSON_STRING:
                CHECK(json_is_string(v) && json_string_length(v) == f->len &&
                      memcmp(json_string_value(v), f->str, f->len) == 0);
                break;
            case LAPSE_FLATJSON_INTEGER:
                CHECK(json_is_integer(v) && json_integer_value(v) == f->num);
                break;
            case LAPSE_FLATJSON_TRUE:
                CHECK(json_is_true(v));
                break;
            case LAPSE_FLATJSON_FALSE:
                CHECK(json_is_false(v));
                break;
            case LAPSE_FLATJSON_NULL:
                CHECK(json_is_null(v));
                break;
            case LAPSE_FLATJSON_NONE:
                CHECK(0);
                break;
            }
        }
    } else if (j == NULL) {
        CHECK(rc == -1); /* (trivially: jansson refuses, so must we) */
    }
    json_decref(j);
    return rc;
}

TEST(flatjson_reads_a_flat_signal)
{
    struct lapse_flatjson o;
    REQUIRE(scan(" {\"device\" : \"dev-17\",\"ts\":1795303123000, \"t\":-4,\"ok\":true,"
                 "\"bad\":false,\"x\":null,\"\":\"\"}\n",
                 &o) == 0);
    CHECK(o.n == 7);
    struct lapse_flatjson_value v = lapse_flatjson_get(&o, "device");
    CHECK(v.type == LAPSE_FLATJSON_STRING && v.len == 6 && memcmp(v.str, "dev-17", 6) == 0);
    CHECK(lapse_flatjson_get(&o, "ts").type == LAPSE_FLATJSON_INTEGER);
    CHECK(lapse_flatjson_get(&o, "ts").num == 1795303123000);
    CHECK(lapse_flatjson_get(&o, "t").num == -4);
    CHECK(lapse_flatjson_get(&o, "ok").type == LAPSE_FLATJSON_TRUE);
    CHECK(lapse_flatjson_get(&o, "bad").type == LAPSE_FLATJSON_FALSE);
    CHECK(lapse_flatjson_get(&o, "x").type == LAPSE_FLATJSON_NULL);
    CHECK(lapse_flatjson_get(&o, "").type == LAPSE_FLATJSON_STRING);
    CHECK(lapse_flatjson_get(&o, "dev").type == LAPSE_FLATJSON_NONE);
    CHECK(scan("{}", &o) == 0 && o.n == 0);
    CHECK(scan("{\"n\":-0}", &o) == 0 && lapse_flatjson_get(&o, "n").num == 0);
    CHECK(scan("{\"n\":123456789012345678}", &o) == 0);
}

TEST(flatjson_leaves_the_rest_to_jansson)
{
    struct lapse_flatjson o;
    static const char *const others[] = {
        "",                            /* not JSON */
        "[1]",                         /* an array */
        "\"dev\"",                     /* not an object */
        "{\"a\":{\"b\":1}}",           /* nesting */
        "{\"a\":[1]}",                 /* nesting */
        "{\"a\":\"x\\\"y\"}",          /* an escape */
        "{\"a\\u0041\":1}",            /* an escape in a key */
        "{\"a\":\"\xc3\xa9\"}",        /* UTF-8 */
        "{\"a\":1.5}",                 /* a fraction */
        "{\"a\":1e3}",                 /* an exponent */
        "{\"a\":01}",                  /* a leading zero: invalid JSON */
        "{\"a\":1234567890123456789}", /* 19 digits */
        "{\"a\":-}",                   /* invalid */
        "{\"a\":1,\"a\":2}",           /* a duplicate: jansson's reason */
        "{\"a\":1,}",                  /* a trailing comma */
        "{\"a\":1} x",                 /* something after it */
        "{\"a\":1}{}",                 /* two values */
        "{\"a\" 1}",                   /* no colon */
        "{\"a\":tru}",                 /* a bad literal */
        "{\"a\":nul",                  /* cut */
        "{\"a\":\"x",                  /* cut in a string */
        "{\"a\":\"x\ty\"}",            /* a control byte in a string */
        "{\"a\":\"\x7f\"}",            /* DEL: valid JSON, but left to jansson */
        "{\"1\":1,\"2\":2,\"3\":3,\"4\":4,\"5\":5,\"6\":6,\"7\":7,\"8\":8,\"9\":9,"
        "\"10\":10,\"11\":11,\"12\":12,\"13\":13,\"14\":14,\"15\":15,\"16\":16,\"17\":17}",
    };
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        CHECK(scan(others[i], &o) == -1);
    /* cut anywhere, a flat object is refused, never misread */
    const char *full = "{\"device\":\"dev-1\",\"ts\":17,\"on\":true}";
    for (size_t n = 0; n < strlen(full); n++)
        CHECK(lapse_flatjson_scan(full, n, &o) == -1);
}
