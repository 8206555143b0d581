/* The client side of a connection: read a request head, run the pre-checks and the policy,
 * answer or hand the request to the upstream side, stream the request body, relay the
 * response, log exactly one line, then loop for keep-alive (DESIGN.md §3). */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/px_answer.h"
#include "proxy/px_err.h"
#include "proxy/px_int.h"
#include "proxy/px_policy.h"
#include "proxy/px_tls.h"
#include "ca/ca.h"
#include "proxy/px_upstream.h"

typedef struct px__wreq {
    uv_write_t req;
    px_conn_t *conn;
    char *owned;
    char data[];
} px__wreq_t;

static void px__conn_set_state(px_conn_t *c, px_state_t st)
{
    c->state = st;
}

static void px__client_read_start(px_conn_t *c);
static void px__client_read_stop(px_conn_t *c);
static void px__process_pending(px_conn_t *c);
static void px__exchange_done(px_conn_t *c);

/* ---- closing ---------------------------------------------------------------------------- */

/* Lets every addon release its per-request state. */
static void px__addons_end(px_conn_t *c)
{
    if (c->req == NULL || c->req->method.len == 0)
        return;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++)
        if ((*a)->on_request_end != NULL)
            (*a)->on_request_end(*a, c->req);
}

static void on_conn_handle_closed(uv_handle_t *h)
{
    px_conn_t *c = h->data;
    if (--c->handles_open > 0)
        return;
    px_engine_conn_closed(c->eng, c);
    px_head_free(&c->rq);
    px_head_free(&c->rs);
    free(c->pending);
    free(c->bodybuf);
    free(c->outbody);
    if (c->req != NULL) {
        px__addons_end(c);
        addon_req_reset(c->req);
        free(c->req);
    }
    px_snapshot_unref(c->snap);
    px_tls_free(c->tls_state);
    free(c);
}

void px_conn_close(px_conn_t *c)
{
    if (c->closing)
        return;
    c->closing = 1;
    px__conn_set_state(c, PX_ST_CLOSING);
    if (c->resolve_req != NULL || c->up != NULL) {
        px_upstream_t *u = c->up;
        c->up = NULL;
        if (u != NULL) {
            u->conn = NULL;
            px_upstream_close(u);
        }
        px_upstream_cancel(c);
    }
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

/* ---- writing ---------------------------------------------------------------------------- */

static void on_client_write(uv_write_t *req, int status)
{
    px__wreq_t *w = px_container_of(req, px__wreq_t, req);
    px_conn_t *c = w->conn;
    free(w->owned);
    free(w);
    if (c->closing)
        return;
    if (status < 0) {
        if (!c->logged && c->req != NULL && c->resp_started)
            px_conn_log_line(c, "ERROR", -1, "client connection lost");
        px_conn_close(c);
        return;
    }
    size_t q = c->tcp.write_queue_size;
    if (c->up != NULL && q < PX_WQ_LOW)
        px_upstream_read_start(c->up);
    if (c->close_after_write && q == 0)
        px_conn_close(c);
}

static void px__send_raw(px_conn_t *c, const char *data, size_t len, char *owned);

/* Encrypts (on TLS) and queues. owned, when not NULL, is taken. */
static void px__send(px_conn_t *c, const char *data, size_t len, char *owned)
{
    if (c->closing) {
        free(owned);
        return;
    }
    if (c->tls_state == NULL) {
        px__send_raw(c, data, len, owned);
        return;
    }
    int rc = px_tls_write(c->tls_state, data, len);
    free(owned);
    if (rc != 0) {
        px_conn_close(c);
        return;
    }
    size_t n;
    char *out = px_tls_take_output(c->tls_state, &n);
    if (out != NULL)
        px__send_raw(c, out, n, out);
}

/* Sends whatever OpenSSL wants to write (handshake records, alerts, tickets). */
static void px__tls_flush(px_conn_t *c)
{
    size_t n;
    char *out = px_tls_take_output(c->tls_state, &n);
    if (out != NULL)
        px__send_raw(c, out, n, out);
}

static void px__send_raw(px_conn_t *c, const char *data, size_t len, char *owned)
{
    if (c->closing) {
        free(owned);
        return;
    }
    px__wreq_t *w = malloc(sizeof(*w) + (owned != NULL ? 0 : len));
    if (w == NULL) {
        free(owned);
        px_conn_close(c);
        return;
    }
    w->conn = c;
    w->owned = owned;
    uv_buf_t b;
    if (owned != NULL) {
        b = uv_buf_init(owned, (unsigned)len);
    } else {
        memcpy(w->data, data, len);
        b = uv_buf_init(w->data, (unsigned)len);
    }
    int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, on_client_write);
    if (rc < 0) {
        free(w->owned);
        free(w);
        px_conn_close(c);
    }
}

void px_conn_send(px_conn_t *c, const char *data, size_t len)
{
    px__send(c, data, len, NULL);
}

void px_conn_send_take(px_conn_t *c, char *buf, size_t len)
{
    px__send(c, buf, len, buf);
}

static void px__close_when_flushed(px_conn_t *c)
{
    c->close_after_write = 1;
    px__client_read_stop(c);
    if (c->tcp.write_queue_size == 0)
        px_conn_close(c);
}

/* ---- the log line ----------------------------------------------------------------------- */

void px_conn_log_line(px_conn_t *c, const char *verdict, int status, const char *tail)
{
    if (c->logged)
        return;
    c->logged = 1;
    const char *annot = c->req != NULL ? c->req->annot : "";
    if (status < 0)
        px_log_printf(c->eng->log, "%s %s %s -> %s", verdict, c->method, c->url,
                      tail != NULL ? tail : "unknown error");
    else
        px_log_printf(c->eng->log, "%s %s %s -> %d%s%s", verdict, c->method, c->url, status,
                      annot, tail != NULL ? tail : "");
}

static void on_addon_log(void *data, const char *line, size_t len)
{
    px_conn_t *c = data;
    px_log_line(c->eng->log, line, len);
}

/* ---- answers ---------------------------------------------------------------------------- */

/* Sends a JSON answer. close: the request body cannot be skipped safely, so the connection
 * ends after the answer. */
static void px__answer(px_conn_t *c, int status, const char *json, size_t json_len, int close)
{
    char out[PX_ANSWER_MAX];
    size_t n = px_answer_build(out, sizeof(out), status, json, json_len, close);
    if (n == 0) {
        px_conn_close(c);
        return;
    }
    px_conn_send(c, out, n);
}

static void px__answer_error(px_conn_t *c, int status, const char *error, const char *message)
{
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_json_str(&b, error, strlen(error));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, message, strlen(message));
    px_sbuf_adds(&b, "}");
    px__answer(c, status, json, b.len, 1);
}

/* A head that cannot be parsed: answer 400/431, log, close. */
static void px__bad_request(px_conn_t *c, int status, const char *reason)
{
    char tail[200];
    snprintf(tail, sizeof(tail), " (%s: %s)",
             status == 431 ? "request head too large" : "malformed request", reason);
    if (c->method[0] == '\0')
        snprintf(c->method, sizeof(c->method), "-");
    if (c->url[0] == '\0')
        snprintf(c->url, sizeof(c->url), "-");
    px_conn_log_line(c, "BLOCKED", status, tail);
    px__answer_error(c, status, status == 431 ? "request_header_fields_too_large" : "bad_request",
                     reason);
    px__close_when_flushed(c);
}

