/* spawn.c - running a tool (the C compiler, nvcc): one way for nnkc -c,
 * nnkc's fat objects and the runtime's JIT.
 *
 * A library cannot own the host's SIGCHLD: a host that ignores it has
 * its children reaped by the kernel (waitpid then fails with ECHILD), and
 * a host handler that reaps with waitpid(-1) steals their statuses.  So
 * the tool is not the caller's child: a private waiter is, started with
 * clone() and an exit signal of 0.  Such a "clone child" sends no
 * SIGCHLD, is never reaped automatically, and only waitpid(pid, __WCLONE)
 * sees it (waitpid(-1, ...) without __WALL ignores it); it keeps that
 * exit signal because it never execs (the kernel resets it to SIGCHLD
 * for a process that does).  The waiter starts the tool, waits for it and
 * writes its status on a pipe; the pipe's end of file says the waiter is
 * gone, so the wait is a poll() with a deadline.
 *
 * The waiter and the tool are copies of the calling thread (no CLONE_VM)
 * and run only raw system calls until execve: other threads may hold
 * locks of libc or of a sanitizer runtime at the moment of the copy.  The
 * waiter makes a process group of its own, so that a timeout kills the
 * tool and the tool's own children (cc1, as, ld) with it; it sets SIGCHLD
 * to the default (for the tool too: the compiler waits for its children).
 * The tool gets caught signals reset to the default, the caller's signal
 * mask, stdin from a socket (the input) or /dev/null, and stdout and
 * stderr into one pipe.  The input is written with MSG_NOSIGNAL so that a
 * tool that exits early cannot raise SIGPIPE in the host.
 */
#define _GNU_SOURCE
#include "nnkc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

long nnkc_tool_timeout_ms(void)
{
    const char *v = getenv("NNK_COMPILE_TIMEOUT");
    if (!v || !*v)
        return NNKC_DEFAULT_TIMEOUT_S * 1000L;
    char *end;
    double s = strtod(v, &end);
    if (end == v || *end || !(s >= 0) || s > 86400.0 * 365)
        return NNKC_DEFAULT_TIMEOUT_S * 1000L; /* not a number of seconds: the default */
    long ms = (long)(s * 1000.0 + 0.5);
    return s > 0 && ms == 0 ? 1 : ms; /* 0: no limit */
}

/* execvp's search, done before the copy (the child must not allocate). */
bool nnkc_find_program(const char *name, char *out, size_t n)
{
    if (strchr(name, '/'))
        return (size_t)snprintf(out, n, "%s", name) < n;
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;; p++) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        int w = snprintf(out, n, "%.*s%s%s", (int)len, p, len ? "/" : "", name);
        if (w > 0 && (size_t)w < n && access(out, X_OK) == 0)
            return true;
        if (!e)
            return false;
        p = e;
    }
}

/* Messages on the status pipe: {kind, value}. */
enum { MSG_EXEC_FAILED = 1, MSG_STATUS = 2 };

/* The kernel's struct sigaction, for the raw system call (the handler
 * is its first member on the architectures glibc's layout matches). */
struct ksigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

static long raw(long nr, long a, long b, long c, long d)
{
    return syscall(nr, a, b, c, d, 0L);
}

/* The tool, between its clone() and execve(): raw system calls only. */
__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) static void
tool(const char *path, char *const *argv, int in, int out, int err_pipe, const sigset_t *mask)
{
    for (long sig = 1; sig < 65; sig++) {
        struct ksigaction old, dfl = {0};
        if (sig == SIGKILL || sig == SIGSTOP || raw(SYS_rt_sigaction, sig, 0, (long)&old, 8) != 0)
            continue;
        if (old.handler != (void *)SIG_DFL && old.handler != (void *)SIG_IGN)
            raw(SYS_rt_sigaction, sig, (long)&dfl, 0, 8);
    }
    bool ok = raw(SYS_dup3, in, 0, 0, 0) == 0;
    if (out >= 0)
        ok = ok && raw(SYS_dup3, out, 1, 0, 0) == 1 && raw(SYS_dup3, out, 2, 0, 0) == 2;
    raw(SYS_rt_sigprocmask, SIG_SETMASK, (long)mask, 0, 8);
    int msg[2] = {MSG_EXEC_FAILED, EBADF};
    if (ok) {
        raw(SYS_execve, (long)path, (long)argv, (long)environ, 0);
        msg[1] = errno;
    }
    raw(SYS_write, err_pipe, (long)msg, sizeof msg, 0);
    raw(SYS_exit_group, 127, 0, 0, 0);
}

