/* `airlock health`: protocol-level probes of airlock's listeners under one deadline.
 *
 * A port that accepts is not enough (the reference only connected): each probe needs a real
 * answer. HTTP sends a request without Host, which airlock answers 400 before any policy or
 * upstream work, so a probe never leaves the proxy. HTTPS runs a full TLS handshake without
 * SNI (the proxy-IP leaf, no verification). DNS sends an A query over UDP. Plain non-blocking
 * sockets and poll(); addresses are numeric only, so the static binary never reaches glibc's
 * NSS. Each probe still writes one line to the network log (BLOCKED ... 400, DNS A ...). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/px_config.h"
#include "app/px_health.h"

#define PX__HEALTH_DNS_RETRY_MS 250 /* resend the UDP query this often */
#define PX__HEALTH_QNAME "airlock-health.invalid"
#define PX__HEALTH_WHY 256

static const char px__health_usage[] =
    "usage: airlock health [--http ADDR:PORT] [--https ADDR:PORT] [--dns ADDR:PORT]\n"
    "  probes the named listeners (all three on 127.0.0.1:80, :443, :53 when none is named);\n"
    "  exit 0 when each answers within 1 s in total, 1 with the reason otherwise\n";

/* HTTP/1.0 without Host: a 400 from the pre-checks, before any policy or upstream. */
static const char px__http_probe[] = "GET / HTTP/1.0\r\nUser-Agent: airlock-health\r\n\r\n";

typedef int (*px__probe_fn)(const px_listen_t *at, int64_t deadline, char *why, size_t cap);

typedef struct px__probe {
    const char *flag;
    const char *name;
    const char *dflt;
    px__probe_fn run;
    px_listen_t at;
    int wanted;
} px__probe_t;

static int64_t px__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until deadline (monotonic ms). Returns 0 when fd is ready (or has
 * an error for the next call to report), -ETIMEDOUT, or another -errno. */
static int px__wait(int fd, short events, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - px__now_ms();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)left);
        if (n > 0)
            return 0;
        if (n == 0)
            return -ETIMEDOUT;
        if (errno != EINTR)
            return -errno;
    }
}

static const char *px__errtext(int neg_errno)
{
    return neg_errno == -ETIMEDOUT ? "timed out" : strerror(-neg_errno);
}

static socklen_t px__salen(const struct sockaddr_storage *ss)
{
    return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* A non-blocking socket of type connected to at. Returns the fd, or -1 with why filled. */
static int px__open(const px_listen_t *at, int type, int64_t deadline, char *why, size_t cap)
{
    int fd = socket(at->addr.ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, cap, "socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&at->addr, px__salen(&at->addr)) == 0)
        return fd;
    int err = errno;
    if (err == EINPROGRESS) {
        int rc = px__wait(fd, POLLOUT, deadline);
        if (rc == 0) {
            socklen_t len = sizeof(err);
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
                err = errno;
            if (err == 0)
                return fd;
        } else {
            err = -rc;
        }
    }
    snprintf(why, cap, "connect: %s", px__errtext(-err));
    close(fd);
    return -1;
}

static int px__send_all(int fd, const void *data, size_t len, int64_t deadline, char *why,
                        size_t cap)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = px__wait(fd, POLLOUT, deadline);
            if (rc != 0) {
                snprintf(why, cap, "send: %s", px__errtext(rc));
                return -1;
            }
            continue;
        }
        snprintf(why, cap, "send: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* "HTTP/1.x NNN" at the start of buf. */
static int px__is_status_line(const char *buf, size_t len)
{
    if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return 0;
    for (int i = 9; i < 12; i++) {
        if (buf[i] < '0' || buf[i] > '9')
            return 0;
    }
    return 1;
}

static int px__probe_http(const px_listen_t *at, int64_t deadline, char *why, size_t cap)
{
    int fd = px__open(at, SOCK_STREAM, deadline, why, cap);
    if (fd < 0)
        return -1;
    int rc = -1;
    char buf[16];
    size_t have = 0;
    if (px__send_all(fd, px__http_probe, sizeof(px__http_probe) - 1, deadline, why, cap) != 0)
        goto done;
    while (have < 12) {
        ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);
        if (n > 0) {
            have += (size_t)n;
            continue;
        }
        if (n == 0)
            break;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = px__wait(fd, POLLIN, deadline);
            if (w != 0) {
                snprintf(why, cap, "no answer to GET /: %s", px__errtext(w));
                goto done;
            }
            continue;
        }
        snprintf(why, cap, "recv: %s", strerror(errno));
        goto done;
    }
    if (px__is_status_line(buf, have))
        rc = 0;
    else if (have == 0)
        snprintf(why, cap, "connection closed without an answer to GET /");
    else
        snprintf(why, cap, "the answer to GET / is not an HTTP status line");
done:
    close(fd);
    return rc;
}