/* ---- reading ---------------------------------------------------------------------------- */

static void on_client_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    (void)hint;
    buf->base = malloc(PX_READ_BUF);
    buf->len = buf->base != NULL ? PX_READ_BUF : 0;
}

static void px__client_data(px_conn_t *c, char *data, size_t len, char *owned);
static void on_client_timer(uv_timer_t *t);
static void px__addon_answer(px_conn_t *c, const addon_answer_t *ans);
static void px__client_eof(px_conn_t *c, int err);

static void px__client_eof(px_conn_t *c, int err)
{
    if (c->state == PX_ST_UPGRADED && c->up != NULL && err == UV_EOF) {
        px__client_read_stop(c);
        px_upstream_shutdown(c->up);
        return;
    }
    if (c->req != NULL && !c->logged && c->state != PX_ST_READ_HEAD &&
        c->state != PX_ST_TLS_HANDSHAKE)
        px_conn_log_line(c, "ERROR", -1,
                         c->req_done ? "Client disconnected."
                                     : "Client disconnected before the request ended.");
    px_conn_close(c);
}

/* Moves decrypted bytes to the request logic while the connection wants them; what is not
 * wanted yet stays inside OpenSSL until reading restarts. */
static void px__tls_pump(px_conn_t *c)
{
    if (c->in_pump) {
        c->pump_again = 1;
        return;
    }
    c->in_pump = 1;
    do {
        c->pump_again = 0;
        while (!c->closing && c->reading) {
            char *plain = malloc(PX_TLS_READ_CHUNK);
            if (plain == NULL) {
                px_conn_close(c);
                break;
            }
            int n = px_tls_read(c->tls_state, plain, PX_TLS_READ_CHUNK);
            if (n <= 0) {
                free(plain);
                px__tls_flush(c);
                if (n < 0)
                    px__client_eof(c, n == UV_EOF ? UV_EOF : UV_EPROTO);
                break;
            }
            if (c->state == PX_ST_READ_HEAD)
                uv_timer_again(&c->timer);
            px__client_data(c, plain, (size_t)n, plain);
        }
    } while (c->pump_again && !c->closing);
    c->in_pump = 0;
    if (!c->closing)
        px__tls_flush(c);
}

/* The first bytes of a connection: TLS (port 443, or a ClientHello on port 80) or not. */
static int px__sniff(px_conn_t *c, const char *data, size_t len)
{
    c->sniffed = 1;
    int is_tls = px_tls_sniff(data, len);
    if (c->kind == PX_LISTEN_HTTPS && !is_tls)
        return PX_EPARSE; /* not TLS on the TLS port: close without a word */
    if (!is_tls)
        return 0;
    if (c->eng->tls_server == NULL)
        return PX_EUNSUPPORTED;
    c->tls_state = px_tls_new(c->eng->tls_server, 1, c);
    if (c->tls_state == NULL)
        return PX_ENOMEM;
    c->tls = 1;
    px__conn_set_state(c, PX_ST_TLS_HANDSHAKE);
    uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->handshake_ms, 0);
    return 0;
}

static void on_client_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    px_conn_t *c = s->data;
    if (nread == 0) {
        free(buf->base);
        return;
    }
    if (nread < 0) {
        free(buf->base);
        px__client_eof(c, (int)nread);
        return;
    }
    if (!c->sniffed && px__sniff(c, buf->base, (size_t)nread) != 0) {
        free(buf->base);
        px_conn_close(c);
        return;
    }
    if (c->tls_state == NULL) {
        if (c->state == PX_ST_READ_HEAD)
            uv_timer_again(&c->timer);
        px__client_data(c, buf->base, (size_t)nread, buf->base);
        return;
    }
    int rc = px_tls_feed(c->tls_state, buf->base, (size_t)nread);
    free(buf->base);
    if (rc != 0) {
        px_conn_close(c);
        return;
    }
    if (!c->tls_done) {
        char err[256];
        rc = px_tls_handshake(c->tls_state, err, sizeof(err));
        px__tls_flush(c);
        if (rc < 0) {
            px_diag(PX_DIAG_INFO, "client TLS handshake failed: %s", err);
            px__close_when_flushed(c);
            return;
        }
        if (rc == 0)
            return;
        c->tls_done = 1;
        px__conn_set_state(c, PX_ST_READ_HEAD);
        uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms,
                       c->eng->cfg->client_idle_ms);
    }
    px__tls_pump(c);
}

static void px__client_read_start(px_conn_t *c)
{
    if (c->reading || c->closing || c->close_after_write)
        return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_client_alloc, on_client_read) == 0)
        c->reading = 1;
    /* plaintext may already wait inside OpenSSL */
    if (c->reading && c->tls_state != NULL && c->tls_done)
        px__tls_pump(c);
}

static void px__client_read_stop(px_conn_t *c)
{
    if (!c->reading)
        return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

static void px__pending_add(px_conn_t *c, const char *data, size_t len)
{
    if (len == 0)
        return;
    if (c->pending_len + len > PX_HEAD_BUF_MAX) {
        px__client_read_stop(c);
        px_conn_close(c);
        return;
    }
    char *p = realloc(c->pending, c->pending_len + len);
    if (p == NULL) {
        px_conn_close(c);
        return;
    }
    memcpy(p + c->pending_len, data, len);
    c->pending = p;
    c->pending_len += len;
}

/* ---- body filters (an addon rewrites the request body) ---------------------------------- */

static const addon_t *px__body_owner(px_conn_t *c)
{
    return c->req != NULL ? c->req->state_owner : NULL;
}

static int px__grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 65536;
    while (n < need)
        n *= 2;
    char *p = realloc(*buf, n);
    if (p == NULL)
        return PX_ENOMEM;
    *buf = p;
    *cap = n;
    return 0;
}

/* The addon's output toward upstream, re-framed when the request was chunked. */
static int px__sink_upstream(void *data, const char *buf, size_t len)
{
    px_conn_t *c = data;
    if (c->up == NULL)
        return PX_ESTATE;
    if (len == 0)
        return 0;
    if (c->rechunk) {
        char hdr[24];
        int n = snprintf(hdr, sizeof(hdr), "%zx\r\n", len);
        px_upstream_send(c->up, hdr, (size_t)n);
        px_upstream_send(c->up, buf, len);
        px_upstream_send(c->up, "\r\n", 2);
    } else {
        px_upstream_send(c->up, buf, len);
    }
    return 0;
}

static int px__sink_buffer(void *data, const char *buf, size_t len)
{
    px_conn_t *c = data;
    if (px__grow(&c->outbody, &c->outcap, c->outlen + len) != 0)
        return PX_ENOMEM;
    memcpy(c->outbody + c->outlen, buf, len);
    c->outlen += len;
    return 0;
}

