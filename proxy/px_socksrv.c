/* The SOCKS5 listener's side of a client connection (RFC 1928, no authentication, CONNECT
 * only): the handshake is read with net/px_socks.c, then the target is decided exactly like an
 * explicit-proxy CONNECT (px__cl_connect_to) and the connection goes on as after "200
 * Connection established": intercepted, or passed through for `tls: passthrough` entries. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_host.h"
#include "net/px_socks.h"
#include "proxy/px_client_int.h"

struct px__socks {
    px__in_t in; /* bytes not taken yet: at most a greeting and a request (each bounded) */
    int greeted; /* the greeting was answered "no authentication" */
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
    px__in_t in = c->sk->in; /* what came after the request, once c->sk is gone */
    c->sk->in = (px__in_t){0};
    px__cl_socks_free(c);
    c->kind = PX_LISTEN_PROXY; /* from here on, a CONNECT tunnel's connection */
    px__cl_connect_to(c, NULL, r->host, strlen(r->host), &pre);
    if (!c->closing && (c->mode == PX__SNIFF || c->mode == PX__HELLO) && in.len > n)
        px__cl_read(&c->sock, in.p + n, in.len - n);
    free(in.p);
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
