#include "proxy/px_client_int.h"

#include <arpa/inet.h>
#include <pthread.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "ca/ca.h"
#include "proxy/px_answer.h"
#include "proxy/px_caconv.h"
#include "proxy/px_metrics.h"
#include "base/px_err.h"
#include "http/px_h1.h"
#include "http/px_h2.h"
#include "net/px_hello.h"
#include "proxy/px_policy.h"
#include "net/px_sock.h"
#include "proxy/px_srcnet.h"
#include "net/px_tls.h"
#include "proxy/px_upstream.h"
#include "proxy/px_xchg.h"

static void on_client_timer(px_tmo_t *t);

void px__cl_timer(px_client_t *c, uint64_t ms)
{
    if (!c->tmo_done)
        px_tmo_start(&c->ctx->loop, &c->tmo, ms, on_client_timer);
}

void px__cl_timer_stop(px_client_t *c)
{
    px_tmo_stop(&c->ctx->loop, &c->tmo);
}

/* ---- reading ----------------------------------------------------------------------------------
 */

void px__cl_read(px_sock_t *s, const char *data, size_t len)
{
    px_client_t *c = s->data;
    switch (c->mode) {
    case PX__SNIFF: {
        int tls = px_tls_sniff(data, len);
        /* a SOCKS tunnel may carry plain HTTP (http:// URLs through ALL_PROXY) */
        if ((c->kind == PX_LISTEN_HTTPS || (c->tunnel[0] != '\0' && !c->socks)) && !tls) {
            px__cl_close(c); /* not TLS on the TLS port or in a tunnel: close without a word */
            return;
        }
        if (tls) {
            if (c->ctx->tls_server == NULL ||
                px_sock_tls_server(&c->sock, c->ctx->tls_server, c, data, len) != 0) {
                px__cl_close(c);
                return;
            }
            c->tls = 1;
            c->mode = PX__HANDSHAKE;
            px__cl_timer(c, c->ctx->cfg->handshake_ms);
            return;
        }
        if (px__cl_is_h2c(data, len)) {
            px__cl_h2c_refuse(c);
            return;
        }
        px__cl_start_http(c);
        if (c->closing)
            return;
        /* fall through: these bytes are the first request */
    }
        /* fallthrough */
    case PX__HTTP:
        px__cl_h1_read(c, data, len);
        return;
    case PX__HELLO:
        px__cl_hello_input(c, data, len);
        return;
    case PX__TUNNEL:
        px__cl_tun_read(c, data, len);
        return;
    case PX__H2:
        px__cl_h2_input(c, data, len);
        return;
    case PX__SOCKS:
        px__cl_socks_input(c, data, len);
        return;
    default:
        return;
    }
}

static pthread_mutex_t px__rejected_lock = PTHREAD_MUTEX_INITIALIZER; /* ctx->rejected */

/* A client that aborts the handshake over airlock's certificate most likely does not trust
 * airlock's CA: the most common failure of intercepting proxies, and a silent one for the
 * agent. One line per host per minute says so, with the runtime the ClientHello looked like
 * and the fix for it. */