/* llhttp hands over body bytes, framing removed. */
static int px__on_filtered_body(void *owner, const char *at, size_t len)
{
    px_conn_t *c = owner;
    addon_req_t *r = c->req;
    if (r->body_mode == ADDON_BODY_BUFFER) {
        if (c->bodylen + len > r->body_cap) {
            c->filter_err = PX_ETOOBIG;
            return -1;
        }
        if (px__grow(&c->bodybuf, &c->bodycap, c->bodylen + len) != 0) {
            c->filter_err = PX_ENOMEM;
            return -1;
        }
        memcpy(c->bodybuf + c->bodylen, at, len);
        c->bodylen += len;
        return 0;
    }
    const addon_t *a = px__body_owner(c);
    addon_sink_t sink = {px__sink_upstream, c};
    int rc = a != NULL && a->on_request_body != NULL ? a->on_request_body(a, r, at, len, &sink)
                                                      : px__sink_upstream(c, at, len);
    if (rc < 0) {
        c->filter_err = rc;
        return -1;
    }
    return 0;
}

static void px__filter_failed(px_conn_t *c, int err)
{
    if (err == PX_ETOOBIG && c->up == NULL) {
        px_conn_log_line(c, "BLOCKED", 413, " (request body over the limit)");
        px__answer_error(c, 413, "request_body_too_large",
                         "The request body is larger than airlock can hold for signing.");
        px__close_when_flushed(c);
        return;
    }
    if (!c->resp_started && c->up == NULL) {
        px_conn_log_line(c, "ERROR", 403, " (signing failed: the request body could not be re-signed)");
        px__answer_error(c, 403, "signing_failed", "airlock could not re-sign this request body; it was not sent.");
        px__close_when_flushed(c);
        return;
    }
    /* the head already went upstream: abort both sides, nothing half-signed goes on */
    px_conn_log_line(c, "ERROR", -1, "request body could not be re-signed; aborted");
    px_conn_close(c);
}

static void px__start_upstream(px_conn_t *c);

/* The filtered body ended. */
static void px__filter_end(px_conn_t *c)
{
    addon_req_t *r = c->req;
    const addon_t *a = px__body_owner(c);
    addon_answer_t ans;
    memset(&ans, 0, sizeof(ans));
    if (r->body_mode == ADDON_BODY_BUFFER) {
        addon_sink_t sink = {px__sink_buffer, c};
        int rc = 0;
        if (a != NULL && a->on_request_body != NULL && c->bodylen > 0)
            rc = a->on_request_body(a, r, c->bodybuf, c->bodylen, &sink);
        else if (c->bodylen > 0)
            rc = px__sink_buffer(c, c->bodybuf, c->bodylen);
        if (rc >= 0 && a != NULL && a->on_request_body_end != NULL)
            rc = a->on_request_body_end(a, r, &sink, &ans);
        free(c->bodybuf);
        c->bodybuf = NULL;
        c->bodylen = c->bodycap = 0;
        if (rc == ADDON_ANSWER) {
            px__addon_answer(c, &ans);
            return;
        }
        if (rc < 0) {
            px__filter_failed(c, rc);
            return;
        }
        px__start_upstream(c);
        return;
    }
    addon_sink_t sink = {px__sink_upstream, c};
    int rc = a != NULL && a->on_request_body_end != NULL ? a->on_request_body_end(a, r, &sink, &ans)
                                                          : 0;
    if (rc != 0) {
        px__filter_failed(c, rc < 0 ? rc : PX_ESIGNING);
        return;
    }
    if (c->rechunk && c->up != NULL)
        px_upstream_send(c->up, "0\r\n\r\n", 5);
}

/* Runs body bytes through the body-filter parser. Returns the bytes of this request. */
static size_t px__filter_feed(px_conn_t *c, const char *data, size_t len)
{
    c->rq.msg_done = 0;
    c->rq.owner = c;
    c->rq.on_body = px__on_filtered_body;
    c->req_parser.data = &c->rq;
    llhttp_errno_t err = llhttp_execute(&c->req_parser, data, len);
    size_t used = len;
    if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
        used = (size_t)(llhttp_get_error_pos(&c->req_parser) - data);
    } else if (err != HPE_OK) {
        px__filter_failed(c, c->filter_err ? c->filter_err : PX_EPARSE);
        return 0;
    }
    if (c->rq.msg_done) {
        c->req_done = 1;
        px__filter_end(c);
    }
    return used;
}

/* Starts reading the body through the filter parser, from the head buffer on. */
static void px__filter_begin(px_conn_t *c)
{
    px_head_t *h = &c->rq;
    llhttp_init(&c->req_parser, HTTP_REQUEST, &c->eng->body_settings);
    c->req_done = 0;
    px__filter_feed(c, h->buf + h->msg_start, h->len - h->msg_start);
}

/* Body bytes of the current request: forward them (RELAY) or drop them (DISCARD). Returns
 * the number of bytes that belonged to this request. */
static size_t px__body_feed(px_conn_t *c, char *data, size_t len, char *owned, int *took)
{
    *took = 0;
    if (c->filter && c->state == PX_ST_RELAY_BODY)
        return px__filter_feed(c, data, len);
    c->rq.msg_done = 0;
    c->req_parser.data = &c->rq;
    llhttp_errno_t err = llhttp_execute(&c->req_parser, data, len);
    size_t used = len;
    if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
        used = (size_t)(llhttp_get_error_pos(&c->req_parser) - data);
    } else if (err != HPE_OK) {
        const char *why = llhttp_get_error_reason(&c->req_parser);
        if (c->state == PX_ST_RELAY_BODY && !c->logged)
            px_conn_log_line(c, "ERROR", -1, why != NULL ? why : "malformed request body");
        px_conn_close(c);
        return 0;
    }
    if (c->rq.msg_done)
        c->req_done = 1;
    if (c->state == PX_ST_RELAY_BODY && c->up != NULL && used > 0) {
        if (owned != NULL && data == owned && used == len) {
            px_upstream_send_take(c->up, owned, used);
            *took = 1;
        } else {
            px_upstream_send(c->up, data, used);
        }
        if (px_upstream_queued(c->up) > PX_WQ_HIGH) {
            c->paused_by_upstream = 1;
            px__client_read_stop(c);
        }
    } else if (c->state == PX_ST_DISCARD_BODY) {
        c->discarded += used;
        if (c->discarded > PX_BODY_DISCARD_MAX) {
            px_conn_close(c);
            return 0;
        }
    }
    return used;
}

static void px__request_head_done(px_conn_t *c);

