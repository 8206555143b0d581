/* The HTTP/1 server side of a client connection: requests read in order, each one an exchange
 * (px_xchg.h) whose response is written back through px_down_ops_t; pipelined requests wait
 * for their turn, a paused body stops the reads. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "proxy/px_answer.h"
#include "proxy/px_client_int.h"
#include "base/px_err.h"
#include "net/px_hello.h"
#include "proxy/px_policy.h"

/* The HTTP/1 server side's state, made when a connection starts HTTP/1 (px__cl_start_http). */
struct px__h1srv {
    px_h1_t parser;
    px_xchg_t *x;     /* the exchange of the request being read or answered */
    px__in_t in;      /* read ahead of its turn: a pipelined request, a paused body */
    int body_paused;
    int resp_chunked; /* the response going out is re-framed in chunks */
    int close_after;  /* the connection ends after this response */
    int eof;          /* the client half-closed after a whole request */
};

static const px_h1_cbs_t px__cl_req_cbs;
static const px_down_ops_t px__cl_down;

/* ---- input ----------------------------------------------------------------------------------- */

int px__in_keep(px__in_t *in, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    if (in->len + len > PX_IN_MAX)
        return PX_ETOOBIG;
    if (in->cap - in->len < len) {
        size_t cap = in->cap ? in->cap : 4096;
        while (cap - in->len < len)
            cap *= 2;
        char *nb = realloc(in->p, cap);
        if (nb == NULL)
            return PX_ENOMEM;
        in->p = nb;
        in->cap = cap;
    }
    memcpy(in->p + in->len, data, len);
    in->len += len;
    return 0;
}

void px__in_drop(px__in_t *in, size_t n)
{
    if (n == 0)
        return; /* also when nothing is kept (in->p may be NULL) */
    memmove(in->p, in->p + n, in->len - n);
    in->len -= n;
    if (in->len == 0 && in->cap > 16384) {
        free(in->p); /* an idle connection keeps no big buffer */
        in->p = NULL;
        in->cap = 0;
    }
}

/* ---- the protocol object ---------------------------------------------------------------------- */

void px__cl_h1_free(px_client_t *c)
{
    px__h1srv_t *h = c->h1;
    if (h == NULL)
        return;
    c->h1 = NULL;
    px_h1_free(&h->parser);
    free(h->in.p);
    free(h);
}

void px__cl_start_http(px_client_t *c)
{
    px__cl_h1_free(c); /* the one that read a CONNECT: what followed it was taken already */
    c->h1 = calloc(1, sizeof(*c->h1));
    if (c->h1 == NULL) {
        px__cl_close(c);
        return;
    }
    px_h1_init(&c->h1->parser, 1, &px__cl_req_cbs, c);
    c->mode = PX__HTTP;
    px__cl_timer(c, c->ctx->cfg->client_idle_ms);
}

int px__cl_h1_eof(px_client_t *c, int err)
{
    px__h1srv_t *h = c->h1;
    if (h == NULL || h->x == NULL)
        return 0;
    if (err == UV_EOF && h->parser.state == PX_H1_DONE) {
        h->eof = 1; /* after a whole request: the response still goes out, then the end */
        return 1;
    }
    px_xchg_t *x = h->x;
    h->x = NULL;
    int reading = h->parser.state == PX_H1_BODY;
    px_xchg_abort(x, reading ? "Client disconnected before the request ended."
                             : "Client disconnected.");
    return 0;
}

void px__cl_h1_drain(px_client_t *c)
{
    if (c->h1 != NULL && c->h1->x != NULL)
        px_xchg_drain(c->h1->x);
}

int px__cl_h1_mid_head(px_client_t *c)
{
    return c->h1 != NULL && c->h1->x == NULL && px_h1_mid_head(&c->h1->parser);
}

int px__cl_h1_in_flight(px_client_t *c)
{
    return c->h1 != NULL && c->h1->x != NULL;
}

void px__cl_h1_close_after(px_client_t *c)
{
    if (c->h1 != NULL)
        c->h1->close_after = 1;
}

