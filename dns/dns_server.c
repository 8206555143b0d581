/* DNS responder: UDP with a preallocated receive area and one reused send buffer, TCP with a
 * length prefix, in-order answers, a connection cap, an idle timeout and capped buffers. */
#include "dns/dns_server.h"

#include <stdlib.h>
#include <string.h>

#include "dns/dns_codec.h"
#include "base/px_err.h"

#define DNS__CONTAINER_OF(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

/* libuv hands recvmmsg one 64 KiB slot per datagram (UV__UDP_DGRAM_MAXSIZE), up to 20 slots
 * per call. Only the touched start of each slot becomes resident. */
#define DNS__UDP_SLOT 65536
#define DNS__UDP_SLOTS 16
#define DNS__UDP_RECV_BUF (DNS__UDP_SLOT * DNS__UDP_SLOTS)
/* Bind attempts when port 0 asks for one free port for both UDP and TCP. */
#define DNS__BIND_TRIES 16

typedef struct dns__udp_send {
    uv_udp_send_t req;
    struct dns__udp_send *next_free;
    uint8_t buf[DNS_CODEC_ANSWER_MAX];
} dns__udp_send_t;

typedef struct dns__conn dns__conn_t;

struct dns__conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_write_t wreq;
    dns_server_t *srv;
    dns__conn_t *prev;
    dns__conn_t *next;
    int closing;
    int open_handles;
    int eof;
    int writing;
    int paused;
    struct sockaddr_storage peer; /* for the route */
    size_t rlen; /* query bytes buffered in rbuf */
    size_t olen; /* answer bytes in obuf not yet given to libuv */
    uint8_t rbuf[2 + DNS_SERVER_TCP_MSG_MAX];
    uint8_t obuf[DNS_SERVER_TCP_OUT_MAX];
    uint8_t wbuf[DNS_SERVER_TCP_OUT_MAX]; /* bytes of the one uv_write in flight */
};

struct dns_server {
    uv_loop_t *loop;
    uv_udp_t udp;
    uv_tcp_t tcp;
    uv_tcp_t reject; /* accepts and closes clients over the cap or without memory */
    int reject_busy;
    int accept_stalled; /* a connection waits in the backlog until reject is free */
    uint8_t proxy_ip[4];
    dns_server_log_cb log_cb;
    dns_server_route_cb route;
    void *data;
    dns_server_close_cb close_cb;
    void *close_data;
    int closing;
    int open_handles; /* udp, tcp, reject */
    int udp_inited;
    int tcp_inited;
    unsigned conns_alive; /* allocated, not yet freed */
    uint64_t tcp_timeout_ms;
    dns__conn_t *conns;
    dns_server_stats_t stats;
    dns__udp_send_t *free_sends;
    dns__udp_send_t sends[DNS_SERVER_UDP_SEND_POOL];
    uint8_t *udp_rbuf;
    uint8_t sbuf[DNS_CODEC_ANSWER_MAX];
};

static void dns__conn_close(dns__conn_t *c);
static void dns__conn_process(dns__conn_t *c);
static void on_conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void on_tcp_connection(uv_stream_t *server, int status);

static void dns__server_maybe_done(dns_server_t *srv)
{
    dns_server_close_cb cb;
    void *data;

    if (!srv->closing || srv->open_handles != 0 || srv->conns_alive != 0)
        return;
    cb = srv->close_cb;
    data = srv->close_data;
    free(srv->udp_rbuf);
    free(srv);
    if (cb != NULL)
        cb(data);
}

/* Answers one query from src into out; logs it. Returns the answer length, 0 for none. */
static int dns__server_answer(dns_server_t *srv, const struct sockaddr *src, const uint8_t *q,
                              size_t len, uint8_t *out, size_t cap)
{
    dns_answer_info_t info;
    dns_log_fields_t f;
    int n;
    void *data = srv->data;

    if (srv->route != NULL && (data = srv->route(srv->data, src)) == NULL)
        return 0; /* a source in no sandbox: no answer */
    n = dns_codec_answer(q, len, srv->proxy_ip, out, cap, srv->log_cb != NULL ? &info : NULL);
    if (n <= 0)
        return 0;
    if (srv->log_cb != NULL && dns_codec_log_fields(&info, srv->proxy_ip, &f))
        srv->log_cb(data, &f);
    return n;
}

