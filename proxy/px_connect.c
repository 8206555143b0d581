/* Explicit proxy: CONNECT (refused, intercepted, or relayed unread for `tls: passthrough`
 * entries once the ClientHello's SNI matched), the client's end of a tunnel, and the SOCKS5
 * listener's handshake, whose target the CONNECT decision takes. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_leak.h"
#include "addons/addon_policy.h"
#include "ca/ca.h"
#include "proxy/px_answer.h"
#include "proxy/px_caconv.h"
#include "proxy/px_client_int.h"
#include "base/px_err.h"
#include "base/px_host.h"
#include "net/px_hello.h"
#include "net/px_socks.h"
#include "proxy/px_policy.h"
#include "proxy/px_tunguard.h"

/* A tunnel's side of the connection, made when a passthrough CONNECT is accepted or an upgrade
 * took; freed in the connection's last close callback. */
struct px__tun {
    px_tunnel_t *tun;          /* c is its side 0 (a passthrough's is made with its budgets) */
    px_upreq_t *dial;          /* passthrough: the upstream being connected */
    px__in_t in;               /* the ClientHello, or what followed an upgrade: it goes first */
    char url[PX_HOST_MAX + 8]; /* passthrough: the CONNECT target host:port, for log lines */
};

/* ---- tunnels ---------------------------------------------------------------------------------- */

static void end_write(void *end, const char *data, size_t len)
{
    px_client_t *c = end;
    px_sock_write(&c->sock, data, len);
}

static int end_full(void *end)
{
    px_client_t *c = end;
    return px_sock_full(&c->sock);
}

static void end_read(void *end, int on)
{
    px_client_t *c = end;
    if (on)
        px_sock_read_start(&c->sock);
    else
        px_sock_read_stop(&c->sock);
}

static void end_shutdown(void *end)
{
    px_client_t *c = end;
    px_sock_shutdown(&c->sock);
}

static void end_finish(void *end)
{
    px_client_t *c = end;
    px_sock_close_when_flushed(&c->sock);
}

static void end_close(void *end)
{
    px_client_t *c = end;
    px__cl_close(c);
}

static void on_tunnel_pending(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    px__tun_t *tn = c->tn;
    if (c->closing || tn == NULL || tn->tun == NULL)
        return;
    if (tn->in.len > 0 && px_tunnel_ready(tn->tun)) {
        px_tunnel_data(tn->tun, 0, tn->in.p, tn->in.len);
        free(tn->in.p); /* sent: a tunnel keeps no buffer of its own */
        tn->in = (px__in_t){0};
    }
}

void px__cl_tunnel_mode(px_client_t *c, px_tunnel_t *t, px__in_t *in)
{
    px_tunnel_end_t e = {end_write, end_full, end_read, end_shutdown, end_finish, end_close, c};
    if (c->tn == NULL && (c->tn = calloc(1, sizeof(*c->tn))) == NULL) {
        /* out of memory at an upgrade: the tunnel closes its other end as soon as that one
         * attaches; the exchange's end closes c (down_finished, reuse 0) */
        px_tunnel_attach(t, 0, &e);
        px_tunnel_release(t, 0);
        return;
    }
    px__tun_t *tn = c->tn;
    if (in != NULL) {
        tn->in = *in;
        *in = (px__in_t){0};
    }
    c->mode = PX__TUNNEL;
    tn->tun = t;
    px__cl_timer_stop(c);
    px_tunnel_attach(t, 0, &e);
    /* what the client sent after its request belongs to the new protocol: it goes once the
     * other end is attached too */
    if (tn->in.len > 0)
        px_defer(&c->ctx->loop, &c->defer, on_tunnel_pending);
}

void px__cl_tun_read(px_client_t *c, const char *data, size_t len)
{
    px_tunnel_data(c->tn->tun, 0, data, len);
}

void px__cl_tun_eof(px_client_t *c, int err)
{
    px_tunnel_eof(c->tn->tun, 0, err);
}

void px__cl_tun_drain(px_client_t *c)
{
    px_tunnel_drain(c->tn->tun, 0);
}

void px__cl_tun_shut(px_client_t *c)
{
    if (c->tn != NULL && c->tn->dial != NULL) {
        px_up_abort(c->tn->dial);
        c->tn->dial = NULL;
    }
}

