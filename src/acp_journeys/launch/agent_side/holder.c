/*
 * holder: the PID 1 of every agent container, and the small tool the runner execs inside it.
 *
 * Rules: static, libc only, no shell, no Python, so it works in any image. It never starts
 * anything by itself.
 *
 *   holder [hold [IGNORED...]]
 *   holder hold --ready FILE MODE:FOLDER...
 *                               PID 1: sleep until SIGTERM/SIGINT (exit 0). Reap every zombie on
 *                               SIGCHLD, since orphans of the agent are re-parented here; a process
 *                               that is still alive stays alive, so a leftover can be seen.
 *                               SIGUSR1: kill every other process in the container (kill(-1) from
 *                               the namespace's init reaches all of them) until none is left,
 *                               which works even when a fork bomb leaves no pid for an exec.
 *                               Then it says "acp-journeys-killed N" (the Nth such end) on its
 *                               stderr, the container's log: the runner starts nothing in the
 *                               container before that line, as a kill(-1) round still to come
 *                               would kill it too.
 *                               With --ready (as root: the container's folders are made before
 *                               the start otherwise): first make each FOLDER, its parents with
 *                               mode 0755, and give it exactly MODE (octal), then create FILE.
 *   holder run [--after FILE] [--nofile N] PIDFILE ARGV...
 *                               First wait (up to 5 s) until FILE exists: the folders are ready.
 *                               With --nofile, lower the open-files limit (soft and hard) to N
 *                               unless it is lower already: lowering needs no capability, and
 *                               without CAP_SYS_RESOURCE the agent cannot raise it again. (The
 *                               engine's own ulimit cannot go above its own limit: this works
 *                               on every engine.)
 *                               Then tell our pid, then execvp(ARGV): the agent keeps that pid, so
 *                               the runner knows the agent's pid as the container sees it. The
 *                               pid goes first on stderr as one line "\0acp-journeys-pid N\n"
 *                               (before the exec, so no byte of the agent can come first; the
 *                               runner takes it off the stream), and into PIDFILE, which the
 *                               runner reads only if that line never came. Exit 127 when ARGV
 *                               cannot be run.
 *   holder ps                   Every process but PID 1 and this one, as NUL-ended fields:
 *                               "pid ppid name argc arg..." (a record per process).
 *   holder kill GRACE_MS PID... SIGTERM the pids, wait up to GRACE_MS for them to go, SIGKILL
 *                               the rest. Exit 0.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void reap(void) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

static int alive(pid_t pid);

/* Is any process but us still alive (not a zombie) in the pid namespace? */
static int others_alive(void) {
    pid_t self = getpid();
    DIR *dir = opendir("/proc");
    if (!dir) {
        return 0;
    }
    int found = 0;
    struct dirent *ent;
    while (!found && (ent = readdir(dir)) != NULL) {
        char *end;
        long pid = strtol(ent->d_name, &end, 10);
        found = *end == '\0' && pid > 0 && pid != self && alive((pid_t)pid);
    }
    closedir(dir);
    return found;
}

/* Kill everything else in the pid namespace; repeat because a process may fork meanwhile.
 * Zombies whose parent is outside (an exec's, reaped by the engine) do not count. */
static void kill_all_others(void) {
    struct timespec pause_ts = {0, 10 * 1000 * 1000};
    for (int round = 0; round < 500; round++) {
        if (kill(-1, SIGKILL) < 0 && errno == ESRCH) {
            break; /* nothing left to signal */
        }
        reap();
        if (!others_alive()) {
            break;
        }
        nanosleep(&pause_ts, NULL);
    }
    reap();
}

