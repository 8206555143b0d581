#include "app/px_metrics_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "ca/ca.h"
#include "proxy/px_log.h"
#include "proxy/px_metrics.h"

#define PX__METRICS_BODY_MAX (128 * 1024) /* the whole text: at most ~390 series (metrics.md) */

typedef struct px__mconn px__mconn_t;

struct px_metrics_http {
    uv_tcp_t tcp;
    px_ctx_t *ctx;
    px__mconn_t *conns;
    size_t nconns;
    int stopping;
    int handles; /* the listener, and the structure itself until stop */
};

struct px__mconn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    px_metrics_http_t *h;
    px__mconn_t *next;
    char head[PX_METRICS_HEAD_MAX];
    size_t len;
    int handles;
    int answered;
    uv_write_t wr;
    char *out;
};

static void px__h_free_if_done(px_metrics_http_t *h)
{
    if (h->handles == 0 && h->nconns == 0)
        free(h);
}

static void on_conn_closed(uv_handle_t *hd)
{
    px__mconn_t *c = hd->data;
    if (--c->handles > 0)
        return;
    px_metrics_http_t *h = c->h;
    for (px__mconn_t **p = &h->conns; *p != NULL; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    h->nconns--;
    free(c->out);
    free(c);
    px__h_free_if_done(h);
}

static void px__conn_close(px__mconn_t *c)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp))
        return;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_written(uv_write_t *w, int status)
{
    (void)status;
    px__conn_close(w->data);
}

/* Writes the answer (status line, head, body), then the connection closes. */
static void px__answer(px__mconn_t *c, int status, const char *reason, const char *body,
                       size_t blen)
{
    c->answered = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
    size_t cap = blen + 256;
    c->out = malloc(cap);
    if (c->out == NULL) {
        px__conn_close(c);
        return;
    }
    int n = snprintf(c->out, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     status, reason, blen);
    memcpy(c->out + n, body, blen);
    uv_buf_t b = uv_buf_init(c->out, (unsigned)((size_t)n + blen));
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_written) != 0)
        px__conn_close(c);
}

static void px__serve(px__mconn_t *c)
{
    static const char get[] = "GET /metrics";
    if (c->len < 4 || memcmp(c->head, "GET ", 4) != 0) {
        px__answer(c, 405, "Method Not Allowed", "only GET\n", 9);
        return;
    }
    /* "GET /metrics" then a space or a query ("?..."), nothing else */
    if (c->len <= sizeof(get) - 1 || memcmp(c->head, get, sizeof(get) - 1) != 0 ||
        (c->head[sizeof(get) - 1] != ' ' && c->head[sizeof(get) - 1] != '?')) {
        px__answer(c, 404, "Not Found", "not found: the metrics are at /metrics\n", 39);
        return;
    }
    px_ctx_t *ctx = c->h->ctx;
    px_metrics_gauges_t g = {.connections = ctx->nclients, .accepted = ctx->next_id};
    if (ctx->conns_all != NULL) { /* --workers: every loop's */
        g.connections = __atomic_load_n(ctx->conns_all, __ATOMIC_RELAXED);
        g.accepted = __atomic_load_n(ctx->accepted_all, __ATOMIC_RELAXED);
    }
    if (ctx->ca != NULL) {
        ca_cache_stats_t st;
        ca_cache_get_stats(ctx->ca, &st);
        g.leaf_cache_hits = st.hits;
        g.leaf_cache_misses = st.misses;
    }
    char *body = malloc(PX__METRICS_BODY_MAX);
    if (body == NULL) {
        px__conn_close(c);
        return;
    }
    px_metrics_t *sum = malloc(sizeof(*sum)); /* ~40 KB with the sandboxes' series */
    if (sum == NULL) {
        free(body);
        px__conn_close(c);
        return;
    }
    px_metrics_sum(sum);
    size_t n = px_metrics_render(sum, &g, body, PX__METRICS_BODY_MAX);
    free(sum);
    if (n >= PX__METRICS_BODY_MAX)
        n = PX__METRICS_BODY_MAX - 1; /* cannot happen with the fixed series; cut, not overrun */
    px__answer(c, 200, "OK", body, n);
    free(body);
}

static void on_alloc(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    px__mconn_t *c = hd->data;
    buf->base = c->head + c->len;
    buf->len = sizeof(c->head) - c->len;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    px__mconn_t *c = s->data;
    if (n < 0 || c->answered) {
        px__conn_close(c);
        return;
    }
    c->len += (size_t)n;
    if (memmem(c->head, c->len, "\r\n\r\n", 4) != NULL || memmem(c->head, c->len, "\n\n", 2))
        px__serve(c);
    else if (c->len == sizeof(c->head))
        px__answer(c, 431, "Request Header Fields Too Large", "head too large\n", 15);
}

static void on_head_timeout(uv_timer_t *t)
{
    px__conn_close(t->data);
}

static void on_accept(uv_stream_t *server, int status)
{
    px_metrics_http_t *h = server->data;
    if (status < 0 || h->stopping)
        return;
    px__mconn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->h = h;
    uv_tcp_init(server->loop, &c->tcp);
    uv_timer_init(server->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    c->handles = 2;
    c->next = h->conns;
    h->conns = c;
    h->nconns++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 || h->nconns > PX_METRICS_CONNS) {
        px__conn_close(c);
        return;
    }
    uv_timer_start(&c->timer, on_head_timeout, PX_METRICS_HEAD_MS, 0);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

int px_metrics_http_start(px_ctx_t *ctx, const px_listen_t *l, px_metrics_http_t **out)
{
    px_metrics_http_t *h = calloc(1, sizeof(*h));
    if (h == NULL)
        return PX_ENOMEM;
    h->ctx = ctx;
    uv_tcp_init(ctx->loop.uv, &h->tcp);
    h->tcp.data = h;
    h->handles = 1;
    int rc = uv_tcp_bind(&h->tcp, (const struct sockaddr *)&l->addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&h->tcp, 64, on_accept);
    if (rc < 0) {
        px_diag(PX_DIAG_ERROR, "cannot listen for metrics on %s: %s", l->text, uv_strerror(rc));
        px_metrics_http_stop(h);
        return rc;
    }
    *out = h;
    return 0;
}

const uv_tcp_t *px_metrics_http_tcp(const px_metrics_http_t *h)
{
    return &h->tcp;
}

static void on_listener_closed(uv_handle_t *hd)
{
    px_metrics_http_t *h = hd->data;
    h->handles--;
    px__h_free_if_done(h);
}

void px_metrics_http_stop(px_metrics_http_t *h)
{
    if (h == NULL || h->stopping)
        return;
    h->stopping = 1;
    for (px__mconn_t *c = h->conns; c != NULL; c = c->next)
        px__conn_close(c);
    uv_close((uv_handle_t *)&h->tcp, on_listener_closed);
}
