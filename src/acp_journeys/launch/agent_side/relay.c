/*
 * relay: the two ways a process in an agent's container reaches the runner with no network.
 *
 * relay SOCKET_PATH: the stdio MCP server command. It joins the agent's stdin/stdout to the
 * runner's MCP server on a Unix socket, like the Python relay:
 *
 *   - connect to SOCKET_PATH, retrying for about 5 s (the runner may still be binding it);
 *   - copy stdin -> socket and socket -> stdout;
 *   - at stdin EOF: shutdown(SHUT_WR), keep copying socket -> stdout for at most 1 s, exit 0;
 *   - when the socket closes: exit 0 (1 on an error).
 *
 * relay --listen PORT SOCKET_PATH [READY_FILE]: the scripted model endpoint on the container's
 * own loopback. Listen on 127.0.0.1:PORT and join each accepted connection, both ways, to a new
 * connection to SOCKET_PATH (made per connection: the runner may start serving SOCKET_PATH only
 * after we listen). One process, one poll() loop, every socket non-blocking, so one slow peer
 * never holds up the others or the accept. An end of file one way is passed on as a half-close
 * (shutdown SHUT_WR) once that way's bytes are written, so keep-alive and streamed answers pass
 * unchanged. Once listening, write our pid to READY_FILE (the runner's sign that we accept).
 * SIGTERM: exit 0.
 *
 * Rules: static, libc only, so it works in an image with no shell and no Python.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static int unix_address(const char *path, struct sockaddr_un *addr) {
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr->sun_path) {
        fprintf(stderr, "relay: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(addr->sun_path, path);
    return 0;
}

static int connect_retry(const char *path) {
    struct sockaddr_un addr;
    if (unix_address(path, &addr) < 0) {
        return -1;
    }
    long deadline = now_ms() + 5000;
    struct timespec step = {0, 50 * 1000 * 1000};
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            perror("relay: socket");
            return -1;
        }
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0) {
            return fd;
        }
        int err = errno;
        close(fd);
        if (now_ms() >= deadline) {
            fprintf(stderr, "relay: cannot connect to %s: %s\n", path, strerror(err));
            return -1;
        }
        nanosleep(&step, NULL);
    }
}

static int stdio_main(const char *path) {
    int sock = connect_retry(path);
    if (sock < 0) {
        return 1;
    }
    char buf[65536];
    int stdin_open = 1;
    long drain_deadline = 0;
    for (;;) {
        struct pollfd fds[2] = {{sock, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
        int timeout = -1;
        if (!stdin_open) {
            long left = drain_deadline - now_ms();
            if (left <= 0) {
                return 0; /* the server kept the socket open after our EOF: stop anyway */
            }
            timeout = (int)left;
        }
        int ready = poll(fds, stdin_open ? 2 : 1, timeout);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("relay: poll");
            return 1;
        }
        if (fds[0].revents) {
            ssize_t n = read(sock, buf, sizeof buf);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return n == 0 ? 0 : 1; /* the runner closed the socket */
            }
            if (write_all(STDOUT_FILENO, buf, (size_t)n) < 0) {
                return 1;
            }
        }
        if (stdin_open && fds[1].revents) {
            ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                /* EOF from the agent: tell the server, give it a moment to answer, then go. */
                shutdown(sock, SHUT_WR);
                stdin_open = 0;
                drain_deadline = now_ms() + 1000;
            } else if (write_all(sock, buf, (size_t)n) < 0) {
                return 1;
            }
        }
    }
}

/* --- relay --listen ------------------------------------------------------------------------ */

#define MAX_PAIRS 256            /* 2 fds a pair: well under the usual 1024 open files */
#define BUF_SIZE 65536
#define CONNECT_RETRY_MS 50      /* the runner's socket is not served yet, or its backlog is full */
#define CONNECT_GIVE_UP_MS 5000  /* as the stdio mode: then the client sees its connection close */