/* mkdir -p: the parents of `path` with mode 0755, then `path` itself with exactly `mode`. */
static int make_folder(char *path, mode_t mode) {
    for (char *slash = strchr(path + 1, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int made = mkdir(path, 0755) == 0 || errno == EEXIST;
        *slash = '/';
        if (!made) {
            return -1;
        }
    }
    if (mkdir(path, mode) < 0 && errno != EEXIST) {
        return -1;
    }
    return chmod(path, mode); /* also an existing folder (the engine makes the working folder 0755) */
}

/* The folders of the container (MODE:FOLDER each), then the ready FILE; errors go to our log. */
static void prepare(int argc, char **argv) {
    const char *ready = argv[0];
    for (int i = 1; i < argc; i++) {
        char *colon = strchr(argv[i], ':');
        if (colon == NULL || colon[1] != '/') {
            fprintf(stderr, "holder hold: not MODE:FOLDER: %s\n", argv[i]);
            continue;
        }
        mode_t mode = (mode_t)strtol(argv[i], NULL, 8);
        if (make_folder(colon + 1, mode) < 0) {
            fprintf(stderr, "holder hold: cannot make %s: %s\n", colon + 1, strerror(errno));
        }
    }
    int fd = open(ready, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "holder hold: cannot create %s: %s\n", ready, strerror(errno));
        return;
    }
    close(fd);
}

static unsigned kills_done = 0;

static int hold(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGUSR1);
    /* Blocked and taken with sigwaitinfo: no handler races, and as PID 1 an unhandled signal
     * would be ignored anyway. */
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&set, &info);
        if (sig < 0) {
            continue;
        }
        if (sig == SIGTERM || sig == SIGINT) {
            return 0;
        }
        if (sig == SIGUSR1) {
            kill_all_others();
            fprintf(stderr, "acp-journeys-killed %u\n", ++kills_done);
        }
        reap(); /* SIGCHLD, and after a kill: several children may end for one signal */
    }
}

static int run(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[0], "--after") == 0) {
        struct stat st;
        struct timespec step = {0, 1000 * 1000};
        for (int i = 0; i < 5000 && stat(argv[1], &st) < 0; i++) {
            nanosleep(&step, NULL);
        }
        argc -= 2;
        argv += 2;
    }
    if (argc >= 2 && strcmp(argv[0], "--nofile") == 0) {
        char *end;
        unsigned long long wanted = strtoull(argv[1], &end, 10);
        struct rlimit lim;
        if (*end != '\0' || wanted == 0) {
            fprintf(stderr, "holder run: --nofile takes a positive number, not %s\n", argv[1]);
            return 2;
        }
        if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
            if (lim.rlim_max == RLIM_INFINITY || lim.rlim_max > (rlim_t)wanted) {
                lim.rlim_max = (rlim_t)wanted;
            }
            if (lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur > lim.rlim_max) {
                lim.rlim_cur = lim.rlim_max;
            }
            if (setrlimit(RLIMIT_NOFILE, &lim) < 0) {
                fprintf(stderr, "holder run: cannot lower the open-files limit: %s\n", strerror(errno));
                return 126;
            }
        }
        argc -= 2;
        argv += 2;
    }
    if (argc < 2) {
        fprintf(stderr, "holder run: usage: holder run [--after FILE] [--nofile N] PIDFILE ARGV...\n");
        return 2;
    }
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    int fd = open(argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, buf, (size_t)len) != len) {
            /* the runner falls back to the process list; the agent still runs */
        }
        close(fd);
    }
    char line[48];
    len = snprintf(line + 1, sizeof line - 1, "acp-journeys-pid %d\n", (int)getpid()) + 1;
    line[0] = '\0';  /* no agent's text starts with a NUL: the runner cannot mistake its stderr */
    if (write(2, line, (size_t)len) != len) {
        /* the runner then reads PIDFILE */
    }
    execvp(argv[1], &argv[1]);
    int err = errno;
    fprintf(stderr, "acp-journeys: cannot run %s: %s\n", argv[1], strerror(err));
    return err == ENOENT ? 127 : 126;
}

/* Read a whole small /proc file; returns its length, or -1. */
static ssize_t slurp(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t used = 0;
    while (used < cap) {
        ssize_t n = read(fd, buf + used, cap - used);
        if (n <= 0) {
            break;
        }
        used += (size_t)n;
    }
    close(fd);
    return (ssize_t)used;
}

static void put_field(const char *s, size_t n) {
    fwrite(s, 1, n, stdout);
    fputc('\0', stdout);
}