/* ---- UDP ---- */

static void on_udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    dns_server_t *srv = DNS__CONTAINER_OF(h, dns_server_t, udp);

    (void)suggested;
    buf->base = (char *)srv->udp_rbuf;
    buf->len = DNS__UDP_RECV_BUF;
}

static void on_udp_sent(uv_udp_send_t *req, int status)
{
    dns__udp_send_t *s = DNS__CONTAINER_OF(req, dns__udp_send_t, req);
    dns_server_t *srv = DNS__CONTAINER_OF(req->handle, dns_server_t, udp);

    if (status < 0)
        srv->stats.udp_dropped++;
    s->next_free = srv->free_sends;
    srv->free_sends = s;
}

static void dns__udp_send(dns_server_t *srv, size_t n, const struct sockaddr *to)
{
    uv_buf_t b = uv_buf_init((char *)srv->sbuf, (unsigned)n);
    dns__udp_send_t *s;
    int r;

    if (srv->closing)
        return; /* the log callback closed the server */
    r = uv_udp_try_send(&srv->udp, &b, 1, to);
    if (r == (int)n) {
        srv->stats.udp_answers++;
        return;
    }
    s = srv->free_sends;
    if (r != UV_EAGAIN || s == NULL) {
        srv->stats.udp_dropped++;
        return;
    }
    memcpy(s->buf, srv->sbuf, n);
    b = uv_buf_init((char *)s->buf, (unsigned)n);
    if (uv_udp_send(&s->req, &srv->udp, &b, 1, to, on_udp_sent) != 0) {
        srv->stats.udp_dropped++;
        return;
    }
    srv->free_sends = s->next_free;
    srv->stats.udp_answers++;
}

static void on_udp_recv(uv_udp_t *h, ssize_t nread, const uv_buf_t *buf,
                        const struct sockaddr *addr, unsigned flags)
{
    dns_server_t *srv = DNS__CONTAINER_OF(h, dns_server_t, udp);
    int n;

    /* nread < 0: a transient socket error; addr == NULL: nothing read or the end of a batch */
    if (nread <= 0 || addr == NULL || (flags & UV_UDP_PARTIAL) || srv->closing)
        return;
    n = dns__server_answer(srv, addr, (const uint8_t *)buf->base, (size_t)nread, srv->sbuf,
                           sizeof(srv->sbuf));
    if (n > 0)
        dns__udp_send(srv, (size_t)n, addr);
}

/* ---- TCP clients ---- */

static void on_conn_closed(uv_handle_t *h)
{
    dns__conn_t *c = h->data;
    dns_server_t *srv = c->srv;

    if (--c->open_handles > 0)
        return;
    free(c);
    srv->conns_alive--;
    dns__server_maybe_done(srv);
}

/* The one close path: idempotent, frees in the last close callback. */
static void dns__conn_close(dns__conn_t *c)
{
    dns_server_t *srv = c->srv;

    if (c->closing)
        return;
    c->closing = 1;
    if (c->prev != NULL)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next != NULL)
        c->next->prev = c->prev;
    srv->stats.tcp_open--;
    uv_timer_stop(&c->timer);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    uv_close((uv_handle_t *)&c->timer, on_conn_closed);
}

static void on_conn_timeout(uv_timer_t *t)
{
    dns__conn_t *c = DNS__CONTAINER_OF(t, dns__conn_t, timer);

    c->srv->stats.tcp_timeouts++;
    dns__conn_close(c);
}

