#include "net/px_sock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_grow.h"
#include "net/px_tls.h"

enum {
    PX__SOCK_FLUSH = 1,    /* out holds bytes to send */
    PX__SOCK_PUMP = 2,     /* decrypted plaintext may wait inside OpenSSL */
    PX__SOCK_ERROR = 4,    /* report err through on_eof */
    PX__SOCK_SHUTDOWN = 8, /* half-close once flushed */
    PX__SOCK_FIRST = 16,   /* ciphertext read before TLS started goes into TLS */
    PX__SOCK_DRAIN = 32    /* the queue fell below the low-water mark at once: tell the owner */
};

#define PX__SOCK_OUT_MIN 4096
/* Batching is for small writes (a head, a chunk's framing, a short body): past this much, the
 * bytes leave at once rather than at the end of the turn, so that a large transfer neither
 * piles up in memory nor reads as a full queue while the kernel could take it. With TLS the
 * count is of records ready to go. */
#define PX__SOCK_FLUSH_AT (64 * 1024)
/* With TLS, plaintext past this much (a full record) is sealed into records at once: a write
 * this large goes straight into SSL_write (no copy into out), and records still leave in
 * batches of PX__SOCK_FLUSH_AT. Smaller writes wait in out so that a head and its body's first
 * bytes share a record. */
#define PX__SOCK_SEAL_AT 16384

typedef struct px__wreq {
    uv_write_t req;
    px_sock_t *s;
    char *buf;
} px__wreq_t;

static void px__sock_schedule(px_sock_t *s, int what);

/* Keeps why the handshake failed (copied): only a failed socket pays for the text. */
static void px__sock_tls_fail(px_sock_t *s, const char *why)
{
    free(s->tls_err);
    s->tls_err = strdup(why); /* NULL when out of memory: px_sock_tls_error() says "" */
}

/* ---- writing ------------------------------------------------------------------------------ */

static void px__sock_check_drain(px_sock_t *s)
{
    if (s->over_high && px_sock_queued(s) < PX_WQ_LOW) {
        s->over_high = 0;
        if (s->cbs->on_drain != NULL)
            s->cbs->on_drain(s);
    }
}

static void on_sock_shutdown(uv_shutdown_t *req, int status)
{
    (void)status;
    free(req);
}

static void px__sock_do_shutdown(px_sock_t *s)
{
    uv_shutdown_t *req = malloc(sizeof(*req));
    if (req == NULL || uv_shutdown(req, (uv_stream_t *)&s->tcp, on_sock_shutdown) != 0)
        free(req);
}

static void on_sock_written(uv_write_t *req, int status)
{
    px__wreq_t *w = (px__wreq_t *)req;
    px_sock_t *s = w->s;
    free(w->buf);
    free(w);
    if (s->closing)
        return;
    if (status < 0) {
        s->err = status;
        px__sock_schedule(s, PX__SOCK_ERROR);
        return;
    }
    if (s->tcp.write_queue_size == 0 && s->out_len == 0 && !s->sealed) {
        if (s->close_when_flushed) {
            px_sock_close(s);
            return;
        }
    }
    px__sock_check_drain(s);
}

/* Hands buf (taken) to the kernel: written at once when libuv holds nothing for this socket
 * and the kernel takes it all (uv_try_write: no request, no callback, and no epoll_ctl, which
 * a completed uv_write costs on every drain), else the rest is queued through libuv. */
static int px__sock_send(px_sock_t *s, char *buf, size_t len)
{
    size_t off = 0;
    uv_buf_t b = uv_buf_init(buf, (unsigned)len);
    int n = uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
    if (n == (int)len) {
        free(buf);
        if (s->over_high)
            px__sock_schedule(s, PX__SOCK_DRAIN);
        return 0;
    }
    if (n > 0) {
        off = (size_t)n;
    } else if (n != UV_EAGAIN && n != UV_ENOSYS) {
        free(buf);
        return n;
    }
    px__wreq_t *w = malloc(sizeof(*w));
    if (w == NULL) {
        free(buf);
        return PX_ENOMEM;
    }
    w->s = s;
    w->buf = buf;
    b = uv_buf_init(buf + off, (unsigned)(len - off));
    int rc = uv_write(&w->req, (uv_stream_t *)&s->tcp, &b, 1, on_sock_written);
    if (rc < 0) {
        free(buf);
        free(w);
    }
    return rc;
}