void px__cl_tun_closed(px_client_t *c)
{
    if (c->tn != NULL && c->tn->tun != NULL) {
        px_tunnel_release(c->tn->tun, 0);
        c->tn->tun = NULL;
    }
}

void px__cl_tun_free(px_client_t *c)
{
    if (c->tn == NULL)
        return;
    free(c->tn->in.p);
    free(c->tn);
    c->tn = NULL;
}

/* ---- explicit proxy: CONNECT ------------------------------------------------------------------ */

static void on_dial_ready(void *owner);
static void on_dial_error(void *owner, const char *why);

static const px_up_cbs_t px__dial_cbs = {
    .on_ready = on_dial_ready,
    .on_error = on_dial_error,
};

/* The event of a decision about a CONNECT to url (host:port); method SOCKS for a SOCKS
 * request, which is decided the same way. */
static audit_event_t px__connect_ev(const px_client_t *c, const char *url,
                                    audit_event_verdict_t v, int status)
{
    return audit_event_access(AUDIT_EV_CONNECT, v, c->socks ? "SOCKS" : "CONNECT", url, status);
}

/* Answers the CONNECT m (taken) 403 with the JSON body json[0..len) and closes c after it; a
 * SOCKS request gets "not allowed by ruleset" (it has no body to carry the JSON). */
static void connect_refuse(px_client_t *c, px_msg_t *m, const char *json, size_t len)
{
    if (c->socks) {
        px__cl_socks_reply(c, PX_SOCKS_NOT_ALLOWED);
        px_msg_free(m);
        px__cl_close_flush(c);
        return;
    }
    char out[PX_ANSWER_MAX];
    size_t n = px_answer_build(out, sizeof(out), 403, json, len, 1);
    px_sock_write(&c->sock, out, n);
    px_msg_free(m);
    px__cl_close_flush(c);
}

/* An allowed CONNECT whose host the conversation CA may not sign for: intercepting it would
 * need a leaf outside the CA's name constraints, and there is no other CA to fall back to. */
static void connect_outside_ca(px_client_t *c, const char *url, px_msg_t *m)
{
    audit_event_t ev = px__connect_ev(c, url, AUDIT_EV_BLOCKED, 403);
    ev.tail = audit_s(PX_CACONV_WHY);
    px_log_event(c->log, &ev);
    if (m == NULL) {
        connect_refuse(c, m, NULL, 0);
        return;
    }
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_sbuf_adds(&b, "{\"error\": \"outside_conversation_ca\", \"host\": ");
    px_sbuf_json_str(&b, m->buf + m->target.off, m->target.len < 300 ? m->target.len : 300);
    px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": \"The network allowlist allows "
                     "this host, but it is " PX_CACONV_WHY ": airlock cannot make a certificate "
                     "for it with this conversation's CA, and never uses another. Ask the user "
                     "to start a new conversation with the current allowlist.\"}");
    connect_refuse(c, m, json, b.len);
}

/* A CONNECT target carrying the real value of a secret or a canary (mt, borrowed): the host
 * would go to the upstream resolver and, for a passthrough entry, out in the SNI. Refused before
 * the allowlist and before anything is resolved; the log shows no target (it holds the value). */
static void connect_leak(px_client_t *c, px_msg_t *m, const addon_leak_match_t *mt)
{
    const char *kind = addon_leak_kind_name(mt->kind);
    const char *enc = addon_leak_enc_name(mt->enc);
    audit_event_t ev = px__connect_ev(c, "-", AUDIT_EV_BLOCKED, 403);
    px_log_eventf(c->log, &ev, "leak: %s %s, %s, in the %s target", kind, mt->name, enc,
                  c->socks ? "SOCKS" : "CONNECT");
    if (m == NULL) {
        connect_refuse(c, m, NULL, 0);
        return;
    }
    char json[1024];
    px_sbuf_t b;
    px_sbuf_init(&b, json, sizeof(json));
    px_answer_leak_json(&b, kind, mt->name, enc, "target", NULL, 0, "CONNECT", ADDON_LEAK_MESSAGE);
    connect_refuse(c, m, json, b.len);
}

/* A passthrough CONNECT to url was allowed: its tunnel object (c->tn), and its bytes count
 * against its host's budgets (proxy/px_tunguard.c): the tunnel made here, in c->tn->tun, once
 * admitted. 1 when refused (429) or failed, c then closing. */