static void px__tls_rejected(px_client_t *c)
{
    px_tls_t *t = c->sock.tls;
    int alert = px_tls_peer_alert(t);
    const char *why;
    char what[96];
    switch (alert) {
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_REVOKED:
        snprintf(what, sizeof(what), "client alert: %s", SSL_alert_desc_string_long(alert));
        why = what;
        break;
    case -1:
        if (!px_tls_sent_certificate(t))
            return;
        why = "the client closed the connection after airlock's certificate";
        break;
    default:
        return;
    }
    char ip[64];
    const char *host = c->sni;
    if (host[0] == '\0') {
        inet_ntop(AF_INET, &c->ctx->proxy_ip, ip, sizeof(ip));
        host = ip;
    }
    /* the memory is the engine's, shared by every loop (their clocks are the same monotonic
     * one, each cached at its loop's turn) */
    px_ctx_t *ctx = c->ctx->rejected_of != NULL ? c->ctx->rejected_of : c->ctx;
    uint64_t now = uv_now(c->ctx->loop.uv);
    pthread_mutex_lock(&px__rejected_lock);
    for (size_t i = 0; i < PX_REJECT_HOSTS; i++)
        if (ctx->rejected[i].at != 0 && now - ctx->rejected[i].at < PX_REJECT_EVERY_MS &&
            strcmp(ctx->rejected[i].host, host) == 0) {
            pthread_mutex_unlock(&px__rejected_lock);
            return;
        }
    size_t slot = ctx->rejected_next++ % PX_REJECT_HOSTS;
    snprintf(ctx->rejected[slot].host, sizeof(ctx->rejected[slot].host), "%s", host);
    ctx->rejected[slot].at = now;
    pthread_mutex_unlock(&px__rejected_lock);
    px_runtime_t rt = px_tls_runtime(t);
    audit_event_t ev = {.kind = AUDIT_EV_TLS_REJECTED, .verdict = AUDIT_EV_REJECTED};
    ev.host = audit_s(host);
    if (rt == PX_RT_UNKNOWN)
        px_log_eventf(c->log, &ev, "%s; the client does not trust airlock's CA", why);
    else
        px_log_eventf(c->log, &ev,
                      "%s; the client does not trust airlock's CA; it looks like %s: %s", why,
                      px_runtime_name(rt), px_runtime_fix(rt));
}

static void on_client_handshake(px_sock_t *s, int status)
{
    px_client_t *c = s->data;
    if (status < 0) {
        px_diag(PX_DIAG_INFO, "client TLS handshake failed: %s", px_sock_tls_error(s));
        /* the name asked for, not c->sni: that stays empty when airlock refused the name */
        SSL *ssl = px_tls_ssl(c->sock.tls);
        px_metrics_tls_failed(px_metrics_tls_reason(
            px_tls_peer_alert(c->sock.tls), px_tls_sent_certificate(c->sock.tls),
            SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name) != NULL, px_sock_tls_error(s)));
        px__tls_rejected(c);
        px__cl_close_flush(c); /* the alert goes out */
        return;
    }
    if (px_tls_alpn_h2(c->sock.tls))
        px__cl_start_h2(c);
    else
        px__cl_start_http(c);
}

static void on_client_eof(px_sock_t *s, int err)
{
    px_client_t *c = s->data;
    if (c->mode == PX__TUNNEL) {
        px__cl_tun_eof(c, err);
        return;
    }
    if (c->mode == PX__H2) {
        px__cl_h2_shut(c, "Client disconnected.");
        px__cl_close(c);
        return;
    }
    if (px__cl_h1_eof(c, err))
        return; /* a half-close after a whole request: the response still goes out */
    px__cl_close(c);
}

static void on_client_drain(px_sock_t *s)
{
    px_client_t *c = s->data;
    if (c->mode == PX__TUNNEL)
        px__cl_tun_drain(c);
    else if (c->mode == PX__H2)
        px__cl_h2_pump(c);
    else
        px__cl_h1_drain(c);
}

static void on_client_timer(px_tmo_t *t)
{
    px_client_t *c = px_container_of(t, px_client_t, tmo);
    if (c->closing) {
        px_sock_close(&c->sock); /* the last bytes did not leave in time */
        return;
    }
    if (c->mode == PX__HTTP && px__cl_h1_mid_head(c)) {
        audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, NULL, NULL, 408);
        ev.tail = audit_s("request head not received in time");
        px_log_event(c->log, &ev);
    }
    if (c->mode == PX__SOCKS)
        px__cl_socks_timeout(c);
    px__cl_close(c);
}

/* ---- lifetime ---------------------------------------------------------------------------------
 */

static void px__cl_unlink(px_client_t *c);

