/* The OTLP exporter's HTTP/1.1 client (px_otel_net.h): one connection to the collector, plain
 * or TLS, kept across batches. It runs on the exporter's thread only, so it may wait: every
 * wait is a poll() bounded by the attempt's deadline, never a wait of a loop. */
#include "proxy/px_otel_net.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base/px_err.h"

#define PX__HEAD_MAX 4096 /* the answer's head read; a longer one is not an answer we read */

uint64_t px_otel_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Waits for ev on fd until deadline (monotonic ms). Returns 0, or a negative code. */
static int px__wait(int fd, short ev, uint64_t deadline)
{
    for (;;) {
        uint64_t now = px_otel_mono_ms();
        if (now >= deadline)
            return PX_ETIMEOUT;
        struct pollfd p = {fd, ev, 0};
        int n = poll(&p, 1, (int)(deadline - now));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* The first OpenSSL error queued, as text (after a failed load or handshake). */
static const char *px__ssl_err(char *buf, size_t cap)
{
    unsigned long e = ERR_peek_last_error();
    if (e == 0)
        snprintf(buf, cap, "unknown error");
    else
        ERR_error_string_n(e, buf, cap);
    return buf;
}

int px_otel_link_init(px_otel_link_t *l, const px_otel_conf_t *conf, char *err, size_t errlen)
{
    memset(l, 0, sizeof(*l));
    l->conf = conf;
    l->fd = -1;
    if (!conf->tls)
        return 0;
    char e[200];
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "otel: cannot make a TLS context: %s", px__ssl_err(e, sizeof(e)));
        return PX_ECRYPTO;
    }
    /* the collector's certificate is always verified: OTEL_EXPORTER_OTLP_INSECURE is not
     * read (audit events are not sent to a peer nobody vouched for) */
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    int ok = conf->ca_file[0] != '\0' ? SSL_CTX_load_verify_locations(ctx, conf->ca_file, NULL)
                                      : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        snprintf(err, errlen, "OTEL_EXPORTER_OTLP_CERTIFICATE: cannot load %.200s: %s",
                 conf->ca_file[0] != '\0' ? conf->ca_file : "the system's trust store",
                 px__ssl_err(e, sizeof(e)));
        SSL_CTX_free(ctx);
        return PX_ECONFIG;
    }
    if (conf->cert_file[0] != '\0') {
        const char *what = "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE", *file = conf->cert_file;
        ok = SSL_CTX_use_certificate_chain_file(ctx, conf->cert_file);
        if (ok == 1) {
            what = "OTEL_EXPORTER_OTLP_CLIENT_KEY", file = conf->key_file;
            ok = SSL_CTX_use_PrivateKey_file(ctx, conf->key_file, SSL_FILETYPE_PEM) == 1 &&
                 SSL_CTX_check_private_key(ctx) == 1;
        }
        if (ok != 1) {
            snprintf(err, errlen, "%s: cannot use %.200s: %s", what, file,
                     px__ssl_err(e, sizeof(e)));
            SSL_CTX_free(ctx);
            return PX_ECONFIG;
        }
    }
    l->ctx = ctx;
    return 0;
}

void px_otel_link_close(px_otel_link_t *l)
{
    if (l->ssl != NULL) {
        SSL_free(l->ssl); /* no close_notify: the collector needs none, and it could block */
        l->ssl = NULL;
    }
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
}

void px_otel_link_free(px_otel_link_t *l)
{
    px_otel_link_close(l);
    SSL_CTX_free(l->ctx);
    l->ctx = NULL;
}

/* Connects to the collector, every address in turn, each within the deadline. */
static int px__connect(px_otel_link_t *l, uint64_t deadline, char *why, size_t whylen)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(l->conf->host, l->conf->port, &hints, &res);
    if (g != 0) {
        snprintf(why, whylen, "cannot resolve %.48s: %s", l->conf->host, gai_strerror(g));
        return PX_EDNS;
    }
    int fd = -1, err = ECONNREFUSED;
    for (struct addrinfo *a = res; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int rc = connect(fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            rc = px__wait(fd, POLLOUT, deadline);
            socklen_t sl = sizeof(err);
            if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) == 0 && err == 0)
                break;
            if (rc != 0)
                err = ETIMEDOUT;
        } else if (rc == 0) {
            break;
        } else {
            err = errno;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(why, whylen, "%s", err == ETIMEDOUT ? "connect timed out" : strerror(err));
        return PX_EIO;
    }
    l->fd = fd;
    l->connects++;
    return 0;
}