void px__cl_h1_abort(px_client_t *c, const char *reason)
{
    if (c->h1 == NULL || c->h1->x == NULL)
        return;
    px_xchg_t *x = c->h1->x;
    c->h1->x = NULL;
    px_xchg_abort(x, reason);
}

/* ---- the HTTP/1 server side ------------------------------------------------------------------ */


/* A head that cannot be parsed: 400 or 431, logged, then the connection closes. */
void px__cl_bad_request(px_client_t *c, int status, const char *reason)
{
    audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, NULL, status);
    px_log_eventf(c->log, &ev, "%s: %s",
                  status == 431 ? "request head too large" : "malformed request", reason);
    char json[512];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_adds(&b, status == 431 ? "\"request_header_fields_too_large\"" : "\"bad_request\"");
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, reason, strlen(reason));
    px_sbuf_adds(&b, "}");
    char out[PX_ANSWER_MAX];
    size_t n = px_answer_build(out, sizeof(out), status, json, b.len, 1);
    px_sock_write(&c->sock, out, n);
    px__cl_close_flush(c);
}

static int on_req_head(void *owner, px_msg_t *m)
{
    px_client_t *c = owner;
    px__cl_timer_stop(c);
    if (px__cl_sb_left(c)) { /* its sandbox went or no longer holds its source: not one more */
        px_msg_free(m);
        px__cl_close(c);
        return 1;
    }
    px_pre_ctx_t ctx = {.kind = c->kind,
                        .tls = c->tls,
                        .sni = c->sni,
                        .tunnel = c->tunnel,
                        .tunnel_port = c->tunnel_port,
                        .orig_port = c->orig_port};
    px_pre_t *pre = malloc(sizeof(*pre));
    if (pre == NULL) {
        px_msg_free(m);
        px__cl_close(c);
        return 1;
    }
    px_precheck(m, &ctx, pre);
    if (pre->verdict == PX_PRE_TUNNEL) {
        px__cl_connect(c, m, pre);
        free(pre);
        return 1;
    }
    px_xchg_from_t from = {.ops = &px__cl_down, .down = c, .pre = ctx, .log = c->log,
                           .snap = px__cl_snap(c), .up = px__cl_up(c),
                           .budgets = px__cl_budgets(c)};
    c->h1->resp_chunked = 0;
    c->h1->close_after = 0;
    c->h1->x = px_xchg_start(c->ctx, &from, m, pre);
    free(pre);
    if (c->h1->x == NULL) {
        px__cl_close(c);
        return 1;
    }
    /* a stage that waits (a hold, a token mint) paused the body already: the parser stops
     * here, so the body bytes read with the head stay in the input until it resumes */
    return c->h1->body_paused;
}

static int on_req_data(void *owner, const char *data, size_t len)
{
    px_client_t *c = owner;
    if (c->h1->x != NULL)
        px_xchg_body(c->h1->x, data, len);
    return c->h1->body_paused || c->closing;
}

static int on_req_end(void *owner, const px_fields_t *t)
{
    px_client_t *c = owner;
    if (c->h1->x != NULL)
        px_xchg_body_end(c->h1->x, t);
    return 1;
}

static const px_h1_cbs_t px__cl_req_cbs = {on_req_head, on_req_data, on_req_end};

/* Parses what it can of data: the current request's head and body; a further request waits for
 * the current exchange to finish. Returns the bytes taken. */
static size_t px__cl_http_input(px_client_t *c, const char *data, size_t len)
{
    px__h1srv_t *h = c->h1;
    size_t off = 0;
    /* a parser paused inside a body runs once even with no byte left: a pause on the body's
     * last bytes leaves the message's end to be delivered when it resumes */
    while ((off < len || (h->parser.paused && h->parser.state == PX_H1_BODY)) && !c->closing &&
           c->mode == PX__HTTP && !h->body_paused) {
        if (h->parser.state == PX_H1_DONE || h->parser.state == PX_H1_UPGRADED)
            break; /* the next request waits for this exchange */
        if (h->parser.state == PX_H1_HEAD && h->x != NULL)
            break;
        if (h->parser.state == PX_H1_HEAD && h->parser.hlen == 0)
            px__cl_timer(c, c->ctx->cfg->client_idle_ms); /* a head has a deadline from its start */
        size_t used = 0;
        int rc = px_h1_feed(&h->parser, data + off, len - off, &used);
        off += used;
        if (rc < 0) {
            if (h->x != NULL) {
                px_xchg_body_error(h->x, h->parser.reason);
                px_sock_read_stop(&c->sock);
                h->body_paused = 1; /* nothing more is read; the exchange closes us */
            } else {
                px__cl_bad_request(c, rc == PX_ETOOBIG ? 431 : 400, h->parser.reason);
            }
            break;
        }
        if (used == 0)
            break;
    }
    return off;
}