static void px__client_data(px_conn_t *c, char *data, size_t len, char *owned)
{
    switch (c->state) {
    case PX_ST_READ_HEAD: {
        const char *reason;
        int rc = px_head_feed(&c->rq, &c->req_parser, data, len, &reason);
        free(owned);
        if (rc < 0) {
            px__bad_request(c, rc == PX_ETOOBIG ? 431 : 400, reason);
            return;
        }
        if (rc == 1)
            px__request_head_done(c);
        return;
    }
    case PX_ST_RELAY_BODY:
    case PX_ST_DISCARD_BODY:
        if (!c->req_done) {
            int took;
            size_t used = px__body_feed(c, data, len, owned, &took);
            if (c->closing) {
                if (!took)
                    free(owned);
                return;
            }
            if (c->req_done) {
                px__pending_add(c, data + used, len - used);
                if (c->state == PX_ST_DISCARD_BODY)
                    px__exchange_done(c);
                else
                    px__client_read_stop(c);
            }
            if (!took)
                free(owned);
            return;
        }
        break;
    case PX_ST_UPGRADED:
        if (c->up != NULL) {
            px_upstream_send_take(c->up, owned, len);
            if (px_upstream_queued(c->up) > PX_WQ_HIGH) {
                c->paused_by_upstream = 1;
                px__client_read_stop(c);
            }
            return;
        }
        break;
    default:
        break;
    }
    /* Bytes of a later (pipelined) request: keep them for their turn. */
    px__pending_add(c, data, len);
    free(owned);
    if (!c->closing && c->pending_len > PX_HEAD_MAX)
        px__client_read_stop(c);
}

/* ---- the request head: pre-checks and policy ----------------------------------------------- */

static int px__host_char_ok(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '%' || ch == '!' ||
           ch == '$' || ch == '&' || ch == '\'' || ch == '(' || ch == ')' || ch == '*' ||
           ch == '+' || ch == ',' || ch == ';' || ch == '=';
}

/* Splits an authority "host[:port]" / "[v6][:port]". host excludes brackets. Returns 0, or
 * PX_EPARSE. *port is 0 when absent. */
static int px__split_authority(const char *a, size_t len, const char **host, size_t *hlen,
                               uint16_t *port, int *bracketed)
{
    *port = 0;
    *bracketed = 0;
    if (len == 0)
        return PX_EPARSE;
    size_t i;
    if (a[0] == '[') {
        const char *close = memchr(a, ']', len);
        if (close == NULL)
            return PX_EPARSE;
        *host = a + 1;
        *hlen = (size_t)(close - a - 1);
        *bracketed = 1;
        for (size_t k = 0; k < *hlen; k++) {
            char ch = (*host)[k];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') ||
                  ch == ':' || ch == '.'))
                return PX_EPARSE;
        }
        if (*hlen == 0)
            return PX_EPARSE;
        i = (size_t)(close - a) + 1;
    } else {
        i = 0;
        while (i < len && a[i] != ':') {
            if (!px__host_char_ok((unsigned char)a[i]))
                return PX_EPARSE;
            i++;
        }
        *host = a;
        *hlen = i;
        if (*hlen == 0)
            return PX_EPARSE;
    }
    if (*hlen > PX_HOST_MAX)
        return PX_EPARSE;
    if (i == len)
        return 0;
    if (a[i] != ':')
        return PX_EPARSE;
    i++;
    if (i == len)
        return 0; /* "host:" means the default port (RFC 3986 §3.2.3) */
    uint32_t p = 0;
    for (; i < len; i++) {
        if (a[i] < '0' || a[i] > '9')
            return PX_EPARSE;
        p = p * 10 + (uint32_t)(a[i] - '0');
        if (p > 65535)
            return PX_EPARSE;
    }
    if (p == 0)
        return PX_EPARSE;
    *port = (uint16_t)p;
    return 0;
}

/* Lowercases into out, drops one trailing dot. */
static size_t px__norm_host(char *out, const char *h, size_t len)
{
    if (len > 0 && h[len - 1] == '.')
        len--;
    for (size_t i = 0; i < len; i++) {
        char ch = h[i];
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    out[len] = '\0';
    return len;
}

/* After an answer of our own: drop the rest of the request body, then go on. */
static void px__after_answer(px_conn_t *c)
{
    if (c->closing)
        return;
    if (c->req_expect_continue && !c->req_done) {
        /* The client waits for 100 Continue that will never come; it may or may not send the
         * body, so the connection cannot be reused safely. */
        px__close_when_flushed(c);
        return;
    }
    px__conn_set_state(c, PX_ST_DISCARD_BODY);
    if (c->req_done) {
        px__exchange_done(c);
        return;
    }
    px__client_read_start(c);
}

/* An answer an addon made: JSON body, log line, then on to the next request. */
static void px__addon_answer(px_conn_t *c, const addon_answer_t *ans)
{
    addon_req_t *r = c->req;
    char json[PX_ANSWER_MAX / 2];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_json_str(&b, ans->error, strlen(ans->error));
    if (ans->with_request) {
        px_sbuf_adds(&b, ", \"host\": ");
        px_sbuf_json_str(&b, r->host.base, r->host.len);
        px_sbuf_adds(&b, ", \"path\": ");
        px_sbuf_json_str(&b, r->path.base, r->path.len);
        px_sbuf_adds(&b, ", \"method\": ");
        px_sbuf_json_str(&b, r->method.base, r->method.len);
    }
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, ans->message, strlen(ans->message));
    px_sbuf_adds(&b, "}");
    if (b.overflow) {
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": ");
        px_sbuf_json_str(&b, ans->error, strlen(ans->error));
        px_sbuf_adds(&b, ", \"message\": ");
        px_sbuf_json_str(&b, ans->message, strlen(ans->message));
        px_sbuf_adds(&b, "}");
    }
    px_conn_log_line(c, ans->verdict != NULL ? ans->verdict : "BLOCKED", ans->status,
                     ans->log_tail[0] ? ans->log_tail : NULL);
    px__answer(c, ans->status, json, b.len, !c->req_done && c->req_expect_continue);
    px__after_answer(c);
}

static const char px__connect_msg[] =
    "CONNECT tunneling is not allowed here. This sandbox reaches the network only through "
    "airlock's DNS answers: connect to the host name directly (plain HTTP or HTTPS).";
static const char px__mismatch_msg[] =
    "Host mismatch: the Host header and the request's destination disagree. This request has "
    "been blocked to prevent an allowlist bypass.";

static void px__mismatch(px_conn_t *c, const char *host, size_t hlen, const char *other,
                         size_t olen, const char *key)
{
    char tail[600];
    snprintf(tail, sizeof(tail), " (host mismatch: header=%.*s, %s=%.*s)", (int)hlen, host,
             key, (int)olen, other);
    px_conn_log_line(c, "BLOCKED", 403, tail);
    char json[2048];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
    px_sbuf_json_str(&b, host, hlen);
    px_sbuf_printf(&b, ", \"%s\": ", strcmp(key, "sni") == 0 ? "sni" : "url_host");
    px_sbuf_json_str(&b, other, olen);
    px_sbuf_adds(&b, ", \"method\": ");
    px_sbuf_json_str(&b, c->method, strlen(c->method));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, px__mismatch_msg, sizeof(px__mismatch_msg) - 1);
    px_sbuf_adds(&b, "}");
    px__answer(c, 403, json, b.len, !c->req_done && c->req_expect_continue);
    px__after_answer(c);
}