/* One SSL_* call's outcome: >0 done, 0 the peer closed, or a negative code; waits and repeats
 * on WANT_READ/WANT_WRITE until the deadline. op: 0 handshake, 1 read, 2 write. */
static int px__tls(px_otel_link_t *l, int op, void *buf, size_t n, uint64_t deadline)
{
    for (;;) {
        ERR_clear_error();
        int r = op == 0   ? SSL_connect(l->ssl)
                : op == 1 ? SSL_read(l->ssl, buf, (int)n)
                          : SSL_write(l->ssl, buf, (int)n);
        if (r > 0)
            return r;
        int e = SSL_get_error(l->ssl, r);
        if (e == SSL_ERROR_ZERO_RETURN || (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0))
            return 0; /* closed (or reset) by the peer */
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return PX_ETLS;
        int rc = px__wait(l->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
        if (rc != 0)
            return rc;
    }
}

/* The TLS handshake on the connected fd: SNI and the name (or address) checked against the
 * collector's certificate. */
static int px__handshake(px_otel_link_t *l, uint64_t deadline, char *why, size_t whylen)
{
    const char *host = l->conf->host;
    unsigned char ip[16];
    int is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    l->ssl = SSL_new(l->ctx);
    if (l->ssl == NULL || SSL_set_fd(l->ssl, l->fd) != 1) {
        snprintf(why, whylen, "TLS: out of memory");
        return PX_ENOMEM;
    }
    int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(l->ssl), host)
                   : SSL_set_tlsext_host_name(l->ssl, host) == 1 && SSL_set1_host(l->ssl, host);
    if (ok != 1) {
        snprintf(why, whylen, "TLS: cannot check the name %.48s", host);
        return PX_ETLS;
    }
    int rc = px__tls(l, 0, NULL, 0, deadline);
    if (rc > 0)
        return 0;
    long v = SSL_get_verify_result(l->ssl);
    char e[160];
    if (rc == PX_ETIMEOUT) {
        snprintf(why, whylen, "TLS handshake timed out");
    } else if (v != X509_V_OK) {
        snprintf(why, whylen, "TLS: certificate verify failed: %s",
                 X509_verify_cert_error_string(v));
        return PX_EFORBIDDEN;
    } else {
        snprintf(why, whylen, "TLS handshake failed: %.60s",
                 rc == 0 ? "connection closed" : px__ssl_err(e, sizeof(e)));
    }
    return rc == 0 ? PX_ETLS : rc;
}

