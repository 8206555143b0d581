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

/* ---- input ----------------------------------------------------------------------------------- */

int px__cl_in_keep(px_client_t *c, const char *data, size_t len)
{
    if (len == 0)
        return 0;
    if (c->in_len + len > PX_IN_MAX)
        return PX_ETOOBIG;
    if (c->in_cap - c->in_len < len) {
        size_t cap = c->in_cap ? c->in_cap : 4096;
        while (cap - c->in_len < len)
            cap *= 2;
        char *nb = realloc(c->in, cap);
        if (nb == NULL)
            return PX_ENOMEM;
        c->in = nb;
        c->in_cap = cap;
    }
    memcpy(c->in + c->in_len, data, len);
    c->in_len += len;
    return 0;
}

void px__cl_in_drop(px_client_t *c, size_t n)
{
    if (n == 0)
        return; /* also when nothing is kept (c->in may be NULL) */
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
    if (c->in_len == 0 && c->in_cap > 16384) {
        free(c->in); /* an idle connection keeps no big buffer */
        c->in = NULL;
        c->in_cap = 0;
    }
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

void px__cl_connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre);

static int on_req_head(void *owner, px_msg_t *m)
{
    px_client_t *c = owner;
    uv_timer_stop(&c->timer);
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
    c->resp_chunked = 0;
    c->close_after = 0;
    c->x = px_xchg_start(c->ctx, &from, m, pre);
    free(pre);
    if (c->x == NULL) {
        px__cl_close(c);
        return 1;
    }
    return 0;
}

static int on_req_data(void *owner, const char *data, size_t len)
{
    px_client_t *c = owner;
    if (c->x != NULL)
        px_xchg_body(c->x, data, len);
    return c->body_paused || c->closing;
}

static int on_req_end(void *owner, const px_fields_t *t)
{
    px_client_t *c = owner;
    if (c->x != NULL)
        px_xchg_body_end(c->x, t);
    return 1;
}

const px_h1_cbs_t px__cl_req_cbs = {on_req_head, on_req_data, on_req_end};

/* Parses what it can of data: the current request's head and body; a further request waits for
 * the current exchange to finish. Returns the bytes taken. */
size_t px__cl_http_input(px_client_t *c, const char *data, size_t len)
{
    size_t off = 0;
    /* a parser paused inside a body runs once even with no byte left: a pause on the body's
     * last bytes leaves the message's end to be delivered when it resumes */
    while ((off < len || (c->parser.paused && c->parser.state == PX_H1_BODY)) && !c->closing &&
           c->mode == PX__HTTP && !c->body_paused) {
        if (c->parser.state == PX_H1_DONE || c->parser.state == PX_H1_UPGRADED)
            break; /* the next request waits for this exchange */
        if (c->parser.state == PX_H1_HEAD && c->x != NULL)
            break;
        if (c->parser.state == PX_H1_HEAD && c->parser.hlen == 0)
            px__cl_timer(c, c->ctx->cfg->client_idle_ms); /* a head has a deadline from its start */
        size_t used = 0;
        int rc = px_h1_feed(&c->parser, data + off, len - off, &used);
        off += used;
        if (rc < 0) {
            if (c->x != NULL) {
                px_xchg_body_error(c->x, c->parser.reason);
                px_sock_read_stop(&c->sock);
                c->body_paused = 1; /* nothing more is read; the exchange closes us */
            } else {
                px__cl_bad_request(c, rc == PX_ETOOBIG ? 431 : 400, c->parser.reason);
            }
            break;
        }
        if (used == 0)
            break;
    }
    return off;
}

/* Runs buffered input (after a pause, or when the next request may start). */
void px__cl_process(px_client_t *c)
{
    if (c->closing || c->mode != PX__HTTP)
        return;
    if (c->in_len > 0 || (c->parser.paused && c->parser.state == PX_H1_BODY)) {
        size_t used = px__cl_http_input(c, c->in != NULL ? c->in : "", c->in_len);
        if (!c->closing)
            px__cl_in_drop(c, used);
    }
    if (c->closing)
        return;
    if (c->in_len >= PX_IN_MAX || c->body_paused)
        px_sock_read_stop(&c->sock);
    else
        px_sock_read_start(&c->sock);
}

void px__cl_read(px_sock_t *s, const char *data, size_t len);

/* Input kept while the connection changed what runs on it (a CONNECT became a tunnel): the
 * new mode reads it, from the loop. */
void px__cl_deferred(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    if (c->closing)
        return;
    if (c->mode == PX__HTTP) {
        px__cl_process(c);
        return;
    }
    if ((c->mode == PX__SNIFF || c->mode == PX__HELLO) && c->in_len > 0) {
        char *buf = c->in;
        size_t n = c->in_len;
        c->in = NULL;
        c->in_len = c->in_cap = 0;
        px__cl_read(&c->sock, buf, n);
        free(buf);
    }
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
        c->resp_chunked = r->body == PX_RESP_CHUNKED;
        /* an HTTP/2 answer of unknown length carries no Transfer-Encoding of its own */
        if (c->resp_chunked && (m == NULL || px_msg_find(m, "transfer-encoding") < 0))
            px_sock_write(&c->sock, "Transfer-Encoding: chunked\r\n", 28);
        /* close_after is already set when the connection left its sandbox (px_client.c) */
        if (r->close || r->body == PX_RESP_UNTIL_CLOSE || c->close_after) {
            c->close_after = 1;
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
    if (c->resp_chunked) {
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
    if (c->resp_chunked) {
        char last[PX_H1_LAST_CHUNK_MAX];
        px_sock_write(&c->sock, last, px_h1_last_chunk(last, t));
        c->resp_chunked = 0;
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
    c->body_paused = pause;
    if (pause) {
        px_sock_read_stop(&c->sock);
        return;
    }
    px_defer(&c->ctx->loop, &c->defer, px__cl_deferred);
}

void px__cl_tunnel_mode(px_client_t *c, px_tunnel_t *t);

static void down_tunnel(void *down, px_tunnel_t *t)
{
    px_client_t *c = down;
    px__cl_tunnel_mode(c, t);
}

static void down_finished(void *down, int reuse)
{
    px_client_t *c = down;
    c->x = NULL;
    if (c->mode == PX__TUNNEL || c->closing)
        return;
    if (reuse < 0) {
        px__cl_close(c);
        return;
    }
    if (reuse == 0 || c->close_after || c->ctx->stopping || c->eof) {
        px__cl_close_flush(c);
        return;
    }
    px_h1_next(&c->parser);
    c->body_paused = 0;
    px__cl_timer(c, c->ctx->cfg->client_idle_ms); /* idle keep-alive */
    px__cl_process(c);
}

const px_down_ops_t px__cl_down = {
    .head = down_head,
    .data = down_data,
    .end = down_end,
    .full = down_full,
    .pause_body = down_pause_body,
    .tunnel = down_tunnel,
    .finished = down_finished,
};