static int ps(void) {
    static char buf[65536];
    char path[64], num[32];
    pid_t self = getpid();
    DIR *dir = opendir("/proc");
    if (!dir) {
        perror("holder ps: /proc");
        return 1;
    }
    struct dirent *ent;
    while ((ent = readdir(dir)) != NULL) {
        char *end;
        long pid = strtol(ent->d_name, &end, 10);
        if (*end != '\0' || pid <= 1 || pid == self) {
            continue;
        }
        /* stat: "pid (comm) state ppid ..."; comm may hold spaces and parens, so take the last ')'. */
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        ssize_t n = slurp(path, buf, sizeof buf - 1);
        if (n <= 0) {
            continue; /* gone meanwhile */
        }
        buf[n] = '\0';
        char *open_paren = strchr(buf, '(');
        char *close_paren = strrchr(buf, ')');
        if (!open_paren || !close_paren || close_paren < open_paren) {
            continue;
        }
        char state = 0;
        long ppid = 0;
        if (sscanf(close_paren + 1, " %c %ld", &state, &ppid) != 2 || state == 'Z') {
            continue; /* a zombie is already dead: the holder reaps it */
        }
        char name[256];
        size_t name_len = (size_t)(close_paren - open_paren - 1);
        if (name_len >= sizeof name) {
            name_len = sizeof name - 1;
        }
        memcpy(name, open_paren + 1, name_len);

        snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
        n = slurp(path, buf, sizeof buf);
        if (n < 0) {
            continue;
        }
        int argc = 0;
        for (ssize_t i = 0; i < n; i++) {
            argc += buf[i] == '\0';
        }
        if (n > 0 && buf[n - 1] != '\0') {
            argc++; /* cut at our buffer's end */
        }
        int len = snprintf(num, sizeof num, "%ld", pid);
        put_field(num, (size_t)len);
        len = snprintf(num, sizeof num, "%ld", ppid);
        put_field(num, (size_t)len);
        put_field(name, name_len);
        len = snprintf(num, sizeof num, "%d", argc);
        put_field(num, (size_t)len);
        size_t start = 0;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\0') {
                put_field(buf + start, (size_t)i - start);
                start = (size_t)i + 1;
            }
        }
        if (start < (size_t)n) {
            put_field(buf + start, (size_t)n - start);
        }
    }
    closedir(dir);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int alive(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    ssize_t n = slurp(path, buf, sizeof buf - 1);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' && close_paren[2] != 'Z';
}

static int kill_pids(int argc, char **argv) {
    if (argc < 1) {
        fprintf(stderr, "holder kill: usage: holder kill GRACE_MS PID...\n");
        return 2;
    }
    long grace_ms = strtol(argv[0], NULL, 10);
    for (int i = 1; i < argc; i++) {
        pid_t pid = (pid_t)strtol(argv[i], NULL, 10);
        if (pid > 1) {
            kill(pid, SIGTERM);
        }
    }
    struct timespec step = {0, 20 * 1000 * 1000};
    for (long waited = 0; waited < grace_ms; waited += 20) {
        int any = 0;
        for (int i = 1; i < argc; i++) {
            pid_t pid = (pid_t)strtol(argv[i], NULL, 10);
            any |= pid > 1 && alive(pid);
        }
        if (!any) {
            return 0;
        }
        nanosleep(&step, NULL);
    }
    for (int i = 1; i < argc; i++) {
        pid_t pid = (pid_t)strtol(argv[i], NULL, 10);
        if (pid > 1) {
            kill(pid, SIGKILL);
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    /* "hold" may be followed by an image's CMD, which an entrypoint override can keep. */
    if (argc < 2 || strcmp(argv[1], "hold") == 0) {
        if (argc >= 4 && strcmp(argv[2], "--ready") == 0) {
            prepare(argc - 3, argv + 3);
        }
        return hold();
    }
    if (strcmp(argv[1], "run") == 0) {
        return run(argc - 2, argv + 2);
    }
    if (strcmp(argv[1], "ps") == 0) {
        return ps();
    }
    if (strcmp(argv[1], "kill") == 0) {
        return kill_pids(argc - 2, argv + 2);
    }
    fprintf(stderr, "holder: unknown command %s\n", argv[1]);
    return 2;
}