/* One way of a pair: bytes read from `from` wait in `buf` until written to the other side. */
struct way {
    char *buf;
    size_t len, off;
    int eof;  /* `from` sent its end of file */
    int shut; /* ... and it was passed on as shutdown(SHUT_WR) */
};

/* An accepted TCP client and its own connection to SOCKET_PATH (fd[1] is -1 until made). */
struct pair {
    int fd[2];           /* 0: the client, 1: the runner's socket */
    struct way way[2];   /* way[i] carries fd[i] -> fd[1 - i] */
    long accepted_ms, next_try_ms;
};

static struct pair pairs[MAX_PAIRS];
static int npairs;

/* Nothing to flush or remove (the kernel closes the sockets): end at once, with no race
 * between a flag and poll(). */
static void on_term(int sig) {
    (void)sig;
    _exit(0);
}

static void close_pair(int i) {
    struct pair *p = &pairs[i];
    for (int k = 0; k < 2; k++) {
        if (p->fd[k] >= 0) {
            close(p->fd[k]);
        }
        free(p->way[k].buf);
    }
    pairs[i] = pairs[--npairs]; /* order does not matter: the poll set is rebuilt each round */
}

/* One try at the runner's socket: 1 connected, 0 try again later, -1 give up. */
static int try_upstream(struct pair *p, const struct sockaddr_un *addr, long now) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    /* A Unix socket connects at once or fails at once (EAGAIN when its backlog is full). */
    if (connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0) {
        p->fd[1] = fd;
        return 1;
    }
    int err = errno;
    close(fd);
    if ((err == EAGAIN || err == ENOENT || err == ECONNREFUSED || err == EINTR)
        && now - p->accepted_ms < CONNECT_GIVE_UP_MS) {
        p->next_try_ms = now + CONNECT_RETRY_MS;
        return 0;
    }
    fprintf(stderr, "relay: cannot connect to %s: %s\n", addr->sun_path, strerror(err));
    return -1;
}

/* Move what can be moved on way k without blocking; -1 when the pair is broken. */
static int pump(struct pair *p, int k) {
    struct way *w = &p->way[k];
    int from = p->fd[k], to = p->fd[1 - k];
    if (w->len == 0 && !w->eof) {
        ssize_t n = recv(from, w->buf, BUF_SIZE, 0);
        if (n > 0) {
            w->len = (size_t)n;
            w->off = 0;
        } else if (n == 0) {
            w->eof = 1;
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            return -1;
        }
    }
    while (w->len > 0) {
        ssize_t n = send(to, w->buf + w->off, w->len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                break; /* the peer is slow: poll tells us when it can take more */
            }
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        w->off += (size_t)n;
        w->len -= (size_t)n;
    }
    if (w->eof && w->len == 0 && !w->shut) {
        shutdown(to, SHUT_WR); /* everything from `from` is through: pass its end of file on */
        w->shut = 1;
    }
    return 0;
}

/* What fd[k] is polled for: read while its way is empty, write while the other way waits. */
static short wanted(const struct pair *p, int k) {
    short ev = 0;
    if (!p->way[k].eof && p->way[k].len == 0) {
        ev |= POLLIN;
    }
    if (p->way[1 - k].len > 0) {
        ev |= POLLOUT;
    }
    return ev;
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perror("relay: socket");
        return -1;
    }
    /* A relay started again (after a kill of all but the holder) must not wait out TIME_WAIT. */
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 128) < 0) {
        fprintf(stderr, "relay: cannot listen on 127.0.0.1:%d: %s\n", port, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static int write_ready(const char *path) {
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "relay: cannot write %s: %s\n", path, strerror(errno));
        return -1;
    }
    int ok = write(fd, buf, (size_t)len) == len;
    close(fd);
    return ok ? 0 : -1;
}