/* The private waiter: a clone child with no exit signal (it never execs,
 * so the kernel keeps it that way), in a process group of its own, with
 * SIGCHLD at the default.  It starts the tool, waits for it and sends its
 * status on the status pipe, whose end of file then says the waiter is
 * gone.  (Not its exit status: under valgrind a copy of a process exits
 * through valgrind's leak check.)  Raw system calls only. */
__attribute__((noinline, no_sanitize("address", "thread", "undefined"))) static void
waiter(const char *path, char *const *argv, const int *fds, const sigset_t *mask)
{
    /* fds: in, out, the status pipe, then the caller's ends to close here */
    raw(SYS_setpgid, 0, 0, 0, 0);
    struct ksigaction dfl = {0};
    raw(SYS_rt_sigaction, SIGCHLD, (long)&dfl, 0, 8);
    for (int i = 3; i < 6; i++)
        if (fds[i] >= 0)
            raw(SYS_close, fds[i], 0, 0, 0);
    /* Every other descriptor too: the caller's ends of the pipes of tools
     * it runs at the same time (nnkc_runs_*, other threads) would else
     * stay open here while this tool runs, and a tool reading its input to
     * the end would wait for this one.  (Before Linux 5.9 there is no
     * close_range; those are then left as before.) */
    int keep[3] = {fds[0], fds[1], fds[2]};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (keep[j] < keep[i]) {
                int x = keep[i];
                keep[i] = keep[j];
                keep[j] = x;
            }
    long lo = 3;
    for (int i = 0; i < 3; i++) {
        if (keep[i] < lo)
            continue;
        if (keep[i] > lo)
            raw(SYS_close_range, lo, keep[i] - 1, 0, 0);
        lo = keep[i] + 1;
    }
    raw(SYS_close_range, lo, ~0U, 0, 0);
    long pid = raw(SYS_clone, SIGCHLD, 0, 0, 0);
    if (pid == 0)
        tool(path, argv, fds[0], fds[1], fds[2], mask);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            raw(SYS_close, fds[i], 0, 0, 0);
    int st = 0, msg[2] = {MSG_STATUS, 127};
    if (pid > 0) {
        long w;
        while ((w = raw(SYS_wait4, pid, (long)&st, 0, 0)) < 0 && errno == EINTR)
            ;
        if (w == pid)
            msg[1] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    raw(SYS_write, fds[2], (long)msg, sizeof msg, 0);
    raw(SYS_exit_group, 0, 0, 0, 0);
}

/* An fd at 3 or above (0, 1 and 2 are the child's), close-on-exec. */
static int high_fd(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    int h = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return h;
}

static long now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Appends to t->out what fits (the rest of a long log is dropped). */
static void keep_output(NnkcTool *t, const char *buf, size_t n)
{
    if (t->outcap < 2 || t->outlen >= t->outcap - 1)
        return;
    if (n > t->outcap - 1 - t->outlen)
        n = t->outcap - 1 - t->outlen;
    memcpy(t->out + t->outlen, buf, n);
    t->outlen += n;
    t->out[t->outlen] = 0;
}

static void kill_tree(pid_t pid)
{
    kill(-pid, SIGKILL); /* the group: the compiler's children too */
    kill(pid, SIGKILL);
}

/* One tool being run: the caller's ends of its pipes and what came back. */
typedef struct Run {
    NnkcTool *t;
    char *const *argv;
    pid_t pid;
    int feed, out, st; /* its stdin (socket), its output, the status pipe: -1 once closed */
    size_t fed;
    long deadline; /* 0: none */
    int msg[2], got_msg, status, exec_err, poll_err;
} Run;

/* Starts r->argv; 0, or -1 with r->t->err (nothing left open). */
static int run_start(Run *r)
{
    NnkcTool *t = r->t;
    char *const *argv = r->argv;
    t->err = 0;
    t->timed_out = false;
    t->outlen = 0;
    if (t->out && t->outcap)
        t->out[0] = 0;
    r->pid = -1;
    r->feed = r->out = r->st = -1;
    r->fed = 0;
    r->got_msg = r->exec_err = r->poll_err = 0;
    r->status = -1;
    char path[PATH_MAX];
    if (!argv[0] || !nnkc_find_program(argv[0], path, sizeof path)) {
        t->err = ENOENT;
        return -1;
    }
    int in = -1, feed = -1, outp[2] = {-1, -1}, stp[2] = {-1, -1};
    bool capture = t->out != NULL;
    if (t->in) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0)
            in = sv[0], feed = sv[1];
    } else {
        in = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    in = high_fd(in);
    feed = high_fd(feed);
    if (capture && pipe2(outp, O_CLOEXEC) == 0)
        outp[0] = high_fd(outp[0]), outp[1] = high_fd(outp[1]);
    if (pipe2(stp, O_CLOEXEC) == 0)
        stp[0] = high_fd(stp[0]), stp[1] = high_fd(stp[1]);
    pid_t pid = -1;
    if (in >= 0 && (!t->in || feed >= 0) && (!capture || (outp[0] >= 0 && outp[1] >= 0)) && stp[0] >= 0 &&
        stp[1] >= 0) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = (pid_t)syscall(SYS_clone, 0UL, 0L, 0L, 0L, 0L); /* exit signal 0 */
        if (pid == 0) {
            int fds[6] = {in, capture ? outp[1] : -1, stp[1], feed, outp[0], stp[0]};
            waiter(path, argv, fds, &old);
        }
        if (pid < 0)
            t->err = errno;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    } else {
        t->err = errno ? errno : EMFILE;
    }
    if (in >= 0)
        close(in);
    if (outp[1] >= 0)
        close(outp[1]);
    if (stp[1] >= 0)
        close(stp[1]);
    if (pid < 0) {
        if (feed >= 0)
            close(feed);
        if (outp[0] >= 0)
            close(outp[0]);
        if (stp[0] >= 0)
            close(stp[0]);
        return -1;
    }
    r->pid = pid;
    r->feed = feed;
    r->out = outp[0];
    r->st = stp[0];
    r->deadline = t->timeout_ms > 0 ? now_ms() + t->timeout_ms : 0;
    return 0;
}

