/*
 * t — the unit-test harness (after beanstalkd's ct): a test is a function
 * declared with TEST(name); it registers itself before main runs. Each test
 * runs in a forked child, so a crash fails that test alone. CHECK records a
 * failure with file:line and goes on; REQUIRE stops the test.
 */
#ifndef LAPSE_T_H
#define LAPSE_T_H

#include <stdio.h>
#include <string.h>

void t_register(const char *name, void (*fn)(void));
void t_fail(const char *file, int line, const char *what);
void t_stop(void) __attribute__((noreturn));

#define TEST(name)                                                 \
    static void name(void);                                        \
    __attribute__((constructor)) static void name##_register(void) \
    {                                                              \
        t_register(#name, name);                                   \
    }                                                              \
    static void name(void)

#define CHECK(cond)                            \
    do {                                       \
        if (!(cond))                           \
            t_fail(__FILE__, __LINE__, #cond); \
    } while (0)

#define REQUIRE(cond)                          \
    do {                                       \
        if (!(cond)) {                         \
            t_fail(__FILE__, __LINE__, #cond); \
            t_stop();                          \
        }                                      \
    } while (0)

#define CHECK_STR(got, want)                                                                    \
    do {                                                                                        \
        const char *g_ = (got), *w_ = (want);                                                   \
        if (g_ == NULL || strcmp(g_, w_) != 0) {                                                \
            char m_[512];                                                                       \
            snprintf(m_, sizeof m_, "%s == \"%s\" (got \"%s\")", #got, w_, g_ ? g_ : "(null)"); \
            t_fail(__FILE__, __LINE__, m_);                                                     \
        }                                                                                       \
    } while (0)

#endif
