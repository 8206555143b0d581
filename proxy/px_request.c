/* The request head: pre-checks (Host, CONNECT, absolute-form and SNI mismatches), the addon
 * chain, the answers airlock makes itself, and the head serialized for upstream. */
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
#include "addons/addon_policy.h"

static void on_addon_log(void *data, const char *line, size_t len)
{
    px_conn_t *c = data;
    px_log_line(c->eng->log, line, len);
}

/* ---- answers ---------------------------------------------------------------------------- */

/* Sends a JSON answer. close: the request body cannot be skipped safely, so the connection
 * ends after the answer. */
void px__answer(px_conn_t *c, int status, const char *json, size_t json_len, int close)
{
    char out[PX_ANSWER_MAX];
    size_t n = px_answer_build(out, sizeof(out), status, json, json_len, close);
    if (n == 0) {
        px_conn_close(c);
        return;
    }
    px_conn_send(c, out, n);
}

static void px__answer_error_mode(px_conn_t *c, int status, const char *error,
                                  const char *message, int close)
{
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": ");
    px_sbuf_json_str(&b, error, strlen(error));
    px_sbuf_adds(&b, ", \"message\": ");
    px_sbuf_json_str(&b, message, strlen(message));
    px_sbuf_adds(&b, "}");
    px__answer(c, status, json, b.len, close);
}

void px__answer_error(px_conn_t *c, int status, const char *error, const char *message)
{
    px__answer_error_mode(c, status, error, message, 1);
}

void px__answer_error_keep(px_conn_t *c, int status, const char *error, const char *message)
{
    px__answer_error_mode(c, status, error, message, 0);
}