/* What poll() said of r's descriptors p[0..]: the input fed, the output
 * kept, the status read; returns the number of pollfds r used. */
static int run_events(Run *r, const struct pollfd *p)
{
    NnkcTool *t = r->t;
    int k = 0;
    if (r->feed >= 0) {
        if (p[k++].revents) {
            ssize_t w = send(r->feed, t->in + r->fed, t->inlen - r->fed, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                r->fed += (size_t)w;
            if ((w < 0 && errno != EINTR && errno != EAGAIN) || r->fed == t->inlen) {
                close(r->feed); /* EOF for the tool; EPIPE: it stopped reading */
                r->feed = -1;
            }
        }
    }
    if (r->out >= 0) {
        if (p[k++].revents) {
            char buf[4096];
            ssize_t n = read(r->out, buf, sizeof buf);
            if (n > 0)
                keep_output(t, buf, (size_t)n);
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                close(r->out);
                r->out = -1;
            }
        }
    }
    if (r->st >= 0) {
        if (p[k++].revents) {
            ssize_t n = read(r->st, (char *)r->msg + r->got_msg, sizeof r->msg - (size_t)r->got_msg);
            if (n > 0 && (r->got_msg += (int)n) == (int)sizeof r->msg) {
                r->got_msg = 0;
                if (r->msg[0] == MSG_EXEC_FAILED)
                    r->exec_err = r->msg[1];
                else if (r->msg[0] == MSG_STATUS)
                    r->status = r->msg[1];
            }
            if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
                close(r->st); /* the waiter is gone */
                r->st = -1;
            }
        }
    }
    return k;
}

static int run_fds(const Run *r, struct pollfd *p)
{
    int k = 0;
    if (r->feed >= 0)
        p[k++] = (struct pollfd){.fd = r->feed, .events = POLLOUT};
    if (r->out >= 0)
        p[k++] = (struct pollfd){.fd = r->out, .events = POLLIN};
    if (r->st >= 0)
        p[k++] = (struct pollfd){.fd = r->st, .events = POLLIN};
    return k;
}

/* The tool has ended (its status pipe closed) or was killed: the rest of
 * its output, its descriptors closed, the waiter reaped; nnkc_tool_run's
 * return value. */