/* Hands data (borrowed) to the kernel as px__sock_send does; only what the kernel does not take
 * at once is copied. */
static int px__sock_send_borrowed(px_sock_t *s, const char *data, size_t len)
{
    size_t off = 0;
    if (s->tcp.write_queue_size == 0) {
        uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
        int n = uv_try_write((uv_stream_t *)&s->tcp, &b, 1);
        if (n == (int)len) {
            if (s->over_high)
                px__sock_schedule(s, PX__SOCK_DRAIN);
            return 0;
        }
        if (n > 0)
            off = (size_t)n;
        else if (n != UV_EAGAIN && n != UV_ENOSYS)
            return n;
    }
    char *rest = malloc(len - off);
    if (rest == NULL)
        return PX_ENOMEM;
    memcpy(rest, data + off, len - off);
    return px__sock_send(s, rest, len - off);
}

static void on_sock_quiet(px_quiet_t *q)
{
    px_sock_t *s = px_container_of(q, px_sock_t, quiet);
    if (s->tls != NULL && !s->closing && s->out_len == 0)
        px_tls_trim(s->tls);
}

/* The TLS buffers are given back once the connection has been quiet for PX_QUIET_MS: an idle
 * connection keeps none, and a stream does not free and grow them again on every read (that
 * cost a TLS upload three times the CPU of relaying it). */
static void px__sock_trim_later(px_sock_t *s)
{
    if (!s->closing)
        px_quiet_touch(s->loop, &s->quiet, on_sock_quiet);
}

/* Sends what TLS has for the network (records, alerts, tickets). */
static int px__sock_tls_out(px_sock_t *s)
{
    size_t n;
    char *ct = px_tls_take_output(s->tls, &n);
    return ct != NULL ? px__sock_send(s, ct, n) : 0;
}

/* Records a TLS 1.3 server has for the network once the handshake is over, and that no peer
 * waits for (the session tickets, a KeyUpdate answer, which RFC 8446 4.6.3 wants before our next
 * data: it then leads that data), stay inside TLS until the next write takes them along, rather
 * than costing a write system call and a segment of their own: an HTTP client sends its request
 * without waiting for tickets, and the response carries them. Anything else leaves now (a TLS
 * 1.2 server's Finished, the client side's records). */
static void px__sock_tls_out_soon(px_sock_t *s)
{
    SSL *ssl = px_tls_ssl(s->tls);
    if (s->tls_done && SSL_is_server(ssl) && SSL_version(ssl) >= TLS1_3_VERSION)
        return;
    px__sock_tls_out(s);
}

/* Seals plaintext (borrowed) into TLS records; they leave with the turn's flush, or now once
 * PX__SOCK_FLUSH_AT of them wait. */
static int px__sock_seal(px_sock_t *s, const char *data, size_t len)
{
    int rc = px_tls_write(s->tls, data, len);
    if (rc != 0)
        return rc;
    s->sealed = 1;
    if (px_tls_output_len(s->tls) < PX__SOCK_FLUSH_AT) {
        px__sock_schedule(s, PX__SOCK_FLUSH);
        return 0;
    }
    s->sealed = 0;
    rc = px__sock_tls_out(s);
    if (rc == 0)
        px__sock_trim_later(s);
    return rc;
}

static void px__sock_flush(px_sock_t *s)
{
    int rc = 0;
    if (s->out_len > 0) {
        if (s->tls != NULL) {
            rc = px_tls_write(s->tls, s->out, s->out_len);
            s->sealed = 1;
        } else {
            char *buf = s->out;
            size_t len = s->out_len;
            s->out = NULL;
            s->out_len = s->out_cap = 0;
            rc = px__sock_send(s, buf, len);
        }
    }
    if (s->tls != NULL) {
        /* the plaintext is in TLS records now: an idle connection keeps no buffer */
        free(s->out);
        s->out = NULL;
        s->out_len = s->out_cap = 0;
        if (rc == 0 && s->sealed) {
            s->sealed = 0;
            rc = px__sock_tls_out(s);
            if (rc == 0)
                px__sock_trim_later(s);
        }
    }
    if (rc < 0) {
        s->err = rc;
        px__sock_schedule(s, PX__SOCK_ERROR);
        return;
    }
    if (s->close_when_flushed && s->tcp.write_queue_size == 0) {
        px_sock_close(s);
        return;
    }
    if (s->pending & PX__SOCK_SHUTDOWN) {
        s->pending &= ~PX__SOCK_SHUTDOWN;
        if (s->tls != NULL && s->tls_done) {
            px_tls_shutdown(s->tls);
            px__sock_tls_out(s);
        }
        px__sock_do_shutdown(s);
    }
}