static void px__cl_free(px_client_t *c)
{
    px__cl_unlink(c);
    px_snapshot_unref(c->snap);
    if (c->scope != NULL) {
        __atomic_sub_fetch(&c->scope->conns, 1, __ATOMIC_RELAXED);
        px_scope_unref(c->scope);
    }
    px__cl_h1_free(c);
    px__cl_h2_free(c);
    px__cl_tun_free(c);
    px__cl_socks_free(c);
    if (c->sni != px__cl_noname)
        free(c->sni);
    if (c->tunnel != px__cl_noname)
        free(c->tunnel);
    free(c);
}

/* The deadline is done for: stopped, and never armed again. */
static void px__timer_close(px_client_t *c)
{
    px__cl_timer_stop(c);
    c->tmo_done = 1;
}

static void on_client_closed(px_sock_t *s)
{
    px_client_t *c = s->data;
    px__cl_tun_closed(c);
    px__timer_close(c);
    px__cl_free(c);
}

/* What every close does first: the exchange (if any) and a dial end; nothing more is read. */
static void px__shut(px_client_t *c)
{
    c->closing = 1;
    px__cl_h1_abort(c, NULL);
    if (c->h2 != NULL)
        px__cl_h2_shut(c, NULL);
    px__cl_tun_shut(c);
    px_defer_cancel(&c->ctx->loop, &c->defer);
}

/* The one way to close now. The memory goes in the last close callback. */
void px__cl_close(px_client_t *c)
{
    if (!c->closing)
        px__shut(c);
    px__timer_close(c);
    px_sock_close(&c->sock);
}

/* Closes once what was written (an answer, an alert) is out, within PX__LINGER_MS. */
void px__cl_close_flush(px_client_t *c)
{
    if (c->closing)
        return;
    px__shut(c);
    px__cl_timer(c, PX__LINGER_MS);
    px_sock_close_when_flushed(&c->sock);
}

void px_client_close(px_client_t *c, const char *reason)
{
    if (c->h2 != NULL)
        px__cl_h2_shut(c, reason);
    px__cl_h1_abort(c, reason);
    px__cl_close(c);
}

static const px_sock_cbs_t px__client_sock_cbs = {
    .on_read = px__cl_read,
    .on_eof = on_client_eof,
    .on_drain = on_client_drain,
    .on_handshake = on_client_handshake,
    .on_closed = on_client_closed,
};

/* Transparent listener: the port the client really dialed (the policy checks it). */
static int px__orig_port(px_client_t *c)
{
    uv_os_fd_t fd;
    struct sockaddr_storage od;
    socklen_t olen = sizeof(od);
    if (uv_fileno((uv_handle_t *)&c->sock.tcp, &fd) != 0)
        return -1;
    if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &od, &olen) != 0) {
        olen = sizeof(od);
        if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &od, &olen) != 0)
            return -1;
    }
    c->orig_port = ntohs(od.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&od)->sin6_port
                                                  : ((struct sockaddr_in *)&od)->sin_port);
    return 0;
}

/* A source address as the logs write it: an IPv4 one (mapped, px_srcnet.h) dotted, whichever
 * listener it came through. */
/* A connection refused whole (sandboxes): "BLOCKED - - -> closed (tail)". */
static audit_event_t px__closed_ev(void)
{
    audit_event_t ev = audit_event_access(AUDIT_EV_CONNECTION, AUDIT_EV_BLOCKED, NULL, NULL, -1);
    ev.reason = audit_s("closed");
    return ev;
}

static void px__src_text(const uint8_t a[16], char *out, size_t len)
{
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (inet_ntop(memcmp(a, v4mapped, 12) == 0 ? AF_INET : AF_INET6,
                  memcmp(a, v4mapped, 12) == 0 ? a + 12 : a, out, (socklen_t)len) == NULL)
        snprintf(out, len, "?");
}

