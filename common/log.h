/*
 * log — the one logging module of every lapse program.
 *
 * Lines go to stderr as "LEVEL program: message". The level is tested before
 * the arguments are evaluated (the macros), so a disabled debug line costs a
 * compare. Library code in common/ does not log: it returns errors; programs
 * decide what to say. lapse_log_limited() is for what bad input can trigger:
 * at most `per_sec` lines a second per call site, the rest counted and
 * summarised on the next line that gets through.
 */
#ifndef LAPSE_LOG_H
#define LAPSE_LOG_H

#include <stdint.h>

enum lapse_log_level {
    LAPSE_LOG_DEBUG = 0,
    LAPSE_LOG_INFO,
    LAPSE_LOG_WARN,
    LAPSE_LOG_ERROR,
};

extern int lapse_log_level_now; /* lines below this level are dropped */

/* Sets the program name shown on every line (not copied: pass a literal). */
void lapse_log_init(const char *program, int level);

/* Parses "debug", "info", "warn", "error"; returns the level or -1. */
int lapse_log_level_parse(const char *name);

void lapse_log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Rate-limited state of one call site; zero-initialise it (static). */
struct lapse_log_limit {
    int64_t window_ms;   /* start of the current one-second window */
    int printed;         /* lines printed in that window */
    uint64_t suppressed; /* lines dropped since the last printed one */
};

void lapse_log_limited(struct lapse_log_limit *lim, int per_sec, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define LAPSE_LOG(lvl, ...)                                          \
    do {                                                             \
        if ((lvl) >= lapse_log_level_now)                            \
            lapse_log_write((lvl), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define log_debug(...) LAPSE_LOG(LAPSE_LOG_DEBUG, __VA_ARGS__)
#define log_info(...) LAPSE_LOG(LAPSE_LOG_INFO, __VA_ARGS__)
#define log_warn(...) LAPSE_LOG(LAPSE_LOG_WARN, __VA_ARGS__)
#define log_error(...) LAPSE_LOG(LAPSE_LOG_ERROR, __VA_ARGS__)

#endif