/* A write too large to be worth batching, on a socket with nothing batched before it: sealed
 * into records or handed to the kernel from the caller's buffer. 1 when it was taken. */
static int px__sock_write_now(px_sock_t *s, const char *data, size_t len)
{
    if (s->out_len > 0)
        return 0;
    int rc;
    if (s->tls != NULL) {
        if (!s->tls_done || len < PX__SOCK_SEAL_AT)
            return 0;
        rc = px__sock_seal(s, data, len);
    } else {
        if (len < PX__SOCK_FLUSH_AT)
            return 0;
        rc = px__sock_send_borrowed(s, data, len);
    }
    if (rc < 0) {
        s->err = rc;
        px__sock_schedule(s, PX__SOCK_ERROR);
    }
    return 1;
}

void px_sock_write(px_sock_t *s, const char *data, size_t len)
{
    if (s->closing || s->shut || len == 0)
        return;
    if (!px__sock_write_now(s, data, len)) {
        if (len > SIZE_MAX - s->out_len ||
            px_grow(&s->out, &s->out_cap, s->out_len + len, 1, PX__SOCK_OUT_MIN, SIZE_MAX) != 0) {
            s->err = PX_ENOMEM;
            px__sock_schedule(s, PX__SOCK_ERROR);
            return;
        }
        memcpy(s->out + s->out_len, data, len);
        s->out_len += len;
        if (s->tls != NULL && s->tls_done && s->out_len >= PX__SOCK_SEAL_AT) {
            int rc = px__sock_seal(s, s->out, s->out_len);
            s->out_len = 0; /* the buffer stays for the turn's next small writes */
            if (rc < 0) {
                s->err = rc;
                px__sock_schedule(s, PX__SOCK_ERROR);
            }
        } else if (s->tls == NULL && s->out_len >= PX__SOCK_FLUSH_AT) {
            px__sock_flush(s);
        } else {
            px__sock_schedule(s, PX__SOCK_FLUSH);
        }
    }
    if (px_sock_queued(s) > PX_WQ_HIGH)
        s->over_high = 1;
}

size_t px_sock_queued(const px_sock_t *s)
{
    return s->out_len + s->tcp.write_queue_size +
           (s->tls != NULL && s->sealed ? px_tls_output_len(s->tls) : 0);
}

int px_sock_full(const px_sock_t *s)
{
    return px_sock_queued(s) > PX_WQ_HIGH;
}

void px_sock_shutdown(px_sock_t *s)
{
    if (s->closing || s->shut)
        return;
    s->shut = 1;
    px__sock_schedule(s, PX__SOCK_FLUSH | PX__SOCK_SHUTDOWN);
}

void px_sock_close_when_flushed(px_sock_t *s)
{
    if (s->closing)
        return;
    s->close_when_flushed = 1;
    px_sock_read_stop(s);
    px__sock_schedule(s, PX__SOCK_FLUSH);
}

/* ---- reading ------------------------------------------------------------------------------ */

static void on_sock_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    px_sock_t *s = h->data;
    buf->base = s->loop->rbuf;
    buf->len = s->loop->rbuf_cap;
}

static void px__sock_uv_read(px_sock_t *s, int on);

/* Delivers decrypted plaintext while the owner reads; what is left stays inside OpenSSL. */
static void px__sock_pump(px_sock_t *s)
{
    while (!s->closing && s->reading) {
        int n = px_tls_read(s->tls, s->loop->tbuf, s->loop->tbuf_cap);
        if (n == 0)
            break;
        if (n < 0) {
            s->eof = 1;
            px__sock_uv_read(s, 0);
            px__sock_tls_out(s);
            s->cbs->on_eof(s, n == UV_EOF ? UV_EOF : n);
            return;
        }
        s->cbs->on_read(s, s->loop->tbuf, (size_t)n);
    }
    if (!s->closing)
        px__sock_tls_out_soon(s); /* a read may have produced records (key updates) */
}