/* Sends p[0..n) whole. Returns 0 or a negative code. */
static int px__send(px_otel_link_t *l, const char *p, size_t n, uint64_t deadline)
{
    while (n > 0) {
        ssize_t w;
        if (l->ssl != NULL) {
            w = px__tls(l, 2, (void *)p, n, deadline);
            if (w <= 0)
                return w < 0 ? (int)w : PX_EIO;
        } else {
            w = send(l->fd, p, n, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                int rc = px__wait(l->fd, POLLOUT, deadline);
                if (rc != 0)
                    return rc;
                continue;
            }
            if (w <= 0)
                return w < 0 ? -errno : PX_EIO;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads some bytes: >0, 0 when the peer closed, or a negative code. */
static int px__recv(px_otel_link_t *l, char *buf, size_t cap, uint64_t deadline)
{
    if (l->ssl != NULL)
        return px__tls(l, 1, buf, cap, deadline);
    for (;;) {
        ssize_t r = recv(l->fd, buf, cap, 0);
        if (r >= 0)
            return (int)r;
        if (errno != EAGAIN && errno != EINTR)
            return errno == ECONNRESET ? 0 : -errno;
        int rc = px__wait(l->fd, POLLIN, deadline);
        if (rc != 0)
            return rc;
    }
}

/* 1 when the kept connection may carry a request: the collector has neither closed it nor
 * sent anything unasked (a TLS 1.3 session ticket is read and is no reason to drop it). */
static int px__usable(px_otel_link_t *l)
{
    struct pollfd p = {l->fd, POLLIN, 0};
    if (poll(&p, 1, 0) == 0)
        return 1;
    char c;
    if (l->ssl == NULL)
        return 0; /* readable: closed, or bytes nobody asked for */
    ERR_clear_error();
    int r = SSL_read(l->ssl, &c, 1);
    return r <= 0 && SSL_get_error(l->ssl, r) == SSL_ERROR_WANT_READ;
}

/* A header's value in the NUL-terminated head (after "\r\nname:"), or NULL. */
static const char *px__header(const char *head, const char *name)
{
    char key[40];
    snprintf(key, sizeof(key), "\r\n%s:", name);
    const char *h = strcasestr(head, key);
    if (h == NULL)
        return NULL;
    h += strlen(key);
    while (*h == ' ' || *h == '\t')
        h++;
    return h;
}

/* Reads the answer: its status, Retry-After in ms, and its body (dropped), so the connection
 * can carry the next request. *got: bytes read (0: the peer said nothing). Sets *keep when
 * it can. Returns the status or a negative code. */
static int px__answer(px_otel_link_t *l, uint64_t deadline, unsigned *retry_ms, size_t *got,
                      int *keep)
{
    char buf[PX__HEAD_MAX + 1];
    size_t len = 0;
    char *end = NULL;
    *keep = 0;
    *got = 0;
    while (end == NULL) {
        if (len == PX__HEAD_MAX)
            return PX_EPARSE;
        int r = px__recv(l, buf + len, PX__HEAD_MAX - len, deadline);
        if (r < 0)
            return r;
        if (r == 0)
            return len == 0 ? PX_EIO : PX_EPARSE;
        len += (size_t)r;
        *got = len;
        end = memmem(buf, len, "\r\n\r\n", 4);
    }
    *end = '\0';
    int status = 0;
    char minor = 0;
    if (sscanf(buf, "HTTP/1.%c %3d", &minor, &status) != 2 || status < 200 || status > 599 ||
        (minor != '0' && minor != '1'))
        return PX_EPARSE;
    *retry_ms = 0;
    const char *ra = px__header(buf, "Retry-After");
    if (ra != NULL) {
        long s = strtol(ra, NULL, 10);
        *retry_ms = s > 0 && s < 3600 ? (unsigned)s * 1000 : 0;
    }
    /* the body, read to its end when it says how long it is and is small; else the
     * connection goes with it */
    const char *cl = px__header(buf, "Content-Length");
    const char *conn = px__header(buf, "Connection");
    if (cl == NULL || px__header(buf, "Transfer-Encoding") != NULL || minor == '0' ||
        (conn != NULL && strncasecmp(conn, "close", 5) == 0))
        return status;
    char *ce = NULL;
    unsigned long long want = strtoull(cl, &ce, 10);
    if (ce == cl || want > PX_OTEL_ANSWER_BODY_MAX)
        return status;
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < want) {
        int r = px__recv(l, buf, sizeof(buf) - 1 < want - have ? sizeof(buf) - 1 : want - have,
                         deadline);
        if (r <= 0)
            return status; /* the status is known: the connection is not kept */
        have += (size_t)r;
    }
    *keep = have == want; /* more: bytes nobody asked for */
    return status;
}

int px_otel_link_post(px_otel_link_t *l, const char *head, size_t hlen, const char *body,
                      size_t blen, uint64_t deadline, unsigned *retry_ms, char *why, size_t whylen)
{
    if (l->fd >= 0 && !px__usable(l))
        px_otel_link_close(l);
    for (int again = 0; again < 2; again++) {
        int reused = l->fd >= 0;
        int rc = 0;
        if (!reused) {
            rc = px__connect(l, deadline, why, whylen);
            if (rc == 0 && l->conf->tls)
                rc = px__handshake(l, deadline, why, whylen);
            if (rc != 0) {
                px_otel_link_close(l);
                return rc;
            }
        }
        size_t got = 0;
        int keep = 0;
        rc = px__send(l, head, hlen, deadline);
        if (rc == 0)
            rc = px__send(l, body, blen, deadline);
        if (rc == 0)
            rc = px__answer(l, deadline, retry_ms, &got, &keep);
        if (!keep)
            px_otel_link_close(l);
        /* a kept connection the collector closed meanwhile: once more on a new one */
        if (rc < 0 && reused && got == 0 && rc != PX_ETIMEOUT)
            continue;
        if (rc == PX_ETIMEOUT)
            snprintf(why, whylen, "timed out after %u ms", l->conf->timeout_ms);
        else if (rc == PX_EPARSE)
            snprintf(why, whylen, "not an HTTP answer");
        else if (rc == PX_ETLS)
            snprintf(why, whylen, "TLS failure");
        else if (rc == PX_EIO)
            snprintf(why, whylen, "connection closed without an answer");
        else if (rc < 0)
            snprintf(why, whylen, "%s", strerror(-rc > 0 && -rc < 4096 ? -rc : EIO));
        return rc;
    }
    return PX_EIO; /* not reached: the second pass always uses a new connection */
}