/* The connection's scope: ctx's one, or with --sandboxes the sandbox of its source address
 * (or the close, with one line in the host log). Returns 0 when c may go on. */
static int px__scope_pick(px_client_t *c)
{
    px_ctx_t *ctx = c->ctx;
    px_scope_t *s = NULL; /* a reference once chosen */
    char ip[INET6_ADDRSTRLEN];
    if (ctx->scope_for == NULL) {
        s = px_scope_ref(ctx->conv);
    } else {
        struct sockaddr_storage peer;
        int len = sizeof(peer);
        if (uv_tcp_getpeername(&c->sock.tcp, (struct sockaddr *)&peer, &len) != 0 ||
            px_srcnet_addr((const struct sockaddr *)&peer, c->src) != 0)
            return -1;
        if ((s = ctx->scope_for(ctx, c->src)) == NULL) {
            px__src_text(c->src, ip, sizeof(ip));
            audit_event_t ev = px__closed_ev();
            px_log_eventf(ctx->log, &ev, "source %s is in no sandbox", ip);
            return -1;
        }
    }
    size_t conns = __atomic_add_fetch(&s->conns, 1, __ATOMIC_RELAXED); /* loops share it */
    if (s->max_conns != 0 && conns > s->max_conns) {
        __atomic_sub_fetch(&s->conns, 1, __ATOMIC_RELAXED);
        audit_event_t ev = px__closed_ev();
        px_log_eventf(s->log, &ev, "sandbox %s: %zu connections at once", s->name, s->max_conns);
        px_scope_unref(s);
        return -1;
    }
    c->scope = s; /* the reference taken above */
    c->scope_gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
    c->log = s->log;
    c->up = ctx->pool_for != NULL ? ctx->pool_for(ctx, s) : s->up;
    if (c->up == NULL)
        return -1; /* out of memory (c's close lets go of the scope) */
    c->snap = px_scope_snap(s);
    return 0;
}

px_snapshot_t *px__cl_snap_take(px_client_t *c)
{
    px_snapshot_t *old = c->snap;
    c->snap = px_scope_snap(c->scope);
    px_snapshot_unref(old);
    return c->snap;
}

/* One compare per request while c's scope did not change (its generation did not move); after
 * a reload that moved it, c looks again whether its source is still in. */
int px__cl_sb_left(px_client_t *c)
{
    px_scope_t *s = c->scope;
    if (c->sb_left || s == NULL || s == c->ctx->conv ||
        c->scope_gen == __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE))
        return c->sb_left;
    px_scope_rdlock(); /* the sources are re-read in place by a reload on the engine's loop */
    int holds = px_scope_holds(s, c->src);
    unsigned gen = s->gen;
    px_scope_unlock();
    if (!holds) {
        c->sb_left = 1; /* for good: a later reload giving the source back changes nothing */
        return 1;
    }
    c->scope_gen = gen;
    return 0;
}

/* c no longer belongs to its sandbox: the line in the sandbox's log, then no new request. A
 * request in flight finishes (HTTP/1: the connection closes after it; HTTP/2: GOAWAY, and
 * WebSocket streams end); an idle connection, a handshake or a tunnel closes now. Returns 1
 * when c closed now. */
static int px__cl_retire(px_client_t *c)
{
    char ip[INET6_ADDRSTRLEN], why[PX_SB_NAME_MAX + INET6_ADDRSTRLEN + 64];
    px__src_text(c->src, ip, sizeof(ip));
    if (c->scope->gone)
        snprintf(why, sizeof(why), "sandbox %s removed; connection from %s", c->scope->name, ip);
    else
        snprintf(why, sizeof(why), "source %s left sandbox %s; connection", ip, c->scope->name);
    int later = (c->mode == PX__HTTP && px__cl_h1_in_flight(c)) ||
                (c->mode == PX__H2 && px__cl_h2_streams(c) > 0);
    audit_event_t ev = px__closed_ev();
    px_log_eventf(c->log, &ev, "%s %s", why,
                  later ? "closes after its requests in flight" : "closed");
    if (c->mode == PX__H2) {
        px__cl_h2_retire(c); /* with no stream left, the GOAWAY goes out and c closes */
        return !later;
    }
    if (later) {
        px__cl_h1_close_after(c); /* down_finished() closes; on_req_head() refuses anyway */
        return 0;
    }
    px_client_close(c, "Its sandbox was removed or no longer holds its source.");
    return 1;
}