/* Runs the handshake or delivers plaintext after received ciphertext was lent to TLS. */
static void px__sock_tls_run(px_sock_t *s)
{
    if (!s->tls_done) {
        char err[PX_SOCK_TLS_ERR_MAX] = "";
        int rc = px_tls_handshake(s->tls, err, sizeof(err));
        if (rc < 0)
            px__sock_tls_fail(s, err);
        if (rc == 1)
            s->tls_done = 1; /* a TLS 1.3 server's tickets wait for the first write */
        px__sock_tls_out_soon(s);
        if (rc == 0)
            return;
        if (rc < 0) {
            s->eof = 1;
            px__sock_uv_read(s, 0);
            if (s->cbs->on_handshake != NULL)
                s->cbs->on_handshake(s, rc);
            return;
        }
        if (!s->reading)
            px__sock_uv_read(s, 0); /* the handshake read for itself; now the owner decides */
        if (s->cbs->on_handshake != NULL)
            s->cbs->on_handshake(s, 0);
        if (s->closing)
            return;
    }
    px__sock_pump(s);
    if (!s->closing && s->out_len == 0)
        px__sock_trim_later(s); /* the records read were all taken */
}

/* Received ciphertext (borrowed) goes through TLS from where it is; only a partial record left
 * at the end is copied, for the next read. */
static void px__sock_tls_in(px_sock_t *s, const char *data, size_t len)
{
    px_tls_lend(s->tls, data, len);
    px__sock_tls_run(s);
    /* the socket may be closing (its TLS is freed on the last callback, not before) */
    if (px_tls_keep(s->tls) != 0 && !s->closing && !s->eof) {
        s->eof = 1;
        px__sock_uv_read(s, 0);
        s->cbs->on_eof(s, PX_ENOMEM);
    }
}

static void on_sock_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    px_sock_t *s = st->data;
    (void)buf;
    if (nread == 0 || s->closing)
        return;
    s->loop->reads++;
    if (nread < 0) {
        s->eof = 1;
        px__sock_uv_read(s, 0);
        if (s->tls != NULL && !s->tls_done && s->cbs->on_handshake != NULL) {
            px__sock_tls_fail(s, "TLS handshake failed: connection closed");
            s->cbs->on_handshake(s, PX_ETLS);
            return;
        }
        s->cbs->on_eof(s, (int)nread);
        return;
    }
    if (s->tls != NULL)
        px__sock_tls_in(s, s->loop->rbuf, (size_t)nread);
    else
        s->cbs->on_read(s, s->loop->rbuf, (size_t)nread);
}

static void px__sock_uv_read(px_sock_t *s, int on)
{
    if (on && !s->uv_reading && !s->eof && !s->closing) {
        if (uv_read_start((uv_stream_t *)&s->tcp, on_sock_alloc, on_sock_read) == 0)
            s->uv_reading = 1;
    } else if (!on && s->uv_reading) {
        uv_read_stop((uv_stream_t *)&s->tcp);
        s->uv_reading = 0;
    }
}

void px_sock_read_start(px_sock_t *s)
{
    if (s->reading || s->closing || s->close_when_flushed)
        return;
    s->reading = 1;
    /* a TLS handshake reads whatever the owner wants; afterwards reads follow the owner */
    px__sock_uv_read(s, 1);
    if (s->tls != NULL && s->tls_done)
        px__sock_schedule(s, PX__SOCK_PUMP);
}

void px_sock_read_stop(px_sock_t *s)
{
    if (!s->reading)
        return;
    s->reading = 0;
    if (s->tls == NULL || s->tls_done)
        px__sock_uv_read(s, 0);
}

/* ---- the deferred call ---------------------------------------------------------------------- */

static void on_sock_deferred(px_defer_t *d)
{
    px_sock_t *s = px_container_of(d, px_sock_t, defer);
    int what = s->pending & ~PX__SOCK_SHUTDOWN;
    s->pending &= PX__SOCK_SHUTDOWN;
    if (s->closing)
        return;
    if (what & PX__SOCK_ERROR) {
        px__sock_uv_read(s, 0);
        s->reading = 0;
        s->eof = 1;
        s->cbs->on_eof(s, s->err);
        return;
    }
    if (what & PX__SOCK_FIRST) {
        char *first = s->first;
        size_t n = s->first_len;
        s->first = NULL;
        s->first_len = 0;
        px__sock_tls_in(s, first, n);
        free(first);
        if (s->closing)
            return;
    }
    if ((what & PX__SOCK_FLUSH) || (s->pending & PX__SOCK_SHUTDOWN))
        px__sock_flush(s);
    if (!s->closing && (what & PX__SOCK_PUMP) && s->tls != NULL && s->tls_done)
        px__sock_pump(s);
    if (!s->closing && (what & PX__SOCK_DRAIN))
        px__sock_check_drain(s);
}