static int px__cl_passthrough(px_client_t *c, const char *url, const px_pre_t *pre)
{
    c->tn = calloc(1, sizeof(*c->tn));
    if (c->tn == NULL) {
        px__cl_close(c);
        return 1;
    }
    snprintf(c->tn->url, sizeof(c->tn->url), "%s", url);
    char ans[PX_ANSWER_MAX];
    size_t n = 0;
    addon_str_t h = {pre->norm_host, strlen(pre->norm_host)};
    int rc = px_tunguard_connect(c->log, px__cl_budgets(c), px__cl_snap(c), url, h,
                                 uv_now(c->ctx->loop.uv), &c->tn->tun, ans, sizeof(ans), &n);
    if (rc == 0)
        return 0;
    if (c->socks)
        px__cl_socks_reply(c, PX_SOCKS_NOT_ALLOWED); /* the budget's line says why */
    else
        px_sock_write(&c->sock, ans, n);
    px__cl_close_flush(c);
    return 1;
}

/* `CONNECT host:port` on the explicit-proxy listener: refused at once when no entry names the
 * host; otherwise intercepted (TLS with a minted certificate inside, every request checked), or
 * relayed unread for `tls: passthrough` entries once the ClientHello's SNI matched. */
void px__cl_connect(px_client_t *c, px_msg_t *m, const px_pre_t *pre)
{
    px__cl_connect_to(c, m, m->buf + m->target.off, m->target.len, pre);
}

void px__cl_connect_to(px_client_t *c, px_msg_t *m, const char *target, size_t tlen,
                       const px_pre_t *pre)
{
    char url[PX_HOST_MAX + 8];
    snprintf(url, sizeof(url), "%.*s", (int)sizeof(url) - 1, pre->url);
    px_snapshot_t *snap = px_snapshot_ref(px__cl_snap(c));
    addon_leak_match_t mt;
    if (addon_leak_scan(snap->leak, target, tlen, &mt)) {
        connect_leak(c, m, &mt); /* before the snapshot goes: mt names an entry of its matcher */
        px_snapshot_unref(snap);
        return;
    }
    int passthrough = 0;
    addon_str_t h = {pre->host, pre->host_len};
    /* a CONNECT is for TLS; a SOCKS client sends http:// URLs through its tunnel too, so port
     * 80 is decided as plain HTTP there (each request inside is decided again anyway) */
    int tls = !(c->socks && pre->port == 80);
    int ok = addon_policy_has_host(snap->cfg.policy, h, pre->port, tls, &passthrough);
    /* a host named by a block entry gets that entry's message (issue 18) */
    char block_msg[512] = ADDON_POLICY_MSG_HOST_PATH;
    size_t bi;
    if (!ok && addon_policy_host_blocked(snap->cfg.policy, h, &bi))
        addon_policy_block_message(snap->cfg.policy, bi, block_msg, sizeof(block_msg));
    /* warn mode: the CONNECT is intercepted (never passed through) and each request inside is
     * decided, and logged WARN, on its own */
    int warn = !ok && addon_policy_warn_mode(snap->cfg.policy);
    px_snapshot_unref(snap);
    if (warn)
        ok = 1;
    if (!ok) {
        audit_event_t ev = px__connect_ev(c, url, AUDIT_EV_BLOCKED, 403);
        px_log_event(c->log, &ev);
        char json[1024];
        px_sbuf_t b;
        px_sbuf_init(&b, json, sizeof(json));
        px_sbuf_adds(&b, "{\"error\": \"blocked_by_network_allowlist\", \"host\": ");
        px_sbuf_json_str(&b, target, tlen < 300 ? tlen : 300);
        px_sbuf_adds(&b, ", \"method\": \"CONNECT\", \"message\": ");
        px_sbuf_json_str(&b, block_msg, strlen(block_msg));
        px_sbuf_adds(&b, "}");
        connect_refuse(c, m, json, b.len);
        return;
    }
    if (!passthrough &&
        !ca_name_permitted(px_scope_ca(c->scope, c->ctx->ca), pre->norm_host, strlen(pre->norm_host))) {
        connect_outside_ca(c, url, m);
        return;
    }
    if (passthrough && px__cl_passthrough(c, url, pre)) {
        px_msg_free(m);
        return;
    }
    px_msg_free(m);
    if (px__cl_set_name(&c->tunnel, pre->norm_host) != 0) {
        px__cl_close(c); /* out of memory: no tunnel */
        return;
    }
    c->tunnel_port = pre->port;
    audit_event_t ev = px__connect_ev(c, url, warn ? AUDIT_EV_WARN : AUDIT_EV_ALLOWED, 200);
    if (warn)
        ev.annot = audit_s(" [warn: host not in allowlist]");
    if (passthrough)
        ev.kind = AUDIT_EV_TUNNEL;
    px_log_event(c->log, &ev);
    /* the upstream is dialled later (per request, or after a passthrough's ClientHello): a
     * SOCKS client hears success now too, and a failed dial ends like a CONNECT's */
    if (c->socks)
        px__cl_socks_reply(c, PX_SOCKS_OK);
    else
        px_sock_write(&c->sock, "HTTP/1.1 200 Connection established\r\n\r\n", 39);
    /* HTTP/1 ends here: its side goes from the loop (px__cl_deferred), not inside its parser */
    c->mode = passthrough ? PX__HELLO : PX__SNIFF;
    px__cl_timer(c, c->ctx->cfg->handshake_ms);
    /* what came after the CONNECT head belongs to the tunnel: the new mode reads it */
    px_defer(&c->ctx->loop, &c->defer, px__cl_deferred);
}

