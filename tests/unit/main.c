/* The unit-test runner: runs every registered test in its own child process
 * and ends with the line "unit: N passed, N failed". Arguments, if any, are
 * substrings selecting the tests to run. */
#include "t.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define T_MAX 512

static struct {
    const char *name;
    void (*fn)(void);
} tests[T_MAX];
static int ntests;
static int failed_here;

void t_register(const char *name, void (*fn)(void))
{
    if (ntests < T_MAX) {
        tests[ntests].name = name;
        tests[ntests++].fn = fn;
    }
}

void t_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "    %s:%d: check failed: %s\n", file, line, what);
    failed_here = 1;
}

void t_stop(void)
{
    exit(1);
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc < 2)
        return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i]))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (!selected(tests[i].name, argc, argv))
            continue;
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            tests[i].fn();
            exit(failed_here ? 1 : 0);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        printf("%s %s\n", ok ? "ok  " : "FAIL", tests[i].name);
        if (!ok && WIFSIGNALED(st))
            printf("    killed by signal %d\n", WTERMSIG(st));
        ok ? passed++ : failed++;
    }
    printf("unit: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
