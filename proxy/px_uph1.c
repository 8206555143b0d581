/* HTTP/1.1 toward upstream (px_upstream.h's requests over px_h1.h's response parser): one request
 * at a time on a connection, its head and body framed as they come, the response parsed and
 * handed to the owner, a retry on a stale pooled connection. Reached only through its two
 * tables: px__up_h1_stream (r->ops, set when a request lands here) and px__up_h1_conn (u->ops,
 * every connection's until a TLS handshake picks h2). A raw connection (a passthrough) is one
 * too, until it becomes a tunnel's side. */
#include <stdlib.h>
#include <string.h>

#include "proxy/px_upstream_int.h"

static const px__up_stream_ops_t px__up_h1_stream;
static void px__deliver(px_upconn_t *u, const char *data, size_t len);

/* ---- the request side ------------------------------------------------------------------ */

static void px__write(px_upreq_t *r, const char *data, size_t len)
{
    if (r->failed || len == 0)
        return;
    px_sock_write(&r->conn->sock, data, len);
}

static void h1_data(px_upreq_t *r, const char *data, size_t len)
{
    if (r->body == PX_UP_BODY_CHUNKED) {
        char h[20];
        px__write(r, h, px_h1_chunk_head(h, len));
        px__write(r, data, len);
        px__write(r, "\r\n", 2);
        return;
    }
    px__write(r, data, len);
}

static void h1_end(px_upreq_t *r, const px_fields_t *t)
{
    if (r->body == PX_UP_BODY_CHUNKED) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px__write(r, last, px_h1_last_chunk(last, t));
    }
}

static size_t h1_queued(const px_upreq_t *r)
{
    return px_sock_queued(&r->conn->sock);
}

static void on_conn_resume(px_defer_t *d)
{
    px_upconn_t *u = px_container_of(d, px_upconn_t, defer);
    px_upreq_t *r = u->req;
    if (u->closing || r == NULL || r->paused)
        return;
    if (u->in_len > 0) {
        char *buf = u->in;
        size_t n = u->in_len;
        u->in = NULL;
        u->in_len = 0;
        px__deliver(u, buf, n);
        free(buf);
    } else if (u->parser.paused && u->parser.state == PX_H1_BODY) {
        /* paused on the body's last bytes: the response's end is delivered now, with no byte */
        px__deliver(u, "", 0);
    }
    if (!u->closing && u->req == r && !r->paused)
        px_sock_read_start(&u->sock);
}

static void h1_pause(px_upreq_t *r, int pause)
{
    px_upconn_t *u = r->conn;
    if (pause)
        px_sock_read_stop(&u->sock);
    else
        px_defer(u->m->loop, &u->defer, on_conn_resume);
}

/* The connection is pooled when the exchange left it clean, else it closes. */
static void h1_release(px_upreq_t *r, int clean)
{
    px_upconn_t *u = r->conn;
    r->conn = NULL;
    r->ops = NULL;
    u->req = NULL;
    if (clean && u->reusable && !u->closing && u->delivering)
        u->pool_later = 1; /* a request sent from the owner's on_end must not take it yet */
    else if (clean && u->reusable && !u->closing)
        px__up_pool_put(u);
    else
        px__up_conn_close(u);
}

static const px__up_stream_ops_t px__up_h1_stream = {
    .data = h1_data,
    .end = h1_end,
    .queued = h1_queued,
    .high = PX_WQ_HIGH,
    .pause = h1_pause,
    .release = h1_release,
};

/* The connection is ready for r: the head and what r wrote so far go out, framed; on_ready
 * from the loop. */
static void h1_attach(px_upconn_t *u, px_upreq_t *r)
{
    u->req = r;
    r->conn = u;
    r->ops = &px__up_h1_stream;
    u->got_bytes = 0;
    u->reusable = 0;
    uv_timer_stop(&u->timer);
    px_h1_next(&u->parser);
    if (r->is_head)
        px_h1_expect_no_body(&u->parser);
    if (r->raw) {
        free(r->pend);
        r->pend = NULL;
        r->pend_len = r->pend_cap = 0;
        px__up_ready_later(r);
        return;
    }
    px_sock_write(&u->sock, r->head, r->head_len);
    char *pend = r->pend;
    size_t pend_len = r->pend_len;
    r->pend = NULL;
    r->pend_len = r->pend_cap = 0;
    if (pend_len > 0 && !r->failed)
        h1_data(r, pend, pend_len);
    free(pend);
    if (r->ended && r->body == PX_UP_BODY_CHUNKED) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px_sock_write(&u->sock, last, px_h1_last_chunk(last, r->trailers));
    }
    free(r->trailers);
    r->trailers = NULL;
    if (!r->paused)
        px_sock_read_start(&u->sock);
    px__up_ready_later(r);
}

/* ---- responses ------------------------------------------------------------------------- */

static int on_resp_head(void *owner, px_msg_t *m)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL) {
        px_msg_free(m);
        return 1;
    }
    free(r->head); /* past the point of a retry */
    r->head = NULL;
    u->keepalive = (m->flags & PX_MSG_KEEPALIVE) && !(m->flags & PX_MSG_UNTIL_CLOSE);
    r->cbs->on_head(r->owner, m);
    return u->req != r || r->cbs == NULL || r->paused;
}