/* Runs buffered input (after a pause, or when the next request may start). */
static void px__cl_process(px_client_t *c)
{
    if (c->closing || c->mode != PX__HTTP)
        return;
    px__h1srv_t *h = c->h1;
    if (h->in.len > 0 || (h->parser.paused && h->parser.state == PX_H1_BODY)) {
        size_t used = px__cl_http_input(c, h->in.p != NULL ? h->in.p : "", h->in.len);
        if (!c->closing)
            px__in_drop(&h->in, used);
    }
    if (c->closing)
        return;
    if (h->in.len >= PX_IN_MAX || h->body_paused)
        px_sock_read_stop(&c->sock);
    else
        px_sock_read_start(&c->sock);
}

/* Bytes read in PX__HTTP mode: parsed now, or kept behind what waits already. */
void px__cl_h1_read(px_client_t *c, const char *data, size_t len)
{
    px__h1srv_t *h = c->h1;
    if (h->in.len > 0) {
        if (px__in_keep(&h->in, data, len) != 0) {
            px__cl_close(c);
            return;
        }
        px__cl_process(c);
        return;
    }
    size_t used = px__cl_http_input(c, data, len);
    if (c->closing)
        return;
    if (px__in_keep(&h->in, data + used, len - used) != 0) {
        px__cl_close(c);
        return;
    }
    if (h->in.len >= PX_IN_MAX || h->body_paused ||
        (h->in.len > 0 && h->x != NULL && h->parser.state != PX_H1_BODY))
        px_sock_read_stop(&c->sock); /* read on when this exchange is done */
}

/* Input kept while the connection changed what runs on it (a CONNECT became an interception or
 * a passthrough): the new mode reads it, from the loop, and the HTTP/1 side that read the
 * CONNECT goes (here, outside its parser's call). */
void px__cl_deferred(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    if (c->closing)
        return;
    if (c->mode == PX__HTTP) {
        px__cl_process(c);
        return;
    }
    px__in_t in = {0};
    if (c->h1 != NULL && c->h1->x == NULL) {
        in = c->h1->in;
        c->h1->in = (px__in_t){0};
        px__cl_h1_free(c);
    }
    if ((c->mode == PX__SNIFF || c->mode == PX__HELLO) && in.len > 0)
        px__cl_read(&c->sock, in.p, in.len);
    free(in.p);
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO))
        px_sock_read_start(&c->sock);
}

/* ---- the response toward the client (px_down_ops_t) ------------------------------------------- */