static int run_finish(Run *r)
{
    NnkcTool *t = r->t;
    /* what it wrote is in the pipe (a child of its own that keeps the
     * pipe open is not waited for) */
    if (r->out >= 0 && !t->timed_out && fcntl(r->out, F_SETFL, O_NONBLOCK) == 0) {
        char buf[4096];
        ssize_t n;
        while ((n = read(r->out, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
            if (n > 0)
                keep_output(t, buf, (size_t)n);
    }
    if (r->feed >= 0)
        close(r->feed);
    if (r->out >= 0)
        close(r->out);
    if (r->st >= 0)
        close(r->st);
    r->feed = r->out = r->st = -1;
    int ws;
    while (waitpid(r->pid, &ws, __WCLONE) < 0 && errno == EINTR)
        ;
    r->pid = -1;
    if (t->timed_out)
        return -1;
    if (r->poll_err) {
        t->err = r->poll_err;
        return -1;
    }
    if (r->exec_err) {
        t->err = r->exec_err;
        return -1;
    }
    if (r->status < 0) {
        t->err = ECHILD; /* the waiter died without a word (killed from outside) */
        return -1;
    }
    return r->status;
}

/* One poll() over the running tools rs[0..n-1]: the index of one that has
 * ended (or was killed: over its deadline, or poll failed), else -1. */
static int run_step(Run *const *rs, int n)
{
    long now = now_ms(), wait = -1;
    for (int i = 0; i < n; i++) {
        Run *r = rs[i];
        if (r->st < 0)
            return i;
        if (r->deadline) {
            long left = r->deadline - now;
            if (left <= 0) {
                r->t->timed_out = true;
                kill_tree(r->pid);
                return i;
            }
            if (wait < 0 || left < wait)
                wait = left;
        }
    }
    enum { MAXP = 3 * 64 };
    struct pollfd p[MAXP];
    int np = 0;
    for (int i = 0; i < n && np + 3 <= MAXP; i++)
        np += run_fds(rs[i], p + np);
    int k = poll(p, (nfds_t)np, wait > INT_MAX ? INT_MAX : (int)wait);
    if (k < 0 && errno != EINTR) {
        /* no way left to enforce the deadline: end the tools rather
         * than wait for them unbounded */
        for (int i = 0; i < n; i++) {
            rs[i]->poll_err = errno;
            kill_tree(rs[i]->pid);
        }
        return 0;
    }
    if (k <= 0)
        return -1;
    np = 0;
    for (int i = 0; i < n && np + 3 <= MAXP; i++)
        np += run_events(rs[i], p + np);
    for (int i = 0; i < n; i++)
        if (rs[i]->st < 0)
            return i;
    return -1;
}

int nnkc_tool_run(char *const *argv, NnkcTool *t)
{
    Run r = {.t = t, .argv = argv};
    if (run_start(&r) < 0)
        return -1;
    Run *rs[1] = {&r};
    while (run_step(rs, 1) < 0)
        ;
    return run_finish(&r);
}

/* ---- several tools at once ------------------------------------------------------------ */

struct NnkcRuns {
    int jobs;
    int n, cap;  /* runs added, room (fixed: the running ones point into runs) */
    int next;    /* the first not started */
    int first;   /* after the last queued by nnkc_runs_add_first (>= next when one waits) */
    Run **running;
    int nrunning;
    Run *runs;
};

int nnkc_jobs(void)
{
    const char *v = getenv("NNKC_JOBS");
    if (v && *v) {
        char *end;
        long j = strtol(v, &end, 10);
        if (!*end && j >= 1)
            return j > 64 ? 64 : (int)j;
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return cpus < 1 ? 1 : cpus > 64 ? 64 : (int)cpus;
}

NnkcRuns *nnkc_runs_new(int jobs, int max)
{
    NnkcRuns *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->jobs = jobs < 1 ? 1 : jobs > 64 ? 64 : jobs;
    s->cap = max < 1 ? 1 : max;
    s->running = calloc((size_t)s->jobs, sizeof *s->running);
    s->runs = calloc((size_t)s->cap, sizeof *s->runs);
    if (!s->running || !s->runs) {
        free(s->running);
        free(s->runs);
        free(s);
        return NULL;
    }
    return s;
}

bool nnkc_runs_add(NnkcRuns *s, char *const *argv, NnkcTool *t)
{
    if (s->n == s->cap)
        return false;
    s->runs[s->n++] = (Run){.t = t, .argv = argv, .pid = -1, .feed = -1, .out = -1, .st = -1};
    return true;
}

bool nnkc_runs_add_first(NnkcRuns *s, char *const *argv, NnkcTool *t)
{
    if (s->n == s->cap)
        return false;
    /* the running ones point at runs before next: only the queue moves */
    int at = s->first > s->next ? s->first : s->next;
    memmove(&s->runs[at + 1], &s->runs[at], (size_t)(s->n - at) * sizeof *s->runs);
    s->n++;
    s->runs[at] = (Run){.t = t, .argv = argv, .pid = -1, .feed = -1, .out = -1, .st = -1};
    s->first = at + 1;
    return true;
}

NnkcTool *nnkc_runs_wait(NnkcRuns *s, int *status)
{
    for (;;) {
        while (s->nrunning < s->jobs && s->next < s->n) {
            Run *r = &s->runs[s->next++];
            if (run_start(r) < 0) {
                *status = -1;
                return r->t;
            }
            s->running[s->nrunning++] = r;
        }
        if (!s->nrunning)
            return NULL;
        int i = run_step(s->running, s->nrunning);
        if (i >= 0) {
            Run *r = s->running[i];
            s->running[i] = s->running[--s->nrunning];
            *status = run_finish(r);
            return r->t;
        }
    }
}

void nnkc_runs_free(NnkcRuns *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nrunning; i++) {
        kill_tree(s->running[i]->pid);
        s->running[i]->t->timed_out = true; /* no partial output wanted */
        run_finish(s->running[i]);
    }
    free(s->running);
    free(s->runs);
    free(s);
}