static void on_conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    dns__conn_t *c = DNS__CONTAINER_OF(h, dns__conn_t, tcp);

    (void)suggested;
    buf->base = (char *)c->rbuf + c->rlen;
    buf->len = sizeof(c->rbuf) - c->rlen;
}

static void on_conn_written(uv_write_t *req, int status);

/* Hands the queued answers to the socket: try_write first, uv_write for the rest. */
static void dns__conn_flush(dns__conn_t *c)
{
    uv_buf_t b;
    int r;

    if (c->closing || c->writing || c->olen == 0)
        return;
    b = uv_buf_init((char *)c->obuf, (unsigned)c->olen);
    r = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (r == UV_EAGAIN || r == UV_ENOSYS)
        r = 0;
    if (r < 0) {
        dns__conn_close(c);
        return;
    }
    if ((size_t)r == c->olen) {
        c->olen = 0;
        return;
    }
    memcpy(c->wbuf, c->obuf + r, c->olen - (size_t)r);
    b = uv_buf_init((char *)c->wbuf, (unsigned)(c->olen - (size_t)r));
    c->olen = 0;
    if (uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_conn_written) != 0) {
        dns__conn_close(c);
        return;
    }
    c->writing = 1;
}

static void dns__conn_after_write(dns__conn_t *c)
{
    if (c->closing)
        return;
    if (c->paused && sizeof(c->obuf) - c->olen >= 2 + DNS_CODEC_ANSWER_MAX) {
        c->paused = 0;
        dns__conn_process(c);
        if (!c->closing && !c->paused && !c->eof &&
            uv_read_start((uv_stream_t *)&c->tcp, on_conn_alloc, on_conn_read) != 0)
            dns__conn_close(c);
    }
    if (!c->closing && c->eof && !c->writing && c->olen == 0)
        dns__conn_close(c); /* the client half-closed and has all its answers */
}

static void on_conn_written(uv_write_t *req, int status)
{
    dns__conn_t *c = DNS__CONTAINER_OF(req, dns__conn_t, wreq);

    c->writing = 0;
    if (status < 0) {
        dns__conn_close(c);
        return;
    }
    uv_timer_again(&c->timer); /* the client reads its answers: not stalled */
    dns__conn_flush(c);
    dns__conn_after_write(c);
}

/* Answers every complete query in rbuf, in order, while answer space remains. */
static void dns__conn_process(dns__conn_t *c)
{
    dns_server_t *srv = c->srv;
    size_t off = 0;

    while (!c->closing) {
        size_t msglen;
        int n;

        if (c->rlen - off < 2)
            break;
        msglen = ((size_t)c->rbuf[off] << 8) | c->rbuf[off + 1];
        if (msglen == 0 || msglen > DNS_SERVER_TCP_MSG_MAX) {
            dns__conn_close(c);
            return;
        }
        if (c->rlen - off - 2 < msglen)
            break;
        if (sizeof(c->obuf) - c->olen < 2 + DNS_CODEC_ANSWER_MAX) {
            c->paused = 1; /* the client is not reading its answers */
            break;
        }
        n = dns__server_answer(srv, (const struct sockaddr *)&c->peer, c->rbuf + off + 2, msglen,
                               c->obuf + c->olen + 2, DNS_CODEC_ANSWER_MAX);
        if (n > 0) {
            c->obuf[c->olen] = (uint8_t)(n >> 8);
            c->obuf[c->olen + 1] = (uint8_t)n;
            c->olen += 2 + (size_t)n;
            srv->stats.tcp_answers++;
        }
        off += 2 + msglen;
        uv_timer_again(&c->timer);
    }
    if (c->closing)
        return;
    if (off != 0) {
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
    }
    dns__conn_flush(c);
}

static void on_conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    dns__conn_t *c = DNS__CONTAINER_OF(s, dns__conn_t, tcp);

    (void)buf;
    if (nread == 0 || c->closing)
        return;
    if (nread == UV_EOF) {
        c->eof = 1;
        uv_read_stop(s);
        if (!c->writing && c->olen == 0)
            dns__conn_close(c);
        return;
    }
    if (nread < 0) {
        dns__conn_close(c);
        return;
    }
    c->rlen += (size_t)nread;
    dns__conn_process(c);
    if (!c->closing && c->paused)
        uv_read_stop(s);
}