static void down_head(void *down, const px_resp_t *r)
{
    px_client_t *c = down;
    char line[256];
    const char *reason = r->reason;
    size_t rlen = r->reason_len;
    if (reason == NULL || rlen == 0) {
        reason = px_answer_reason(r->status);
        rlen = strlen(reason);
    }
    int n = snprintf(line, sizeof(line), "HTTP/1.1 %d %.*s\r\n", r->status,
                     (int)(rlen > 128 ? 128 : rlen), reason);
    px_sock_write(&c->sock, line, (size_t)n);
    const px_msg_t *m = r->fields;
    if (m != NULL) {
        int ci = px_msg_find(m, "connection");
        const char *cv = ci >= 0 ? m->buf + m->values[ci].off : NULL;
        size_t cl = ci >= 0 ? m->values[ci].len : 0;
        for (size_t i = 0; i < m->n; i++) {
            const char *name = m->buf + m->names[i].off;
            size_t nl = m->names[i].len;
            int keep = r->upgrade && ((nl == 10 && strncasecmp(name, "connection", 10) == 0) ||
                                      (nl == 7 && strncasecmp(name, "upgrade", 7) == 0));
            if (!keep && px_h1_hop_by_hop(name, nl, cv, cl))
                continue;
            px_sock_write(&c->sock, name, nl);
            px_sock_write(&c->sock, ": ", 2);
            px_sock_write(&c->sock, m->buf + m->values[i].off, m->values[i].len);
            px_sock_write(&c->sock, "\r\n", 2);
        }
    }
    if (r->ctype != NULL) {
        n = snprintf(line, sizeof(line), "Content-Type: %s\r\nContent-Length: %llu\r\n", r->ctype,
                     (unsigned long long)r->length);
        px_sock_write(&c->sock, line, (size_t)n);
    }
    if (r->status >= 200 && r->status != 101) {
        px__h1srv_t *h = c->h1;
        h->resp_chunked = r->body == PX_RESP_CHUNKED;
        /* an HTTP/2 answer of unknown length carries no Transfer-Encoding of its own */
        if (h->resp_chunked && (m == NULL || px_msg_find(m, "transfer-encoding") < 0))
            px_sock_write(&c->sock, "Transfer-Encoding: chunked\r\n", 28);
        /* close_after is already set when the connection left its sandbox (px_client.c) */
        if (r->close || r->body == PX_RESP_UNTIL_CLOSE || h->close_after) {
            h->close_after = 1;
            px_sock_write(&c->sock, "Connection: close\r\n", 19);
        }
    }
    px_sock_write(&c->sock, "\r\n", 2);
}

static void down_data(void *down, const char *data, size_t len)
{
    px_client_t *c = down;
    if (len == 0)
        return;
    if (c->h1->resp_chunked) {
        char h[20];
        px_sock_write(&c->sock, h, px_h1_chunk_head(h, len));
        px_sock_write(&c->sock, data, len);
        px_sock_write(&c->sock, "\r\n", 2);
        return;
    }
    px_sock_write(&c->sock, data, len);
}

static void down_end(void *down, const px_fields_t *t)
{
    px_client_t *c = down;
    if (c->h1->resp_chunked) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px_sock_write(&c->sock, last, px_h1_last_chunk(last, t));
        c->h1->resp_chunked = 0;
    }
}

static int down_full(void *down)
{
    px_client_t *c = down;
    return px_sock_full(&c->sock);
}

static void down_pause_body(void *down, int pause)
{
    px_client_t *c = down;
    c->h1->body_paused = pause;
    if (pause) {
        px_sock_read_stop(&c->sock);
        return;
    }
    px_defer(&c->ctx->loop, &c->defer, px__cl_deferred);
}

/* An upgrade took: what the client sent after its request goes to the tunnel first. This side
 * stays until its exchange finished (down_finished). */
static void down_tunnel(void *down, px_tunnel_t *t)
{
    px_client_t *c = down;
    px__cl_tunnel_mode(c, t, &c->h1->in);
}

static void down_finished(void *down, int reuse)
{
    px_client_t *c = down;
    px__h1srv_t *h = c->h1;
    h->x = NULL;
    if (c->mode == PX__TUNNEL) {
        px__cl_h1_free(c); /* from the loop: nothing of it is on the stack */
        return;
    }
    if (c->closing)
        return;
    if (reuse < 0) {
        px__cl_close(c);
        return;
    }
    if (reuse == 0 || h->close_after || c->ctx->stopping || h->eof) {
        px__cl_close_flush(c);
        return;
    }
    px_h1_next(&h->parser);
    h->body_paused = 0;
    px__cl_timer(c, c->ctx->cfg->client_idle_ms); /* idle keep-alive */
    px__cl_process(c);
}

static const px_down_ops_t px__cl_down = {
    .head = down_head,
    .data = down_data,
    .end = down_end,
    .full = down_full,
    .pause_body = down_pause_body,
    .tunnel = down_tunnel,
    .finished = down_finished,
};