/* Passthrough: gathers the ClientHello and checks its SNI against the CONNECT host. */
static void px__cl_hello(px_client_t *c)
{
    px__tun_t *tn = c->tn;
    char sni[PX_HOST_MAX + 2];
    int rc = tn->in.len > PX_HELLO_MAX ? PX_EPARSE
                                       : px_hello_sni((const unsigned char *)tn->in.p, tn->in.len,
                                                      sni, sizeof(sni));
    if (rc == 0)
        return;
    char norm[PX_HOST_MAX + 1] = "";
    if (rc == 1 && px_host_norm(norm, sizeof(norm), sni, strlen(sni)) < 0)
        rc = PX_EPARSE; /* longer than any name the CONNECT could have named */
    /* the ClientHello would go upstream as it is, in plain text: its SNI (in the case sent, which
     * the comparison below ignores), ALPN, session ID and every other field are scanned, before
     * a mismatch line could show the SNI */
    addon_leak_match_t mt;
    if (rc == 1 && addon_leak_scan(px__cl_snap(c)->leak, tn->in.p, tn->in.len, &mt)) {
        audit_event_t ev = px__connect_ev(c, tn->url, AUDIT_EV_BLOCKED, 403);
        px_log_eventf(c->log, &ev, "leak: %s %s, %s, in the TLS ClientHello",
                      addon_leak_kind_name(mt.kind), mt.name, addon_leak_enc_name(mt.enc));
        px__cl_close(c);
        return;
    }
    if (rc < 0 || strcmp(norm, c->tunnel) != 0) {
        audit_event_t ev = px__connect_ev(c, tn->url, AUDIT_EV_BLOCKED, 403);
        if (tn->in.len > PX_HELLO_MAX)
            px_log_eventf(c->log, &ev, "tunnel: no TLS ClientHello");
        else
            px_log_eventf(c->log, &ev, "host mismatch: connect=%s, sni=%s", c->tunnel,
                          rc < 0 ? "none" : norm);
        px__cl_close(c);
        return;
    }
    c->mode = PX__DIAL;
    px_sock_read_stop(&c->sock);
    tn->dial = px_up_open_raw(px__cl_up(c), c->tunnel, c->tunnel_port, &px__dial_cbs, c);
    if (tn->dial == NULL)
        px__cl_close(c);
}

/* PX__HELLO: the ClientHello so far, with data (borrowed). */
void px__cl_hello_input(px_client_t *c, const char *data, size_t len)
{
    px__tun_t *tn = c->tn;
    if (px__in_keep(&tn->in, data, len) != 0 || tn->in.len > PX_HELLO_MAX) {
        audit_event_t ev = px__connect_ev(c, tn->url, AUDIT_EV_BLOCKED, 403);
        ev.tail = audit_s("tunnel: no TLS ClientHello");
        px_log_event(c->log, &ev);
        px__cl_close(c);
        return;
    }
    px__cl_hello(c);
}