static void px__build_url(px_conn_t *c, const char *host, size_t hlen, int bracketed,
                          uint16_t port, const char *path, size_t plen)
{
    px_sbuf_t b;
    px_sbuf_init(&b, c->url, sizeof(c->url));
    px_sbuf_adds(&b, c->tls ? "https://" : "http://");
    if (bracketed)
        px_sbuf_add(&b, "[", 1);
    px_sbuf_add(&b, host, hlen);
    if (bracketed)
        px_sbuf_add(&b, "]", 1);
    if (port != (c->tls ? 443 : 80))
        px_sbuf_printf(&b, ":%u", port);
    px_sbuf_add(&b, path, plen);
    if (b.overflow) {
        size_t keep = sizeof(c->url) - 16;
        memcpy(c->url + keep, "...", 4);
    }
}

static void px__request_head_done(px_conn_t *c)
{
    px_head_t *h = &c->rq;
    px__conn_set_state(c, PX_ST_POLICY);
    uv_timer_stop(&c->timer);
    px__client_read_stop(c);
    c->req_done = h->msg_done;
    c->req_keepalive = llhttp_should_keep_alive(&c->req_parser);
    const char *mname = llhttp_method_name((llhttp_method_t)c->req_parser.method);
    snprintf(c->method, sizeof(c->method), "%s", mname);
    c->req_is_head = c->req_parser.method == HTTP_HEAD;
    c->req_upgrade = c->req_parser.upgrade && c->req_parser.method != HTTP_CONNECT;
    int ei = px_head_find(h, "expect");
    c->req_expect_continue = ei >= 0 && px_span_ieq(h, h->values[ei], "100-continue");

    /* bytes after this message wait for their turn */
    if (h->msg_done && h->parsed < h->len) {
        px__pending_add(c, h->buf + h->parsed, h->len - h->parsed);
        h->len = h->parsed;
    }

    const char *target = h->buf + h->url.off;
    size_t tlen = h->url.len;
    uint16_t def_port = c->tls ? 443 : 80;

    /* 1. Host present, exactly once, well formed */
    int nhost = px_head_count(h, "host");
    int hi = px_head_find(h, "host");
    if (nhost > 1) {
        px__bad_request(c, 400, "duplicate Host header");
        return;
    }
    if (px_head_count(h, "content-length") > 1) {
        px__bad_request(c, 400, "duplicate Content-Length header");
        return;
    }
    const char *hv = hi >= 0 ? h->buf + h->values[hi].off : NULL;
    size_t hvlen = hi >= 0 ? h->values[hi].len : 0;

    /* 2. CONNECT on 80/443 */
    if (c->req_parser.method == HTTP_CONNECT) {
        snprintf(c->url, sizeof(c->url), "%.*s", (int)(tlen < 512 ? tlen : 512), target);
        px_conn_log_line(c, "BLOCKED", 403, " (tunneling not allowed)");
        char json[1024];
        px_sbuf_t b;
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
        px_sbuf_json_str(&b, target, tlen < 300 ? tlen : 300);
        px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": ");
        px_sbuf_json_str(&b, px__connect_msg, sizeof(px__connect_msg) - 1);
        px_sbuf_adds(&b, "}");
        /* after a CONNECT head the client may start its tunnel: never reuse the connection */
        px__answer(c, 403, json, b.len, 1);
        px__close_when_flushed(c);
        return;
    }

    if (hi < 0) {
        px__bad_request(c, 400, "missing Host header");
        return;
    }
    const char *host;
    size_t hlen;
    uint16_t hport;
    int bracketed;
    if (px__split_authority(hv, hvlen, &host, &hlen, &hport, &bracketed) != 0) {
        px__bad_request(c, 400, "invalid Host header");
        return;
    }
    uint16_t port = hport ? hport : def_port;

    /* request target: origin-form, absolute-form or asterisk */
    const char *path = target;
    size_t plen = tlen;
    if (tlen > 0 && target[0] == '/') {
        /* origin-form */
    } else if (tlen == 1 && target[0] == '*') {
        /* OPTIONS * */
    } else {
        size_t slen = 0;
        if (tlen > 7 && strncasecmp(target, "http://", 7) == 0)
            slen = 7;
        else if (tlen > 8 && strncasecmp(target, "https://", 8) == 0)
            slen = 8;
        if (slen == 0) {
            px__bad_request(c, 400, "invalid request target");
            return;
        }
        const char *auth = target + slen;
        size_t alen = 0;
        while (slen + alen < tlen && auth[alen] != '/' && auth[alen] != '?' && auth[alen] != '#')
            alen++;
        if (memchr(auth, '@', alen) != NULL) {
            px__bad_request(c, 400, "userinfo in request target");
            return;
        }
        const char *uhost;
        size_t uhlen;
        uint16_t uport;
        int ubr;
        if (px__split_authority(auth, alen, &uhost, &uhlen, &uport, &ubr) != 0) {
            px__bad_request(c, 400, "invalid host in request target");
            return;
        }
        path = auth + alen;
        plen = tlen - slen - alen;
        char a1[PX_HOST_MAX + 1], a2[PX_HOST_MAX + 1];
        size_t l1 = px__norm_host(a1, host, hlen);
        size_t l2 = px__norm_host(a2, uhost, uhlen);
        uint16_t ueff = uport ? uport : (slen == 8 ? 443 : 80);
        if (l1 != l2 || memcmp(a1, a2, l1) != 0 || ueff != port) {
            px__build_url(c, host, hlen, bracketed, port, plen ? path : "/", plen ? plen : 1);
            px__mismatch(c, host, hlen, uhost, uhlen, "url");
            return;
        }
        if (plen == 0 || path[0] != '/') {
            if (plen > 0 && path[0] == '#') {
                px__bad_request(c, 400, "fragment in request target");
                return;
            }
            /* "http://host?x" → "/?x" is what a client means; keep it simple: prefix "/" */
        }
    }
    px__build_url(c, host, hlen, bracketed, port, plen ? path : "/", plen ? plen : 1);

    /* on TLS, the Host must name what the ClientHello named (port and case aside) */
    if (c->tls && c->has_sni) {
        char hn[PX_HOST_MAX + 1];
        size_t hnl = px__norm_host(hn, host, hlen);
        if (hnl != strlen(c->sni) || memcmp(hn, c->sni, hnl) != 0) {
            px__mismatch(c, host, hlen, c->sni, strlen(c->sni), "sni");
            return;
        }
    }

    /* the view handed to the addons */
    if (c->req == NULL) {
        c->req = calloc(1, sizeof(*c->req));
        if (c->req == NULL) {
            px_conn_close(c);
            return;
        }
    }
    addon_req_t *r = c->req;
    r->log_cb = on_addon_log;
    r->log_data = c;
    r->method.base = c->method;
    r->method.len = strlen(c->method);
    r->target.base = target;
    r->target.len = tlen;
    r->path.base = plen ? path : "/";
    r->path.len = plen ? plen : 1;
    r->host.base = host;
    r->host.len = hlen;
    r->port = port;
    r->tls = c->tls;
    r->nheaders = 0;
    for (size_t i = 0; i < h->n; i++) {
        addon_header_t *ah = &r->headers[r->nheaders++];
        ah->name.base = h->buf + h->names[i].off;
        ah->name.len = h->names[i].len;
        ah->value.base = h->values[i].len ? h->buf + h->values[i].off : "";
        ah->value.len = h->values[i].len;
        ah->removed = 0;
    }
    c->port = port;
    px__norm_host(c->host, host, hlen);

    /* 3. the addons (policy, then credentials), under the snapshot this request started with */
    px_snapshot_unref(c->snap);
    c->snap = px_engine_snapshot_ref(c->eng);
    r->config = &c->snap->cfg;
    r->url = c->url;
    for (const addon_t *const *a = px_addons(); *a != NULL; a++) {
        if ((*a)->on_request_head == NULL)
            continue;
        addon_answer_t ans;
        memset(&ans, 0, sizeof(ans));
        int rc = (*a)->on_request_head(*a, r, &ans);
        if (rc == ADDON_ANSWER) {
            px__addon_answer(c, &ans);
            return;
        }
        if (rc < 0) {
            px_conn_log_line(c, "ERROR", -1, "internal error in an addon");
            px__answer_error(c, 502, "internal_error", "airlock failed to process this request");
            px__close_when_flushed(c);
            return;
        }
    }

    /* 4. an addon that rewrites the body */
    if (r->body_mode != ADDON_BODY_PASS &&
        (c->req_parser.flags & (F_CHUNKED | F_CONTENT_LENGTH)) != 0) {
        c->filter = 1;
        c->rechunk = (c->req_parser.flags & F_CHUNKED) != 0;
        if (r->body_mode == ADDON_BODY_BUFFER) {
            /* gather the body first: the head depends on it */
            px__conn_set_state(c, PX_ST_RELAY_BODY);
            if (c->req_expect_continue && !c->req_done)
                px_conn_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
            px__filter_begin(c);
            if (!c->closing && !c->req_done)
                px__client_read_start(c);
            return;
        }
    } else if (r->body_mode == ADDON_BODY_BUFFER) {
        /* no body at all: the addon still gets its end call */
        c->filter = 1;
        c->req_done = 1;
        px__filter_end(c);
        return;
    }

    /* 5. upstream */
    px__start_upstream(c);
}