static void px__sock_schedule(px_sock_t *s, int what)
{
    s->pending |= what;
    px_defer(s->loop, &s->defer, on_sock_deferred);
}

/* ---- setup and close ------------------------------------------------------------------------ */

void px_sock_init(px_loop_t *l, px_sock_t *s, const px_sock_cbs_t *cbs, void *data)
{
    memset(s, 0, sizeof(*s));
    s->loop = l;
    s->cbs = cbs;
    s->data = data;
    uv_tcp_init(l->uv, &s->tcp);
    s->tcp.data = s;
}

int px_sock_accept(px_sock_t *s, uv_stream_t *server)
{
    int rc = uv_accept(server, (uv_stream_t *)&s->tcp);
    if (rc == 0)
        uv_tcp_nodelay(&s->tcp, 1);
    return rc;
}

/* The request is the socket's only while it connects: accepted sockets (most of them) never
 * carry one. libuv calls back before the handle's close callback, with UV_ECANCELED when the
 * socket closed first, so s is still there. */
static void on_sock_connected(uv_connect_t *req, int status)
{
    px_sock_t *s = req->data;
    free(req);
    if (s->closing || status == UV_ECANCELED)
        return;
    if (status == 0)
        uv_tcp_nodelay(&s->tcp, 1);
    s->cbs->on_connect(s, status);
}

int px_sock_connect(px_sock_t *s, const struct sockaddr *sa)
{
    uv_connect_t *req = malloc(sizeof(*req));
    if (req == NULL)
        return PX_ENOMEM;
    req->data = s;
    int rc = uv_tcp_connect(req, &s->tcp, sa, on_sock_connected);
    if (rc != 0)
        free(req);
    return rc;
}

int px_sock_tls_server(px_sock_t *s, SSL_CTX *ctx, void *app, const char *first, size_t len)
{
    s->tls = px_tls_new(ctx, 1, app);
    if (s->tls == NULL)
        return PX_ENOMEM;
    if (len > 0) {
        s->first = malloc(len);
        if (s->first == NULL)
            return PX_ENOMEM;
        memcpy(s->first, first, len);
        s->first_len = len;
        px__sock_schedule(s, PX__SOCK_FIRST);
    }
    return 0;
}

int px_sock_tls_client(px_sock_t *s, SSL_CTX *ctx, const char *host, uint16_t port,
                       const unsigned char *alpn, unsigned alpn_len)
{
    s->tls = px_tls_new(ctx, 0, s);
    if (s->tls == NULL)
        return PX_ENOMEM;
    if (alpn != NULL && SSL_set_alpn_protos(px_tls_ssl(s->tls), alpn, alpn_len) != 0)
        return PX_ENOMEM;
    int rc = px_tls_set_upstream_host(s->tls, host, port);
    if (rc != 0)
        return rc;
    char err[PX_SOCK_TLS_ERR_MAX] = "";
    rc = px_tls_handshake(s->tls, err, sizeof(err));
    if (rc < 0) {
        px__sock_tls_fail(s, err);
        return rc;
    }
    px__sock_tls_out(s);
    px__sock_uv_read(s, 1); /* the handshake needs the server's answer */
    return 0;
}

SSL *px_sock_ssl(const px_sock_t *s)
{
    return s->tls != NULL ? px_tls_ssl(s->tls) : NULL;
}

const char *px_sock_tls_error(const px_sock_t *s)
{
    return s->tls_err != NULL ? s->tls_err : "";
}

static void on_sock_closed(uv_handle_t *h)
{
    px_sock_t *s = h->data;
    px_quiet_cancel(s->loop, &s->quiet);
    px_tls_free(s->tls);
    s->tls = NULL;
    free(s->out);
    s->out = NULL;
    free(s->first);
    s->first = NULL;
    free(s->tls_err);
    s->tls_err = NULL;
    s->cbs->on_closed(s);
}

void px_sock_close(px_sock_t *s)
{
    if (s->closing)
        return;
    s->closing = 1;
    s->reading = 0;
    px_defer_cancel(s->loop, &s->defer);
    px_quiet_cancel(s->loop, &s->quiet);
    s->pending = 0;
    if (s->uv_reading)
        uv_read_stop((uv_stream_t *)&s->tcp);
    s->uv_reading = 0;
    uv_close((uv_handle_t *)&s->tcp, on_sock_closed);
}