static int on_resp_data(void *owner, const char *data, size_t len)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL)
        return 1;
    r->cbs->on_data(r->owner, data, len);
    return u->req != r || r->cbs == NULL || r->paused;
}

static int on_resp_end(void *owner, const px_fields_t *t)
{
    px_upconn_t *u = owner;
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL)
        return 1;
    r->resp_done = 1;
    u->reusable = u->keepalive && r->ended;
    r->cbs->on_end(r->owner, t);
    return 1;
}

const px_h1_cbs_t px__up_h1_resp_cbs = {on_resp_head, on_resp_data, on_resp_end};

/* Response bytes: parsed and handed to the request's owner while it takes them. */
static void px__deliver_run(px_upconn_t *u, const char *data, size_t len)
{
    size_t off = 0;
    int once = len == 0; /* a parser paused on a body's last bytes runs once with none */
    while ((off < len || once) && !u->closing) {
        once = 0;
        if (u->state == PX__C_TUNNEL) {
            px_tunnel_data(u->tun, 1, data + off, len - off);
            return;
        }
        px_upreq_t *r = u->req;
        if (r == NULL || r->cbs == NULL) {
            px__up_conn_close(u); /* bytes nobody asked for: the connection is done */
            return;
        }
        if (r->paused) {
            char *nb = realloc(u->in, u->in_len + (len - off));
            if (nb == NULL) {
                px__up_req_fail(r, "out of memory");
                return;
            }
            memcpy(nb + u->in_len, data + off, len - off);
            u->in = nb;
            u->in_len += len - off;
            px_sock_read_stop(&u->sock);
            return;
        }
        if (u->parser.state == PX_H1_DONE || u->parser.state == PX_H1_UPGRADED) {
            u->reusable = 0; /* bytes after a complete response: a broken upstream */
            return;
        }
        size_t used = 0;
        int rc = px_h1_feed(&u->parser, data + off, len - off, &used);
        if (rc < 0) {
            px__up_req_fail(r, "invalid response from upstream: %s", u->parser.reason);
            return;
        }
        off += used;
        if (used == 0 && u->req == r && !r->paused && u->parser.state != PX_H1_DONE)
            break;
    }
}

/* The owner may end its exchange from a callback in here and send its next request at once:
 * the connection waits for the pool until every byte read is accounted for (a byte after the
 * response closes it instead). */
static void px__deliver(px_upconn_t *u, const char *data, size_t len)
{
    u->delivering++;
    px__deliver_run(u, data, len);
    if (--u->delivering == 0 && u->pool_later) {
        u->pool_later = 0;
        if (u->req == NULL && !u->closing)
            px__up_pool_put(u);
    }
}

/* ---- the connection side --------------------------------------------------------------- */

static void h1_read(px_upconn_t *u, const char *data, size_t len)
{
    if (u->in_pool) {
        px__up_conn_close(u); /* idle in the pool: any byte means the connection is done */
        return;
    }
    px__deliver(u, data, len);
}

static void h1_eof(px_upconn_t *u, int err)
{
    px_upreq_t *r = u->req;
    if (r == NULL || r->cbs == NULL) {
        px__up_conn_close(u);
        return;
    }
    if (u->reused && !u->got_bytes && r->head != NULL && r->ended && r->body == PX_UP_BODY_NONE &&
        !r->retried) {
        /* a pooled connection the server had closed: once more on a fresh one */
        r->retried = 1;
        u->req = NULL;
        r->conn = NULL;
        r->ops = NULL;
        px__up_conn_close(u);
        char key[PX__KEY_MAX];
        px__up_key(key, sizeof(key), r->host, r->port, r->tls, 0);
        px__up_connect_new(r, key); /* the head goes out again on attaching */
        return;
    }
    if (err == UV_EOF && u->parser.state == PX_H1_BODY && px_h1_finish(&u->parser) == 0) {
        u->reusable = 0; /* the response ended with the connection (on_end has fired) */
        return;
    }
    if (r->resp_done) {
        u->reusable = 0; /* the response is complete; the request's owner decides */
        return;
    }
    if (u->parser.state == PX_H1_BODY)
        px__up_req_fail(r, "Server disconnected during the response (%s)",
                        err == UV_EOF ? "connection closed" : uv_strerror(err));
    else
        px__up_req_fail(r, "Server disconnected before sending a response (%s)",
                        err == UV_EOF ? "connection closed" : uv_strerror(err));
}

static void h1_flush(px_upconn_t *u)
{
    px_upreq_t *r = u->req;
    if (r != NULL && r->cbs != NULL && r->full && px__up_queued(r) < PX_WQ_LOW) {
        r->full = 0;
        if (r->cbs->on_drain != NULL)
            r->cbs->on_drain(r->owner);
    }
}

const px__up_conn_ops_t px__up_h1_conn = {
    .attach = h1_attach,
    .read = h1_read,
    .eof = h1_eof,
    .flush = h1_flush,
    .multi = 0,
};
