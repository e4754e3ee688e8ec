/*
 * relay SOCKET_PATH: the stdio MCP server command inside an agent's container. It joins the
 * agent's stdin/stdout to the runner's MCP server on a Unix socket, like the Python relay:
 *
 *   - connect to SOCKET_PATH, retrying for about 5 s (the runner may still be binding it);
 *   - copy stdin -> socket and socket -> stdout;
 *   - at stdin EOF: shutdown(SHUT_WR), keep copying socket -> stdout for at most 1 s, exit 0;
 *   - when the socket closes: exit 0 (1 on an error).
 *
 * Rules: static, libc only, so it works in an image with no shell and no Python.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
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

static int connect_retry(const char *path) {
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof addr.sun_path) {
        fprintf(stderr, "relay: socket path too long: %s\n", path);
        return -1;
    }
    strcpy(addr.sun_path, path);
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

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: relay SOCKET_PATH\n");
        return 2;
    }
    /* A closed stdout must end us with an error code, not a signal. */
    signal(SIGPIPE, SIG_IGN);
    int sock = connect_retry(argv[1]);
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