/* The reason of a failed handshake step, from the OpenSSL error queue or errno. */
static void px__tls_why(int sslerr, char *why, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    if (e != 0) {
        const char *r = ERR_reason_error_string(e);
        snprintf(why, cap, "TLS handshake failed: %s", r != NULL ? r : "unknown error");
    } else if (sslerr == SSL_ERROR_SYSCALL && errno != 0) {
        snprintf(why, cap, "TLS handshake failed: %s", strerror(errno));
    } else {
        snprintf(why, cap, "TLS handshake failed: connection closed");
    }
}

static int px__probe_https(const px_listen_t *at, int64_t deadline, char *why, size_t cap)
{
    int fd = px__open(at, SOCK_STREAM, deadline, why, cap);
    if (fd < 0)
        return -1;
    int rc = -1;
    SSL *ssl = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        snprintf(why, cap, "TLS: cannot create a context");
        goto done;
    }
    /* Liveness, not trust: the leaf is signed by airlock's own CA. */
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    ssl = SSL_new(ctx);
    if (ssl == NULL || SSL_set_fd(ssl, fd) != 1) {
        snprintf(why, cap, "TLS: cannot create a connection");
        goto done;
    }
    for (;;) {
        ERR_clear_error();
        errno = 0;
        int r = SSL_connect(ssl);
        if (r == 1) {
            rc = 0;
            break;
        }
        int e = SSL_get_error(ssl, r);
        short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
        if (ev == 0) {
            px__tls_why(e, why, cap);
            break;
        }
        int w = px__wait(fd, ev, deadline);
        if (w != 0) {
            snprintf(why, cap, "TLS handshake: %s", px__errtext(w));
            break;
        }
    }
    if (rc == 0) {
        ERR_clear_error();
        (void)SSL_shutdown(ssl); /* one close_notify, never waited for */
    }
done:
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    close(fd);
    return rc;
}

/* Builds an A query for PX__HEALTH_QNAME with id into q; returns its length. */
static size_t px__dns_query(uint8_t *q, size_t cap, uint16_t id)
{
    static const char name[] = PX__HEALTH_QNAME;
    size_t n = 0;
    if (cap < 12 + sizeof(name) + 1 + 4)
        return 0;
    q[n++] = (uint8_t)(id >> 8);
    q[n++] = (uint8_t)id;
    q[n++] = 0x01; /* RD */
    q[n++] = 0x00;
    static const uint8_t counts[8] = {0, 1, 0, 0, 0, 0, 0, 0};
    memcpy(q + n, counts, sizeof(counts));
    n += sizeof(counts);
    const char *label = name;
    while (*label != '\0') {
        size_t len = strcspn(label, ".");
        q[n++] = (uint8_t)len;
        memcpy(q + n, label, len);
        n += len;
        label += len;
        if (*label == '.')
            label++;
    }
    q[n++] = 0;
    static const uint8_t type_class[4] = {0, 1, 0, 1}; /* A, IN */
    memcpy(q + n, type_class, sizeof(type_class));
    n += sizeof(type_class);
    return n;
}

/* Checks an answer to query q (qlen bytes): same question, NOERROR, a first answer record
 * of type A. Returns 0, 1 when the datagram is not an answer to q (keep waiting), or -1
 * with why filled. */
static int px__dns_check(const uint8_t *r, size_t n, const uint8_t *q, size_t qlen, char *why,
                         size_t cap)
{
    if (n < 12 || r[0] != q[0] || r[1] != q[1] || (r[2] & 0x80) == 0)
        return 1;
    if (((r[2] >> 3) & 0x0f) != 0 || (r[3] & 0x0f) != 0) {
        snprintf(why, cap, "answer has opcode %d, rcode %d", (r[2] >> 3) & 0x0f, r[3] & 0x0f);
        return -1;
    }
    unsigned qd = (unsigned)r[4] << 8 | r[5];
    unsigned an = (unsigned)r[6] << 8 | r[7];
    if (qd != 1 || n < qlen || memcmp(r + 12, q + 12, qlen - 12) != 0) {
        snprintf(why, cap, "answer does not repeat the question");
        return -1;
    }
    if (an == 0) {
        snprintf(why, cap, "answer has no A record");
        return -1;
    }
    size_t off = qlen;
    if (off + 2 <= n && (r[off] & 0xc0) == 0xc0) {
        off += 2;
    } else {
        while (off < n && r[off] != 0 && (r[off] & 0xc0) == 0)
            off += 1 + (size_t)r[off];
        off += 1;
    }
    if (off + 10 > n) {
        snprintf(why, cap, "answer record is truncated");
        return -1;
    }
    unsigned type = (unsigned)r[off] << 8 | r[off + 1];
    unsigned rdlen = (unsigned)r[off + 8] << 8 | r[off + 9];
    if (type != 1 || rdlen != 4 || off + 10 + rdlen > n) {
        snprintf(why, cap, "answer record is not an A record");
        return -1;
    }
    return 0;
}