static void on_dial_ready(void *owner)
{
    px_client_t *c = owner;
    px__tun_t *tn = c->tn;
    px_tunnel_t *t = tn->tun != NULL ? tn->tun : px_tunnel_new(); /* made with its budgets */
    if (t == NULL) {
        px_up_abort(tn->dial);
        tn->dial = NULL;
        px__cl_close(c);
        return;
    }
    px_upreq_t *r = tn->dial;
    tn->dial = NULL;
    px__cl_tunnel_mode(c, t, NULL); /* the ClientHello waits in tn->in: it goes first */
    px_up_tunnel(r, t, 1);
}

static void on_dial_error(void *owner, const char *why)
{
    px_client_t *c = owner;
    c->tn->dial = NULL;
    audit_event_t ev = px__connect_ev(c, c->tn->url, AUDIT_EV_ERROR, -1);
    ev.reason = audit_s(why);
    px_log_event(c->log, &ev);
    px__cl_close(c);
}

/* ---- SOCKS5 ----------------------------------------------------------------------------------- */

/* The SOCKS5 listener's side of a client connection (RFC 1928, no authentication, CONNECT
 * only): the handshake is read with net/px_socks.c, then the target is decided by
 * px__cl_connect_to and the connection goes on as after "200 Connection established". */
struct px__socks {
    px__in_t in; /* bytes not taken yet: at most a greeting and a request (each bounded) */
    int greeted; /* the greeting was answered "no authentication" */
    size_t done; /* after the request: the bytes of in it took (what follows is the tunnel's) */
};

void px__cl_socks_reply(px_client_t *c, int rep)
{
    unsigned char out[PX_SOCKS_REPLY_MAX];
    struct sockaddr_storage me;
    int mlen = sizeof(me);
    const uint8_t *a = NULL;
    size_t alen = 0;
    uint16_t port = 0;
    /* success names where the client reached airlock: the upstream is not dialled yet */
    if (rep == PX_SOCKS_OK &&
        uv_tcp_getsockname(&c->sock.tcp, (struct sockaddr *)&me, &mlen) == 0) {
        if (me.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&me;
            a = (const uint8_t *)&s4->sin_addr;
            alen = 4;
            port = ntohs(s4->sin_port);
        } else if (me.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&me;
            a = (const uint8_t *)&s6->sin6_addr;
            alen = 16;
            port = ntohs(s6->sin6_port);
        }
    }
    size_t n = px_socks_reply(out, (px_socks_rep_t)rep, a, alen, port);
    px_sock_write(&c->sock, (const char *)out, n);
}

/* A handshake refused before any decision: one line (method SOCKS, like the CONNECT lines),
 * the reply rep when the RFC has one (rep < 0: none), then the close. */
static void px__socks_fail(px_client_t *c, const char *url, int rep, const char *why)
{
    audit_event_t ev = audit_event_access(AUDIT_EV_CONNECT, AUDIT_EV_BLOCKED, "SOCKS",
                                          url != NULL ? url : "-", 400);
    px_log_eventf(c->log, &ev, "socks: %s", why);
    if (rep >= 0)
        px__cl_socks_reply(c, rep);
    px__cl_close_flush(c);
}

static const char *px__socks_cmd_name(uint8_t cmd)
{
    return cmd == PX_SOCKS_BIND  ? "BIND not supported"
           : cmd == PX_SOCKS_UDP ? "UDP ASSOCIATE not supported"
                                 : "unknown command";
}

/* The greeting, answered. 1 when it was whole and accepted; 0 when more is needed; -1 when c
 * is closing. */
static int px__socks_greet(px_client_t *c, px__socks_t *sk)
{
    int noauth;
    int rc = px_socks_greeting((const unsigned char *)sk->in.p, sk->in.len, &noauth);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        px__socks_fail(c, NULL, -1, "not a SOCKS5 greeting");
        return -1;
    }
    if (!noauth) {
        unsigned char no[2] = {PX_SOCKS_VER, PX_SOCKS_NO_METHOD};
        px_sock_write(&c->sock, (const char *)no, 2);
        px__socks_fail(c, NULL, -1, "no acceptable method (only no authentication is served)");
        return -1;
    }
    static const char ok[2] = {PX_SOCKS_VER, PX_SOCKS_NOAUTH};
    px_sock_write(&c->sock, ok, 2);
    px__in_drop(&sk->in, (size_t)rc);
    sk->greeted = 1;
    return 1;
}

