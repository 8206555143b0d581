/* The upstream side of an exchange: the response head rewritten for the client, the body
 * relayed as it arrives, upgrades, and upstream failures. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/px_answer.h"
#include "proxy/px_err.h"
#include "proxy/px_int.h"
#include "proxy/px_policy.h"
#include "proxy/px_upstream.h"

static void px__upstream_bytes(px_conn_t *c, const char *data, size_t len, char **own);

/* ---- the upstream side calls these -------------------------------------------------------- */

int px__hop_by_hop(const px_head_t *h, px_span_t name, const char *conn_val,
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
char *px__upstream_head(px_conn_t *c, size_t *outlen)
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
    if (c->passthrough) {
        /* passthrough: the ClientHello goes first, then bytes flow both ways unread */
        px_upstream_send(c->up, c->rq.buf, c->rq.len);
        px_head_free(&c->rq);
        c->logged = 1;
        px__conn_set_state(c, PX_ST_UPGRADED);
        uv_timer_stop(&c->up->timer);
        px_upstream_read_start(c->up);
        px__client_read_start(c);
        return;
    }
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
    if (c->req_done) {
        px_upstream_first_byte_timer(c->up, c->eng->cfg->upstream_first_byte_ms);
    } else {
        /* the wait for upstream's answer starts when the body has gone; meanwhile the
         * client has the idle timeout to keep sending */
        uv_timer_stop(&c->up->timer);
        px__client_idle_start(c);
        px__client_read_start(c);
    }
}

void px_conn_upstream_failed(px_conn_t *c, const char *why)
{
    px__up_drop(c);
    if (c->resp_started) {
        px_conn_log_line(c, "ERROR", -1, why);
        px_conn_close(c);
        return;
    }
    px_conn_log_line(c, "ERROR", -1, why);
    if (c->req_done && c->state != PX_ST_UPGRADED && !c->passthrough) {
        /* the request was read whole: answer and keep the connection (DESIGN.md §5) */
        px__answer_error_keep(c, 502, "upstream_error", why);
        px__conn_set_state(c, PX_ST_DISCARD_BODY);
        px__exchange_done(c);
        return;
    }
    px__answer_error(c, 502, "upstream_error", why);
    px__close_when_flushed(c);
}

void px_conn_upstream_drained(px_conn_t *c)
{
    if (c->paused_by_upstream) {
        c->paused_by_upstream = 0;
        if (c->state == PX_ST_UPGRADED) {
            px__client_read_start(c);
        } else if (!c->req_done) {
            if (c->up != NULL && !c->resp_started)
                uv_timer_stop(&c->up->timer);
            px__client_idle_start(c);
            px__client_read_start(c);
        }
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
    px__up_drop(c);
    px_conn_log_line(c, "allowed", c->resp_status, NULL);
    if (c->resp_close) {
        px__close_when_flushed(c);
        return;
    }
    px__conn_set_state(c, PX_ST_DISCARD_BODY);
    px__client_read_start(c);
}

/* The client reads slower than upstream sends: stop reading upstream (its stall timer too)
 * and give the client the idle timeout to take what is queued. */
void px__pause_upstream(px_conn_t *c)
{
    if (c->up == NULL || c->up_paused)
        return;
    c->up_paused = 1;
    px_upstream_read_stop(c->up);
    uv_timer_stop(&c->up->timer);
    px__client_idle_start(c);
}

void px_conn_upstream_data(px_conn_t *c, const char *data, size_t len)
{
    char *own = NULL; /* bytes after an interim head, parsed on the next turn of the loop */
    px__upstream_bytes(c, data, len, &own);
    free(own);
}

/* One piece of upstream bytes. Interim (1xx) heads are forwarded and the bytes after them go
 * round the loop again (never a recursive call), at most PX_INTERIM_MAX per request. *own is
 * a copy the caller frees. */
static void px__upstream_bytes(px_conn_t *c, const char *data, size_t len, char **own)
{
    while (len > 0 && !c->closing) {
        if (c->state == PX_ST_UPGRADED) {
            px_conn_send(c, data, len);
            if (c->up != NULL && c->tcp.write_queue_size > PX_WQ_HIGH)
                px__pause_upstream(c);
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
                if (++c->interim > PX_INTERIM_MAX) {
                    px_conn_upstream_failed(c, "invalid response from upstream: too many "
                                               "interim (1xx) responses");
                    return;
                }
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
                free(*own);
                *own = rest;
                data = rest;
                len = rest_len;
                if (c->up != NULL && c->tcp.write_queue_size > PX_WQ_HIGH)
                    px__pause_upstream(c);
                continue;
            }
            c->resp_started = 1;
            px__conn_set_state(c, PX_ST_READ_RESPONSE);
            c->resp_close = !c->req_keepalive || llhttp_message_needs_eof(&c->resp_parser) ||
                            c->eng->stopping;
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
            px__pause_upstream(c);
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
            px__up_drop(c);
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