static int px__probe_dns(const px_listen_t *at, int64_t deadline, char *why, size_t cap)
{
    uint16_t id;
    if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id))
        id = (uint16_t)(getpid() ^ px__now_ms());
    uint8_t q[64];
    size_t qlen = px__dns_query(q, sizeof(q), id);
    int fd = px__open(at, SOCK_DGRAM, deadline, why, cap);
    if (fd < 0)
        return -1;
    int rc = -1;
    int64_t next_send = 0;
    for (;;) {
        int64_t now = px__now_ms();
        if (now >= deadline) {
            snprintf(why, cap, "no answer to an A query: timed out");
            break;
        }
        if (now >= next_send) {
            if (send(fd, q, qlen, 0) < 0 && errno != EAGAIN && errno != EINTR) {
                snprintf(why, cap, "send: %s", strerror(errno));
                break;
            }
            next_send = now + PX__HEALTH_DNS_RETRY_MS;
        }
        int w = px__wait(fd, POLLIN, next_send < deadline ? next_send : deadline);
        if (w == -ETIMEDOUT)
            continue;
        if (w != 0) {
            snprintf(why, cap, "poll: %s", px__errtext(w));
            break;
        }
        uint8_t r[1500];
        ssize_t n = recv(fd, r, sizeof(r), 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            snprintf(why, cap, "no answer to an A query: %s", strerror(errno));
            break;
        }
        int c = px__dns_check(r, (size_t)n, q, qlen, why, cap);
        if (c == 1)
            continue;
        rc = c;
        break;
    }
    close(fd);
    return rc;
}

int px_health_main(int argc, char **argv)
{
    px__probe_t probes[] = {
        {"--dns", "dns", "127.0.0.1:53", px__probe_dns, {0}, 0},
        {"--http", "http", "127.0.0.1:80", px__probe_http, {0}, 0},
        {"--https", "https", "127.0.0.1:443", px__probe_https, {0}, 0},
    };
    const size_t nprobes = sizeof(probes) / sizeof(probes[0]);
    int named = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(px__health_usage, stdout);
            return 0;
        }
        px__probe_t *p = NULL;
        for (size_t k = 0; k < nprobes; k++) {
            if (strcmp(argv[i], probes[k].flag) == 0)
                p = &probes[k];
        }
        if (p == NULL) {
            fprintf(stderr, "airlock health: unexpected argument '%s'\n%s", argv[i],
                    px__health_usage);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "airlock health: %s needs ADDR:PORT\n", p->flag);
            return 2;
        }
        const char *v = argv[++i];
        /* sin_port and sin6_port sit at the same offset */
        if (px_listen_parse(&p->at, v) != 0 || !p->at.enabled ||
            ((struct sockaddr_in *)&p->at.addr)->sin_port == 0) {
            fprintf(stderr, "airlock health: %s '%s': expected ADDR:PORT or [V6]:PORT\n", p->flag,
                    v);
            return 2;
        }
        p->wanted = 1;
        named = 1;
    }
    for (size_t k = 0; k < nprobes && !named; k++) {
        px_listen_parse(&probes[k].at, probes[k].dflt);
        probes[k].wanted = 1;
    }
    signal(SIGPIPE, SIG_IGN);
    int64_t deadline = px__now_ms() + PX_HEALTH_BUDGET_MS;
    for (size_t k = 0; k < nprobes; k++) {
        char why[PX__HEALTH_WHY];
        if (!probes[k].wanted)
            continue;
        why[0] = '\0';
        if (probes[k].run(&probes[k].at, deadline, why, sizeof(why)) != 0) {
            fprintf(stderr, "airlock health: %s %s: %s\n", probes[k].name, probes[k].at.text, why);
            return 1;
        }
    }
    return 0;
}