/* The bytes that followed an accepted request, for the mode the decision left. */
static void px__socks_rest(px_defer_t *d)
{
    px_client_t *c = px_container_of(d, px_client_t, defer);
    px__in_t in = {0};
    size_t done = 0;
    if (c->sk != NULL) {
        in = c->sk->in;
        done = c->sk->done;
        c->sk->in = (px__in_t){0};
        px__cl_socks_free(c);
    }
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO) && in.len > done)
        px__cl_read(&c->sock, in.p + done, in.len - done);
    free(in.p);
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO))
        px_sock_read_start(&c->sock);
}

/* A whole CONNECT request r (n bytes of sk->in): decided like a CONNECT; what followed it goes
 * to the mode the decision left (the TLS sniff or the passthrough's ClientHello). */
static void px__socks_connect(px_client_t *c, const px_socks_req_t *r, size_t n)
{
    char auth[PX_HOST_MAX + 16];
    snprintf(auth, sizeof(auth), r->atyp == PX_SOCKS_IPV6 ? "[%s]:%u" : "%s:%u", r->host,
             (unsigned)r->port);
    px_pre_t pre;
    memset(&pre, 0, sizeof(pre));
    uint16_t port = 0;
    if (px_authority_split(auth, strlen(auth), &pre.host, &pre.host_len, &port, &pre.bracketed) !=
            0 ||
        px_host_norm(pre.norm_host, sizeof(pre.norm_host), pre.host, pre.host_len) < 0) {
        px__socks_fail(c, NULL, PX_SOCKS_FAILURE, "not a host name"); /* the name is not shown */
        return;
    }
    pre.verdict = PX_PRE_TUNNEL;
    pre.port = r->port;
    snprintf(pre.url, sizeof(pre.url), "%s", auth);
    c->sk->done = n;
    c->kind = PX_LISTEN_PROXY; /* from here on, a CONNECT tunnel's connection */
    px__cl_connect_to(c, NULL, r->host, strlen(r->host), &pre);
    /* what followed the request goes to the new mode from the loop, after the reply left: a
     * TLS handshake begun now would hold the plain reply back behind it */
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO))
        px_defer(&c->ctx->loop, &c->defer, px__socks_rest);
}

void px__cl_socks_input(px_client_t *c, const char *data, size_t len)
{
    if (c->sk == NULL && (c->sk = calloc(1, sizeof(*c->sk))) == NULL) {
        px__cl_close(c);
        return;
    }
    px__socks_t *sk = c->sk;
    if (px__in_keep(&sk->in, data, len) != 0) {
        px__socks_fail(c, NULL, PX_SOCKS_FAILURE, "handshake too large");
        return;
    }
    if (!sk->greeted && px__socks_greet(c, sk) <= 0)
        return;
    px_socks_req_t r;
    int rc = px_socks_request((const unsigned char *)sk->in.p, sk->in.len, &r);
    if (rc == 0) {
        /* a greeting and a request fit in far less: anything longer is not SOCKS5 */
        if (sk->in.len > PX_SOCKS_REQUEST_MAX)
            px__socks_fail(c, NULL, PX_SOCKS_FAILURE, "handshake too large");
        return;
    }
    if (rc < 0) {
        px__socks_fail(c, NULL, (int)r.rep,
                       r.rep == PX_SOCKS_BAD_ATYP ? "address type not supported"
                                                  : "malformed request");
        return;
    }
    if (r.cmd != PX_SOCKS_CONNECT) {
        px__socks_fail(c, NULL, PX_SOCKS_BAD_CMD, px__socks_cmd_name(r.cmd));
        return;
    }
    px__socks_connect(c, &r, (size_t)rc);
}

void px__cl_socks_timeout(px_client_t *c)
{
    if (c->sk == NULL)
        return; /* nothing was sent: closed without a line, like an idle connection */
    audit_event_t ev = audit_event_access(AUDIT_EV_CONNECT, AUDIT_EV_BLOCKED, "SOCKS", "-", 408);
    ev.tail = audit_s("socks: handshake not received in time");
    px_log_event(c->log, &ev);
}

void px__cl_socks_free(px_client_t *c)
{
    if (c->sk == NULL)
        return;
    free(c->sk->in.p);
    free(c->sk);
    c->sk = NULL;
}