static void on_reject_closed(uv_handle_t *h)
{
    dns_server_t *srv = DNS__CONTAINER_OF(h, dns_server_t, reject);

    srv->reject_busy = 0;
    srv->open_handles--;
    if (srv->closing) {
        dns__server_maybe_done(srv);
        return;
    }
    if (srv->accept_stalled) {
        srv->accept_stalled = 0;
        on_tcp_connection((uv_stream_t *)&srv->tcp, 0);
    }
}

/* Accepts a client we will not serve and closes it at once. */
static void dns__server_reject(dns_server_t *srv)
{
    if (srv->reject_busy) {
        srv->accept_stalled = 1; /* libuv keeps it in the backlog until the next accept */
        return;
    }
    if (uv_tcp_init(srv->loop, &srv->reject) != 0) {
        srv->accept_stalled = 1;
        return;
    }
    srv->reject_busy = 1;
    srv->open_handles++;
    if (uv_accept((uv_stream_t *)&srv->tcp, (uv_stream_t *)&srv->reject) == 0)
        srv->stats.tcp_refused++;
    uv_close((uv_handle_t *)&srv->reject, on_reject_closed);
}

static void on_tcp_connection(uv_stream_t *server, int status)
{
    dns_server_t *srv = DNS__CONTAINER_OF(server, dns_server_t, tcp);
    dns__conn_t *c;

    if (status < 0 || srv->closing)
        return;
    if (srv->stats.tcp_open >= DNS_SERVER_TCP_CONNS_MAX) {
        dns__server_reject(srv);
        return;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        dns__server_reject(srv);
        return;
    }
    c->srv = srv;
    uv_tcp_init(srv->loop, &c->tcp);
    uv_timer_init(srv->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->open_handles = 2;
    c->next = srv->conns;
    if (srv->conns != NULL)
        srv->conns->prev = c;
    srv->conns = c;
    srv->conns_alive++;
    srv->stats.tcp_open++;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        dns__conn_close(c);
        return;
    }
    srv->stats.tcp_accepted++;
    int plen = sizeof(c->peer);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&c->peer, &plen) != 0)
        c->peer.ss_family = AF_UNSPEC;
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_start(&c->timer, on_conn_timeout, srv->tcp_timeout_ms, srv->tcp_timeout_ms);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_conn_alloc, on_conn_read) != 0)
        dns__conn_close(c);
}

/* ---- start / close ---- */

static void on_server_handle_closed(uv_handle_t *h)
{
    dns_server_t *srv = h->data;

    srv->open_handles--;
    dns__server_maybe_done(srv);
}

static int dns__port_is_zero(const struct sockaddr *addr)
{
    if (addr->sa_family == AF_INET)
        return ((const struct sockaddr_in *)addr)->sin_port == 0;
    return ((const struct sockaddr_in6 *)addr)->sin6_port == 0;
}

/* Binds UDP then TCP to addr. With port 0 TCP takes the port UDP got; UV_EAGAIN when that
 * port is busy on TCP, so the caller starts over with fresh sockets. */
static int dns__server_bind(dns_server_t *srv, const struct sockaddr *addr)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    int r;

    r = uv_udp_bind(&srv->udp, addr, 0);
    if (r != 0)
        return r;
    r = uv_udp_getsockname(&srv->udp, (struct sockaddr *)&ss, &len);
    if (r != 0)
        return r;
    r = uv_tcp_bind(&srv->tcp, (const struct sockaddr *)&ss, 0);
    if (r == 0)
        r = uv_listen((uv_stream_t *)&srv->tcp, SOMAXCONN, on_tcp_connection);
    if (r == UV_EADDRINUSE && dns__port_is_zero(addr))
        return UV_EAGAIN;
    return r;
}