static void accept_all(int lfd) {
    while (npairs < MAX_PAIRS) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return; /* EAGAIN: none left; anything else: the client is gone already */
        }
        /* Small writes (a request's head, one SSE event) go out at once, not after an ACK. */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct pair *p = &pairs[npairs];
        memset(p, 0, sizeof *p);
        p->fd[0] = fd;
        p->fd[1] = -1;
        p->way[0].buf = malloc(BUF_SIZE);
        p->way[1].buf = malloc(BUF_SIZE);
        if (!p->way[0].buf || !p->way[1].buf) {
            free(p->way[0].buf);
            free(p->way[1].buf);
            close(fd);
            return;
        }
        p->accepted_ms = p->next_try_ms = now_ms();
        npairs++;
    }
}

static int listen_main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: relay --listen PORT SOCKET_PATH [READY_FILE]\n");
        return 2;
    }
    char *end;
    long port = strtol(argv[2], &end, 10);
    struct sockaddr_un addr;
    if (*end != '\0' || port <= 0 || port > 65535) {
        fprintf(stderr, "relay: not a port: %s\n", argv[2]);
        return 2;
    }
    if (unix_address(argv[3], &addr) < 0) {
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    int lfd = listen_on((int)port);
    if (lfd < 0) {
        return 1;
    }
    if (argc == 5 && write_ready(argv[4]) < 0) {
        return 1;
    }
    static struct pollfd fds[1 + 2 * MAX_PAIRS];
    for (;;) {
        long now = now_ms();
        int timeout = -1;
        for (int i = 0; i < npairs;) {
            struct pair *p = &pairs[i];
            if (p->fd[1] < 0 && p->next_try_ms <= now) {
                int got = try_upstream(p, &addr, now);
                if (got < 0) {
                    close_pair(i);
                    continue;
                }
            }
            if (p->fd[1] < 0) { /* wake for its next try */
                long left = p->next_try_ms > now ? p->next_try_ms - now : 0;
                if (timeout < 0 || left < timeout) {
                    timeout = (int)left;
                }
            }
            i++;
        }
        /* Full: leave new clients in the listen backlog until a pair closes. */
        fds[0].fd = npairs < MAX_PAIRS ? lfd : -1;
        fds[0].events = POLLIN;
        for (int i = 0; i < npairs; i++) {
            for (int k = 0; k < 2; k++) {
                struct pollfd *f = &fds[1 + 2 * i + k];
                /* Nothing wanted: not polled at all, else a hung-up socket would wake us forever. */
                f->events = pairs[i].fd[1] < 0 ? 0 : wanted(&pairs[i], k);
                f->fd = f->events ? pairs[i].fd[k] : -1;
                f->revents = 0;
            }
        }
        int ready = poll(fds, (nfds_t)(1 + 2 * npairs), timeout);
        if (ready < 0) {
            if (errno == EINTR) {
                continue;
            }
            perror("relay: poll");
            return 1;
        }
        /* Pairs first, from the end: close_pair moves the last pair into the closed one's place. */
        for (int i = npairs - 1; i >= 0; i--) {
            struct pair *p = &pairs[i];
            if (!(fds[1 + 2 * i].revents | fds[2 + 2 * i].revents)) {
                continue;
            }
            if (pump(p, 0) < 0 || pump(p, 1) < 0 || (p->way[0].shut && p->way[1].shut)) {
                close_pair(i);
            }
        }
        if (fds[0].revents) {
            accept_all(lfd);
        }
    }
}

int main(int argc, char **argv) {
    /* A closed stdout or peer must end a write with an error code, not end us by a signal. */
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 2 && strcmp(argv[1], "--listen") == 0) {
        return listen_main(argc, argv);
    }
    if (argc != 2) {
        fprintf(stderr, "usage: relay SOCKET_PATH | relay --listen PORT SOCKET_PATH [READY_FILE]\n");
        return 2;
    }
    return stdio_main(argv[1]);
}