static void px__start_upstream(px_conn_t *c)
{
    px__conn_set_state(c, PX_ST_RESOLVE);
    px__client_read_stop(c);
    px_upstream_start(c);
}

/* ---- the upstream side calls these -------------------------------------------------------- */

static int px__hop_by_hop(const px_head_t *h, px_span_t name, const char *conn_val,
                          size_t conn_len)
{
    static const char *const fixed[] = {"connection", "keep-alive", "proxy-connection", "te",
                                        "proxy-authorization", "upgrade", "expect"};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (px_span_ieq(h, name, fixed[i]))
            return 1;
    /* fields named by Connection, except those that frame the message */
    if (conn_val == NULL || px_span_ieq(h, name, "host") ||
        px_span_ieq(h, name, "content-length") || px_span_ieq(h, name, "transfer-encoding"))
        return 0;
    size_t i = 0;
    while (i < conn_len) {
        while (i < conn_len && (conn_val[i] == ' ' || conn_val[i] == ',' || conn_val[i] == '\t'))
            i++;
        size_t s = i;
        while (i < conn_len && conn_val[i] != ',' && conn_val[i] != ' ' && conn_val[i] != '\t')
            i++;
        if (i > s && name.len == i - s && strncasecmp(h->buf + name.off, conn_val + s, i - s) == 0)
            return 1;
    }
    return 0;
}

/* Serializes the request head for upstream from the addon view. */
static char *px__upstream_head(px_conn_t *c, size_t *outlen)
{
    addon_req_t *r = c->req;
    px_head_t *h = &c->rq;
    size_t cap = 256 + r->path.len;
    for (size_t i = 0; i < r->nheaders; i++)
        cap += r->headers[i].name.len + r->headers[i].value.len + 4;
    char *out = malloc(cap);
    if (out == NULL)
        return NULL;
    int ci = px_head_find(h, "connection");
    const char *cv = ci >= 0 ? h->buf + h->values[ci].off : NULL;
    size_t cl = ci >= 0 ? h->values[ci].len : 0;
    size_t n = 0;
#define PX__PUT(s, l)                                                                          \
    do {                                                                                       \
        memcpy(out + n, (s), (l));                                                             \
        n += (l);                                                                              \
    } while (0)
    PX__PUT(c->method, strlen(c->method));
    PX__PUT(" ", 1);
    PX__PUT(r->path.base, r->path.len);
    PX__PUT(" HTTP/1.1\r\n", 11);
    for (size_t i = 0; i < r->nheaders; i++) {
        const addon_header_t *ah = &r->headers[i];
        if (ah->removed)
            continue;
        if (i < h->n && ah->name.base == h->buf + h->names[i].off &&
            px__hop_by_hop(h, h->names[i], cv, cl))
            continue;
        if (c->filter && c->req->body_mode == ADDON_BODY_BUFFER && !c->rechunk &&
            ah->name.len == 14 && strncasecmp(ah->name.base, "content-length", 14) == 0) {
            /* a buffered body may have changed length: say the new one */
            n += (size_t)snprintf(out + n, 40, "Content-Length: %zu\r\n", c->outlen);
            continue;
        }
        PX__PUT(ah->name.base, ah->name.len);
        PX__PUT(": ", 2);
        PX__PUT(ah->value.base, ah->value.len);
        PX__PUT("\r\n", 2);
    }
    if (c->req_upgrade) {
        int ui = px_head_find(h, "upgrade");
        if (ui >= 0) {
            PX__PUT("Connection: Upgrade\r\nUpgrade: ", 30);
            PX__PUT(h->buf + h->values[ui].off, h->values[ui].len);
            PX__PUT("\r\n", 2);
        }
    }
    PX__PUT("\r\n", 2);
#undef PX__PUT
    *outlen = n;
    return out;
}