static int dns__server_open(dns_server_t *srv, const struct sockaddr *addr)
{
    int r;

    r = uv_udp_init_ex(srv->loop, &srv->udp, addr->sa_family | UV_UDP_RECVMMSG);
    if (r != 0)
        return r;
    srv->udp.data = srv;
    srv->udp_inited = 1;
    srv->open_handles++;
    r = uv_tcp_init_ex(srv->loop, &srv->tcp, addr->sa_family);
    if (r != 0)
        return r;
    srv->tcp.data = srv;
    srv->tcp_inited = 1;
    srv->open_handles++;
    return dns__server_bind(srv, addr);
}

static void dns__server_shut(dns_server_t *srv)
{
    if (srv->udp_inited)
        uv_close((uv_handle_t *)&srv->udp, on_server_handle_closed);
    if (srv->tcp_inited)
        uv_close((uv_handle_t *)&srv->tcp, on_server_handle_closed);
}

static void on_retry_closed(void *data)
{
    (void)data;
}

int dns_server_start(uv_loop_t *loop, const struct sockaddr *addr, const char *proxy_ip,
                     dns_server_log_cb log_cb, void *data, dns_server_t **out)
{
    struct in_addr ip;
    dns_server_t *srv;
    int tries;
    int r;
    size_t i;

    if (loop == NULL || addr == NULL || proxy_ip == NULL || out == NULL ||
        (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
        return UV_EINVAL;
    if (uv_inet_pton(AF_INET, proxy_ip, &ip) != 0)
        return UV_EINVAL;
    for (tries = 0; tries < DNS__BIND_TRIES; tries++) {
        srv = calloc(1, sizeof(*srv));
        if (srv == NULL)
            return UV_ENOMEM;
        srv->udp_rbuf = malloc(DNS__UDP_RECV_BUF);
        if (srv->udp_rbuf == NULL) {
            free(srv);
            return UV_ENOMEM;
        }
        srv->loop = loop;
        memcpy(srv->proxy_ip, &ip, 4);
        srv->log_cb = log_cb;
        srv->data = data;
        srv->tcp_timeout_ms = DNS_SERVER_TCP_IDLE_MS;
        for (i = 0; i < DNS_SERVER_UDP_SEND_POOL; i++) {
            srv->sends[i].next_free = srv->free_sends;
            srv->free_sends = &srv->sends[i];
        }
        r = dns__server_open(srv, addr);
        if (r == 0)
            r = uv_udp_recv_start(&srv->udp, on_udp_alloc, on_udp_recv);
        if (r == 0) {
            *out = srv;
            return 0;
        }
        /* Handles were initialized: they must be closed, the memory goes in the callback. */
        srv->closing = 1;
        srv->close_cb = on_retry_closed;
        if (srv->open_handles == 0) {
            free(srv->udp_rbuf);
            free(srv);
        } else {
            dns__server_shut(srv);
        }
        if (r != UV_EAGAIN)
            return r;
    }
    return UV_EADDRINUSE;
}

void dns_server_set_route(dns_server_t *srv, dns_server_route_cb route)
{
    srv->route = route;
}

int dns_server_address(const dns_server_t *srv, struct sockaddr_storage *out)
{
    int len = sizeof(*out);

    return uv_udp_getsockname(&srv->udp, (struct sockaddr *)out, &len);
}

void dns_server_set_tcp_timeout(dns_server_t *srv, uint64_t ms)
{
    srv->tcp_timeout_ms = ms;
}

void dns_server_get_stats(const dns_server_t *srv, dns_server_stats_t *out)
{
    *out = srv->stats;
}

void dns_server_close(dns_server_t *srv, dns_server_close_cb close_cb, void *data)
{
    if (srv == NULL || srv->closing)
        return;
    srv->closing = 1;
    srv->close_cb = close_cb;
    srv->close_data = data;
    while (srv->conns != NULL)
        dns__conn_close(srv->conns);
    dns__server_shut(srv);
}