/* A head that cannot be parsed: answer 400/431, log, close. */
void px__bad_request(px_conn_t *c, int status, const char *reason)
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
int px__split_authority(const char *a, size_t len, const char **host, size_t *hlen,
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

/* Lowercases into out (cap bytes with the NUL), drops one trailing dot. Returns the length,
 * or -1 when the name does not fit (out is then ""): a name is never cut, since a cut name
 * could compare equal to another. */
int px__norm_host(char *out, size_t cap, const char *h, size_t len)
{
    if (len > 0 && h[len - 1] == '.')
        len--;
    if (len >= cap) {
        if (cap > 0)
            out[0] = '\0';
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = h[i];
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    out[len] = '\0';
    return (int)len;
}

/* After an answer of our own: drop the rest of the request body, then go on. */
void px__after_answer(px_conn_t *c)
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
void px__addon_answer(px_conn_t *c, const addon_answer_t *ans)
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
    px_sbuf_printf(&b, ", \"%s\": ",
                   strcmp(key, "sni") == 0       ? "sni"
                   : strcmp(key, "connect") == 0 ? "connect_host"
                                                 : "url_host");
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

void px__request_head_done(px_conn_t *c)
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
    if (c->req_upgrade) {
        /* Only WebSocket is relayed after a 101: its handshake was checked like any request.
         * Any other protocol (h2c, ...) would carry further requests the policy never sees,
         * so the Upgrade is dropped and the request goes on as plain HTTP/1.1. */
        int ui = px_head_find(h, "upgrade");
        if (ui < 0 || !px_span_ieq(h, h->values[ui], "websocket"))
            c->req_upgrade = 0;
    }
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
    /* exactly one coding, chunked: an upstream that honours another field or coding first
     * would read the chunk framing as a further request */
    int nte = px_head_count(h, "transfer-encoding");
    if (nte > 1) {
        px__bad_request(c, 400, "more than one Transfer-Encoding header");
        return;
    }
    if (nte == 1 && !px_span_ieq(h, h->values[px_head_find(h, "transfer-encoding")], "chunked")) {
        px__bad_request(c, 400, "Transfer-Encoding other than chunked");
        return;
    }
    const char *hv = hi >= 0 ? h->buf + h->values[hi].off : NULL;
    size_t hvlen = hi >= 0 ? h->values[hi].len : 0;

    /* 2. CONNECT: a tunnel on the explicit-proxy port, refused everywhere else */
    if (c->req_parser.method == HTTP_CONNECT && c->kind == PX_LISTEN_PROXY && !c->in_tunnel) {
        px__connect(c, target, tlen);
        return;
    }
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
    if (c->in_tunnel) {
        /* inside a CONNECT tunnel the Host must name the CONNECT host and port */
        char hn[PX_HOST_MAX + 1];
        int hnl = px__norm_host(hn, sizeof(hn), host, hlen);
        if (hnl < 0 || strcmp(hn, c->tunnel_host) != 0 ||
            (hport != 0 && hport != c->tunnel_port)) {
            port = c->tunnel_port;
            px__build_url(c, host, hlen, bracketed, port, target, tlen);
            px__mismatch(c, host, hlen, c->tunnel_host, strlen(c->tunnel_host), "connect");
            return;
        }
        port = c->tunnel_port;
    } else if (c->orig_port != 0) {
        port = c->orig_port; /* transparent: where the client really connected */
    }

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
        int l1 = px__norm_host(a1, sizeof(a1), host, hlen);
        int l2 = px__norm_host(a2, sizeof(a2), uhost, uhlen);
        uint16_t ueff = uport ? uport : (slen == 8 ? 443 : 80);
        if (l1 < 0 || l2 < 0 || strcmp(a1, a2) != 0 || ueff != port) {
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
        int hnl = px__norm_host(hn, sizeof(hn), host, hlen);
        if (hnl < 0 || strcmp(hn, c->sni) != 0) {
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
    px__norm_host(c->host, sizeof(c->host), host, hlen); /* fits: px__split_authority capped it */

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

void px__start_upstream(px_conn_t *c)
{
    px__conn_set_state(c, PX_ST_RESOLVE);
    px__client_read_stop(c);
    px_upstream_start(c);
}


/* Explicit proxy: `CONNECT host:port`. A host no entry names is refused at once; otherwise the
 * tunnel is intercepted (TLS with a minted certificate, every request checked), or relayed
 * unread for `tls: passthrough` entries once the ClientHello's SNI matched. */
void px__connect(px_conn_t *c, const char *target, size_t tlen)
{
    const char *host;
    size_t hlen;
    uint16_t port;
    int bracketed;
    snprintf(c->url, sizeof(c->url), "%.*s", (int)(tlen < 512 ? tlen : 512), target);
    if (px__split_authority(target, tlen, &host, &hlen, &port, &bracketed) != 0 || port == 0) {
        px__bad_request(c, 400, "CONNECT needs host:port");
        return;
    }
    px_snapshot_unref(c->snap);
    c->snap = px_engine_snapshot_ref(c->eng);
    int passthrough = 0;
    addon_str_t h = {host, hlen};
    if (!addon_policy_has_host(c->snap->cfg.policy, h, port, 1, &passthrough)) {
        px_conn_log_line(c, "BLOCKED", 403, NULL);
        char json[1024];
        px_sbuf_t b;
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
        px_sbuf_json_str(&b, target, tlen < 300 ? tlen : 300);
        px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": ");
        px_sbuf_json_str(&b, ADDON_POLICY_MSG_HOST_PATH, sizeof(ADDON_POLICY_MSG_HOST_PATH) - 1);
        px_sbuf_adds(&b, "}");
        px__answer(c, 403, json, b.len, 1);
        px__close_when_flushed(c);
        return;
    }
    px__norm_host(c->tunnel_host, sizeof(c->tunnel_host), host, hlen); /* capped as above */
    c->tunnel_port = port;
    c->passthrough = passthrough;
    px_conn_log_line(c, "allowed", 200, passthrough ? " tunnel" : NULL);
    px_conn_send(c, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
    /* what the client sent after the CONNECT head belongs to the tunnel */
    char *early = c->pending;
    size_t early_len = c->pending_len;
    c->pending = NULL;
    c->pending_len = 0;
    c->in_tunnel = 1;
    c->sniffed = 0;
    c->req_keepalive = 1;
    px__exchange_done(c); /* resets the request for what comes through the tunnel */
    if (c->closing) {
        free(early);
        return;
    }
    if (passthrough) {
        px_head_free(&c->rq);
        c->sniffed = 1; /* bytes are relayed unread, never taken for our own TLS */
        px__conn_set_state(c, PX_ST_TUNNEL_HELLO);
    }
    if (early != NULL)
        px__client_raw(c, early, early_len);
}