void px_conn_upstream_ready(px_conn_t *c)
{
    size_t n;
    char *head = px__upstream_head(c, &n);
    if (head == NULL) {
        px_conn_close(c);
        return;
    }
    px_head_reset(&c->rs);
    c->rs.no_body = c->req_is_head;
    llhttp_init(&c->resp_parser, HTTP_RESPONSE, &c->eng->resp_settings);
    c->resp_parser.data = &c->rs;
    px_upstream_send_take(c->up, head, n);
    px_head_t *h = &c->rq;
    if (c->filter && c->req->body_mode == ADDON_BODY_BUFFER) {
        /* the body was gathered and rewritten before the head was signed */
        if (c->outlen > 0)
            px__sink_upstream(c, c->outbody, c->outlen);
        if (c->rechunk)
            px_upstream_send(c->up, "0\r\n\r\n", 5);
        free(c->outbody);
        c->outbody = NULL;
        c->outlen = c->outcap = 0;
        px__conn_set_state(c, PX_ST_RELAY_BODY);
    } else if (c->filter) {
        if (c->req_expect_continue && !c->req_done)
            px_conn_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        px__conn_set_state(c, PX_ST_RELAY_BODY);
        px__filter_begin(c);
        if (c->closing)
            return;
    } else {
        if (c->req_expect_continue && !c->req_done)
            px_conn_send(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
        /* body bytes that arrived with the head */
        if (h->len > h->head_end)
            px_upstream_send(c->up, h->buf + h->head_end, h->len - h->head_end);
        px__conn_set_state(c, PX_ST_RELAY_BODY);
    }
    px_upstream_read_start(c->up);
    px_upstream_first_byte_timer(c->up, c->eng->cfg->upstream_first_byte_ms);
    if (!c->req_done)
        px__client_read_start(c);
}

void px_conn_upstream_failed(px_conn_t *c, const char *why)
{
    if (c->up != NULL) {
        px_upstream_t *u = c->up;
        c->up = NULL;
        u->conn = NULL;
        px_upstream_close(u);
    }
    if (c->resp_started) {
        px_conn_log_line(c, "ERROR", -1, why);
        px_conn_close(c);
        return;
    }
    px_conn_log_line(c, "ERROR", -1, why);
    px__answer_error(c, 502, "upstream_error", why);
    px__close_when_flushed(c);
}

void px_conn_upstream_drained(px_conn_t *c)
{
    if (c->paused_by_upstream) {
        c->paused_by_upstream = 0;
        if (!c->req_done || c->state == PX_ST_UPGRADED)
            px__client_read_start(c);
    }
}

/* Rewrites the response head for the client: hop-by-hop fields out, our Connection in. */
static void px__forward_response_head(px_conn_t *c)
{
    px_head_t *h = &c->rs;
    int status = c->resp_parser.status_code;
    int upgraded = status == 101 && c->req_upgrade;
    int ci = px_head_find(h, "connection");
    const char *cv = ci >= 0 ? h->buf + h->values[ci].off : NULL;
    size_t cl = ci >= 0 ? h->values[ci].len : 0;
    size_t cap = 128 + (h->head_end - h->msg_start);
    char *out = malloc(cap);
    if (out == NULL) {
        px_conn_close(c);
        return;
    }
    size_t n = (size_t)snprintf(out, cap, "HTTP/1.1 %d %.*s\r\n", status, (int)h->url.len,
                                h->buf + h->url.off);
    for (size_t i = 0; i < h->n; i++) {
        if (!upgraded && px__hop_by_hop(h, h->names[i], cv, cl))
            continue;
        if (upgraded && !px_span_ieq(h, h->names[i], "connection") &&
            !px_span_ieq(h, h->names[i], "upgrade") && px__hop_by_hop(h, h->names[i], cv, cl))
            continue;
        memcpy(out + n, h->buf + h->names[i].off, h->names[i].len);
        n += h->names[i].len;
        memcpy(out + n, ": ", 2);
        n += 2;
        memcpy(out + n, h->buf + h->values[i].off, h->values[i].len);
        n += h->values[i].len;
        memcpy(out + n, "\r\n", 2);
        n += 2;
    }
    if (!upgraded && status >= 200 && c->resp_close) {
        memcpy(out + n, "Connection: close\r\n", 19);
        n += 19;
    }
    memcpy(out + n, "\r\n", 2);
    n += 2;
    px_conn_send_take(c, out, n);
}

static void px__response_done(px_conn_t *c)
{
    c->resp_done = 1;
    if (c->req_done) {
        px__exchange_done(c);
        return;
    }
    /* upstream answered before the request body ended: that connection cannot be reused;
     * drop the rest of the body and keep the client */
    px_upstream_t *u = c->up;
    c->up = NULL;
    if (u != NULL) {
        u->conn = NULL;
        px_upstream_close(u);
    }
    px_conn_log_line(c, "allowed", c->resp_status, NULL);
    if (c->resp_close) {
        px__close_when_flushed(c);
        return;
    }
    px__conn_set_state(c, PX_ST_DISCARD_BODY);
    px__client_read_start(c);
}

void px_conn_upstream_data(px_conn_t *c, const char *data, size_t len)
{
    while (len > 0 && !c->closing) {
        if (c->state == PX_ST_UPGRADED) {
            px_conn_send(c, data, len);
            return;
        }
        if (!c->resp_started) {
            const char *reason;
            int rc = px_head_feed(&c->rs, &c->resp_parser, data, len, &reason);
            if (rc < 0) {
                char why[200];
                snprintf(why, sizeof(why), "invalid response from upstream: %s", reason);
                px_conn_upstream_failed(c, why);
                return;
            }
            if (rc == 0)
                return;
            px_head_t *h = &c->rs;
            int status = c->resp_parser.status_code;
            c->resp_status = status;
            /* what came after the head in this piece */
            size_t body_in_buf = h->parsed - h->head_end;
            size_t rest_off = h->parsed;
            size_t rest_len = h->len - h->parsed;
            if (status >= 100 && status < 200 && status != 101) {
                /* interim response: pass it on, then read the real one */
                px__forward_response_head(c);
                char *rest = NULL;
                if (rest_len > 0) {
                    rest = malloc(rest_len);
                    if (rest == NULL) {
                        px_conn_close(c);
                        return;
                    }
                    memcpy(rest, h->buf + rest_off, rest_len);
                }
                px_head_reset(h);
                h->len = 0;
                h->no_body = c->req_is_head;
                llhttp_init(&c->resp_parser, HTTP_RESPONSE, &c->eng->resp_settings);
                c->resp_parser.data = h;
                if (rest != NULL)
                    px_conn_upstream_data(c, rest, rest_len);
                free(rest);
                return;
            }
            c->resp_started = 1;
            px__conn_set_state(c, PX_ST_READ_RESPONSE);
            int keep = llhttp_should_keep_alive(&c->resp_parser);
            c->resp_close = !c->req_keepalive || llhttp_message_needs_eof(&c->resp_parser) ||
                            c->eng->stopping;
            (void)keep;
            if (status == 101 && c->req_upgrade) {
                px__forward_response_head(c);
                px_conn_log_line(c, "allowed", 101, NULL);
                px__conn_set_state(c, PX_ST_UPGRADED);
                uv_timer_stop(&c->up->timer);
                if (h->len > h->head_end)
                    px_conn_send(c, h->buf + h->head_end, h->len - h->head_end);
                px__client_read_start(c);
                /* request bytes already waiting belong to the new protocol */
                if (c->pending_len > 0 && c->up != NULL) {
                    px_upstream_send(c->up, c->pending, c->pending_len);
                    c->pending_len = 0;
                }
                return;
            }
            px__forward_response_head(c);
            if (body_in_buf > 0)
                px_conn_send(c, h->buf + h->head_end, body_in_buf);
            if (h->msg_done) {
                px__response_done(c);
                return; /* bytes after a complete response are dropped (a broken upstream) */
            }
            (void)rest_len;
            return;
        }
        /* response body */
        c->rs.msg_done = 0;
        c->resp_parser.data = &c->rs;
        llhttp_errno_t err = llhttp_execute(&c->resp_parser, data, len);
        size_t used = len;
        if (err == HPE_PAUSED || err == HPE_PAUSED_UPGRADE) {
            used = (size_t)(llhttp_get_error_pos(&c->resp_parser) - data);
        } else if (err != HPE_OK) {
            px_conn_upstream_failed(c, "invalid response body from upstream");
            return;
        }
        if (used > 0)
            px_conn_send(c, data, used);
        if (c->up != NULL && c->tcp.write_queue_size > PX_WQ_HIGH)
            px_upstream_read_stop(c->up);
        if (c->rs.msg_done)
            px__response_done(c);
        return;
    }
}

void px_conn_upstream_eof(px_conn_t *c, int err)
{
    if (c->state == PX_ST_UPGRADED) {
        if (err == UV_EOF && c->up != NULL) {
            /* half-close toward the client once everything was written */
            px__close_when_flushed(c);
        } else {
            px_conn_close(c);
        }
        return;
    }
    if (c->resp_started && !c->resp_done && err == UV_EOF) {
        c->resp_parser.data = &c->rs;
        c->rs.msg_done = 0;
        llhttp_errno_t e = llhttp_finish(&c->resp_parser);
        if ((e == HPE_OK || e == HPE_PAUSED) && c->rs.msg_done) {
            c->resp_close = 1;
            px_upstream_t *u = c->up;
            c->up = NULL;
            if (u != NULL) {
                u->conn = NULL;
                px_upstream_close(u);
            }
            px__response_done(c);
            return;
        }
    }
    char why[160];
    if (!c->resp_started)
        snprintf(why, sizeof(why), "Server disconnected before sending a response (%s)",
                 err == UV_EOF ? "connection closed" : uv_strerror(err));
    else
        snprintf(why, sizeof(why), "Server disconnected during the response (%s)",
                 err == UV_EOF ? "connection closed" : uv_strerror(err));
    px_conn_upstream_failed(c, why);
}

/* ---- exchange end and keep-alive --------------------------------------------------------- */

static void px__exchange_done(px_conn_t *c)
{
    if (c->resp_started)
        px_conn_log_line(c, "allowed", c->resp_status, NULL);
    if (c->up != NULL) {
        px_upstream_t *u = c->up;
        c->up = NULL;
        int reusable = c->resp_done && c->req_done && !c->resp_close &&
                       llhttp_should_keep_alive(&c->resp_parser);
        u->conn = NULL;
        px_upstream_release(u, reusable);
    }
    int close = !c->req_keepalive || c->resp_close || c->eng->stopping;
    /* reset for the next request */
    if (c->req != NULL) {
        px__addons_end(c);
        addon_req_reset(c->req);
    }
    px_snapshot_unref(c->snap);
    c->snap = NULL;
    px_head_reset(&c->rq);
    c->rq.len = 0;
    if (c->rq.cap > 16384) {
        px_head_free(&c->rq);
    }
    px_head_free(&c->rs);
    free(c->bodybuf);
    free(c->outbody);
    c->bodybuf = c->outbody = NULL;
    c->bodylen = c->bodycap = c->outlen = c->outcap = 0;
    c->filter = c->rechunk = c->filter_err = 0;
    c->req_done = c->resp_done = c->resp_started = 0;
    c->resp_status = 0;
    c->resp_close = 0;
    c->logged = 0;
    c->discarded = 0;
    c->method[0] = '\0';
    c->url[0] = '\0';
    if (close) {
        px__close_when_flushed(c);
        return;
    }
    px__conn_set_state(c, PX_ST_READ_HEAD);
    llhttp_init(&c->req_parser, HTTP_REQUEST, &c->eng->req_settings);
    c->req_parser.data = &c->rq;
    px__process_pending(c);
}

static void on_client_timer(uv_timer_t *t)
{
    px_conn_t *c = t->data;
    if (c->state == PX_ST_READ_HEAD && c->rq.len > 0 && !c->logged) {
        snprintf(c->method, sizeof(c->method), "-");
        snprintf(c->url, sizeof(c->url), "-");
        px_conn_log_line(c, "BLOCKED", 408, " (request head not received in time)");
    }
    px_conn_close(c);
}

/* Parses buffered pipelined bytes, one request at a time; then reads the socket again. */
static void px__process_pending(px_conn_t *c)
{
    while (!c->closing && c->state == PX_ST_READ_HEAD && c->pending_len > 0) {
        char *p = c->pending;
        size_t n = c->pending_len;
        c->pending = NULL;
        c->pending_len = 0;
        px__client_data(c, p, n, p);
    }
    if (!c->closing && c->state == PX_ST_READ_HEAD) {
        uv_timer_start(&c->timer, on_client_timer, c->eng->cfg->client_idle_ms,
                       c->eng->cfg->client_idle_ms);
        px__client_read_start(c);
    }
}

/* OpenSSL asks for the certificate once the ClientHello is read: mint (or take from the
 * cache) a leaf for the SNI, or for the proxy IP when there is none. */
static int on_tls_cert(SSL *ssl, void *arg)
{
    (void)arg;
    px_conn_t *c = SSL_get_app_data(ssl);
    px_engine_t *eng = c->eng;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    char ipbuf[64];
    char norm[CA_NAME_MAX + 1];
    if (name != NULL && name[0] != '\0') {
        if (ca_name_normalize(name, strlen(name), norm, sizeof(norm), NULL) != 0)
            return 0; /* a name no certificate can carry: fail the handshake */
        snprintf(c->sni, sizeof(c->sni), "%s", norm);
        c->has_sni = 1;
        name = norm;
    } else {
        inet_ntop(AF_INET, &eng->proxy_ip, ipbuf, sizeof(ipbuf));
        name = ipbuf;
    }
    ca_leaf_t *leaf = NULL;
    if (ca_leaf_acquire(eng->ca, name, strlen(name), &leaf) != 0)
        return 0;
    int ok = SSL_use_certificate(ssl, ca_leaf_get_cert(leaf)) == 1 &&
             SSL_use_PrivateKey(ssl, ca_leaf_get_key(leaf)) == 1 &&
             SSL_set1_chain(ssl, ca_leaf_get_chain(leaf)) == 1;
    ca_leaf_release(leaf);
    return ok ? 1 : 0;
}

int px_conn_tls_cert_cb(SSL *ssl, void *arg)
{
    return on_tls_cert(ssl, arg);
}

static void on_accept_failed_closed(uv_handle_t *h)
{
    free(h->data);
}

void px_conn_accept(px_listener_t *l)
{
    px_engine_t *eng = l->eng;
    px_conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->eng = eng;
    c->kind = l->kind;
    c->tls = l->kind == PX_LISTEN_HTTPS;
    uv_tcp_init(eng->loop, &c->tcp);
    c->tcp.data = c;
    c->handles_open = 1;
    if (uv_accept((uv_stream_t *)&l->tcp, (uv_stream_t *)&c->tcp) != 0) {
        uv_close((uv_handle_t *)&c->tcp, on_accept_failed_closed);
        return;
    }
    uv_timer_init(eng->loop, &c->timer);
    c->timer.data = c;
    c->handles_open = 2;
    c->id = ++eng->next_id;
    c->prev = NULL;
    c->next = eng->conns;
    if (eng->conns != NULL)
        eng->conns->prev = c;
    eng->conns = c;
    eng->nconns++;
    if (eng->nconns > PX_CONNS_MAX || eng->stopping) {
        px_conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    llhttp_init(&c->req_parser, HTTP_REQUEST, &eng->req_settings);
    c->req_parser.data = &c->rq;
    px__conn_set_state(c, PX_ST_READ_HEAD);
    px__process_pending(c);
}
