/* log — see log.h. Writes whole lines with one fprintf so lines from
 * concurrent processes sharing a terminal do not interleave mid-line. */
#include "log.h"
#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int lapse_log_level_now = LAPSE_LOG_INFO;
static const char *log_program = "lapse";
static const char *const log_names[] = {"debug", "info", "warn", "error"};

void lapse_log_init(const char *program, int level)
{
    log_program = program;
    lapse_log_level_now = level;
}

int lapse_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(name, log_names[i]) == 0)
            return i;
    return -1;
}

static void log_vwrite(int level, const char *file, int line, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (level < LAPSE_LOG_INFO || lapse_log_level_now == LAPSE_LOG_DEBUG)
        fprintf(stderr, "%s %s: %s (%s:%d)\n", log_names[level], log_program, msg, file, line);
    else
        fprintf(stderr, "%s %s: %s\n", log_names[level], log_program, msg);
}

void lapse_log_write(int level, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, file, line, fmt, ap);
    va_end(ap);
}

void lapse_log_limited(struct lapse_log_limit *lim, int per_sec, int level, const char *fmt, ...)
{
    if (level < lapse_log_level_now)
        return;
    int64_t now = lapse_clock_mono_ms();
    if (now - lim->window_ms >= 1000) {
        lim->window_ms = now;
        lim->printed = 0;
    }
    if (lim->printed >= per_sec) {
        lim->suppressed++;
        return;
    }
    lim->printed++;
    if (lim->suppressed) {
        fprintf(stderr, "%s %s: (%llu similar lines suppressed)\n", log_names[level], log_program,
                (unsigned long long)lim->suppressed);
        lim->suppressed = 0;
    }
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, "", 0, fmt, ap);
    va_end(ap);
}
