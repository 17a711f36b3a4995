/*
 * pipe_util.h - a pipe as the file a loader opens, for the tests of
 * streams: a child process writes the bytes, then either closes its end
 * (a file that ends) or holds it open for a while (a writer that stalls).
 * The loader opens /dev/fd/N, as a shell's <(...) hands it; alarm() makes
 * a loader that waits on the stalled pipe fail the test instead of
 * blocking it.
 */
#ifndef TG_TESTS_PIPE_UTIL_H
#define TG_TESTS_PIPE_UTIL_H

#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct test_pipe {
    char path[32]; /* /dev/fd/N: give it to the loader */
    int fd;
    pid_t pid;
} test_pipe;

/* Starts the writer of buf[0..n), holding the pipe `hold` seconds after
 * (0: closing it); arms a 20 s alarm.  0, or -1 if no pipe or process. */
static inline int test_pipe_open(test_pipe *p, const void *buf, size_t n, unsigned hold)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    p->pid = fork();
    if (p->pid == 0) {
        close(fd[0]);
        for (size_t k = 0; k < n;) {
            ssize_t w = write(fd[1], (const char *)buf + k, n - k);
            if (w <= 0)
                _exit(1);
            k += (size_t)w;
        }
        if (hold)
            sleep(hold);
        _exit(0);
    }
    close(fd[1]);
    p->fd = fd[0];
    snprintf(p->path, sizeof p->path, "/dev/fd/%d", fd[0]);
    alarm(20);
    return p->pid < 0 ? -1 : 0;
}

/* Disarms the alarm, closes the pipe and ends the writer. */
static inline void test_pipe_close(test_pipe *p)
{
    alarm(0);
    close(p->fd);
    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, NULL, 0);
    }
}

#endif