void px_client_sandboxes_changed(px_ctx_t *ctx)
{
    size_t now = 0, later = 0;
    for (px_client_t *c = ctx->clients, *next; c != NULL; c = next) {
        next = c->next; /* closing c unlinks it only in its last close callback */
        if (c->closing || c->sb_left || !px__cl_sb_left(c))
            continue; /* (already told) */
        if (px__cl_retire(c))
            now++;
        else
            later++;
    }
    if (now + later > 0)
        px_diag(PX_DIAG_WARN,
                "sandboxes: %zu open connections no longer belong to their sandbox (%zu closed, "
                "%zu close after their requests in flight)",
                now + later, now, later);
}

/* ctx's list of connections, for the shutdown and the sandbox reloads. */
static void px__cl_link(px_ctx_t *ctx, px_client_t *c)
{
    c->prev = NULL;
    c->next = ctx->clients;
    if (ctx->clients != NULL)
        ctx->clients->prev = c;
    ctx->clients = c;
    ctx->nclients++;
    if (ctx->conns_all != NULL) {
        __atomic_add_fetch(ctx->conns_all, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(ctx->accepted_all, 1, __ATOMIC_RELAXED);
    }
    ctx->next_id++;
    if (ctx->nclients > ctx->nclients_peak)
        ctx->nclients_peak = ctx->nclients;
}

static void px__cl_unlink(px_client_t *c)
{
    px_ctx_t *ctx = c->ctx;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else if (ctx->clients == c)
        ctx->clients = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    ctx->nclients--;
    if (ctx->conns_all != NULL)
        __atomic_sub_fetch(ctx->conns_all, 1, __ATOMIC_RELAXED);
}

void px_client_close_all(px_ctx_t *ctx, const char *reason)
{
    for (px_client_t *c = ctx->clients, *next; c != NULL; c = next) {
        next = c->next;
        px_client_close(c, reason);
    }
}

char px__cl_noname[1];

/* Every idle connection pays for this struct (issue 34's idle memory): names live outside it
 * (px__cl_set_name), protocol state in h1/h2/tn, the deadline is a px_tmo_t and the socket has
 * no connect request. 624 bytes with libuv 1.44's uv_tcp_t (248); 1,328 with the two name
 * arrays inline, 832 with a uv_timer_t and a uv_connect_t. Checked without libuv's part, whose
 * size is another version's business. */
_Static_assert(sizeof(struct px_client) - sizeof(uv_tcp_t) <= 400,
               "px_client_t grew: airlock's part of it past 400 bytes");

int px__cl_set_name(char **slot, const char *name)
{
    char *d = strdup(name);
    if (d == NULL)
        return PX_ENOMEM;
    if (*slot != px__cl_noname)
        free(*slot);
    *slot = d;
    return 0;
}

/* More connections than the process takes (PX_CONNS_MAX over every loop). */
static int px__cl_over_limit(const px_ctx_t *ctx)
{
    size_t n =
        ctx->conns_all != NULL ? __atomic_load_n(ctx->conns_all, __ATOMIC_RELAXED) : ctx->nclients;
    return n > PX_CONNS_MAX;
}

void px_client_accept(px_ctx_t *ctx, uv_stream_t *server, px_listener_kind_t kind)
{
    px_client_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return;
    c->ctx = ctx;
    c->log = ctx->log;
    c->kind = kind;
    c->sni = c->tunnel = px__cl_noname;
    px_metrics()->accepted++; /* per loop: airlock_loop_connections_total */
    px_sock_init(&ctx->loop, &c->sock, &px__client_sock_cbs, c);
    px__cl_link(ctx, c);
    if (px_sock_accept(&c->sock, server) != 0 || ctx->stopping || px__cl_over_limit(ctx) ||
        px__scope_pick(c) != 0) {
        px_client_close(c, NULL);
        return;
    }
    if (kind == PX_LISTEN_TRANSPARENT && px__orig_port(c) != 0) {
        px_diag(PX_DIAG_WARN, "transparent connection without an original destination");
        px_client_close(c, NULL);
        return;
    }
    c->mode = PX__SNIFF;
    if (kind == PX_LISTEN_SOCKS) { /* the handshake first, within the TLS handshake's time */
        c->socks = 1;
        c->mode = PX__SOCKS;
    }
    px__cl_timer(c, kind == PX_LISTEN_HTTPS || kind == PX_LISTEN_SOCKS ? ctx->cfg->handshake_ms
                                                                       : ctx->cfg->client_idle_ms);
    px_sock_read_start(&c->sock);
}

/* ---- certificates -----------------------------------------------------------------------------
 */

int px_client_cert_cb(SSL *ssl, void *arg)
{
    (void)arg; /* the engine's context: c's own loop's is the one to use (--workers) */
    px_client_t *c = SSL_get_app_data(ssl);
    px_ctx_t *ctx = c->ctx;
    const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    char ipbuf[64];
    char norm[CA_NAME_MAX + 1];
    if (name != NULL && name[0] != '\0') {
        if (ca_name_normalize(name, strlen(name), norm, sizeof(norm), NULL) != 0)
            return PX_TLS_BAD_NAME; /* a name no certificate can carry: fail the handshake */
        if (px__cl_set_name(&c->sni, norm) != 0)
            return PX_TLS_REFUSED; /* out of memory: no certificate */
        name = norm;
        if (c->tunnel[0] != '\0' && strcmp(norm, c->tunnel) != 0) {
            /* a tunnel to one host, a handshake for another */
            char url[PX_HOST_MAX + 8];
            snprintf(url, sizeof(url), "%s:%u", c->tunnel, c->tunnel_port);
            audit_event_t ev = audit_event_access(AUDIT_EV_CONNECT, AUDIT_EV_BLOCKED,
                                                  c->socks ? "SOCKS" : "CONNECT", url, 403);
            px_log_eventf(c->log, &ev, "host mismatch: connect=%s, sni=%s", c->tunnel, norm);
            return PX_TLS_REFUSED;
        }
    } else if (c->tunnel[0] != '\0') {
        name = c->tunnel;
    } else {
        inet_ntop(AF_INET, &ctx->proxy_ip, ipbuf, sizeof(ipbuf));
        name = ipbuf;
    }
    /* only the CA of the connection's sandbox signs (each one's own cache of leaves) */
    ca_t *ca = px_scope_ca(c->scope, ctx->ca);
    ca_leaf_t *leaf = NULL;
    int rc = ca != NULL ? ca_leaf_acquire(ca, name, strlen(name), &leaf) : PX_EFORBIDDEN;
    if (rc == PX_EFORBIDDEN) { /* the conversation CA may not sign for it: no leaf, no handshake */
        px_caconv_log_refused(c->log, px__cl_snap(c)->cfg.policy, name);
        return PX_TLS_REFUSED;
    }
    if (rc != 0)
        return 0;
    int ok = SSL_use_certificate(ssl, ca_leaf_get_cert(leaf)) == 1 &&
             SSL_use_PrivateKey(ssl, ca_leaf_get_key(leaf)) == 1 &&
             SSL_set1_chain(ssl, ca_leaf_get_chain(leaf)) == 1;
    ca_leaf_release(leaf);
    return ok ? 1 : 0;
}
