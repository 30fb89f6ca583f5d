/* prom — see prom.h. */
#include "prom.h"

#include <stdarg.h>
#include <stdio.h>

void lapse_prom_init(struct lapse_prom *o, char *buf, size_t size)
{
    o->buf = buf;
    o->size = size;
    o->len = 0;
    o->overflow = size == 0;
    if (size)
        buf[0] = '\0';
}

void lapse_prom_printf(struct lapse_prom *o, const char *fmt, ...)
{
    if (o->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->size - o->len) {
        o->overflow = 1;
        o->buf[o->len] = '\0'; /* no half line */
    } else {
        o->len += (size_t)n;
    }
}

void lapse_prom_family(struct lapse_prom *o, const char *name, const char *type, const char *help)
{
    lapse_prom_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void lapse_prom_escape(char *dst, size_t size, const char *src)
{
    size_t j = 0;
    if (size == 0)
        return;
    for (; *src; src++) {
        const char *rep = *src == '\\'   ? "\\\\"
                          : *src == '"'  ? "\\\""
                          : *src == '\n' ? "\\n"
                                         : NULL;
        size_t need = rep ? 2 : 1;
        if (j + need >= size)
            break;
        if (rep)
            dst[j++] = rep[0], dst[j++] = rep[1];
        else
            dst[j++] = *src;
    }
    dst[j] = '\0';
}

void lapse_prom_observe(const struct lapse_prom_hist *h, int64_t v)
{
    if (v < 0)
        v = 0;
    size_t b = 0;
    while (b < h->n && v > h->bounds[b])
        b++;
    atomic_fetch_add_explicit(&h->counts[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(h->sum, (uint64_t)v, memory_order_relaxed);
}

void lapse_prom_histogram(struct lapse_prom *o, const char *name, const char *help,
                          const char *labels, const struct lapse_prom_hist *h)
{
    unsigned long long cum = 0;
    lapse_prom_family(o, name, "histogram", help);
    for (size_t b = 0; b < h->n; b++) {
        cum += atomic_load_explicit(&h->counts[b], memory_order_relaxed);
        /* %.17g would print 0.001 as 0.0010000000000000000208: %g reads as written */
        lapse_prom_printf(o, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels,
                          (double)h->bounds[b] / h->per_second, cum);
    }
    cum += atomic_load_explicit(&h->counts[h->n], memory_order_relaxed);
    lapse_prom_printf(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, cum);
    lapse_prom_printf(o, "%s_sum{%s} %.6f\n", name, labels,
                      (double)atomic_load_explicit(h->sum, memory_order_relaxed) / h->per_second);
    lapse_prom_printf(o, "%s_count{%s} %llu\n", name, labels, cum);
}

int lapse_prom_end(const struct lapse_prom *o)
{
    return o->overflow ? -1 : (int)o->len;
}
