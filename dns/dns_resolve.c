/* Upstream resolver: c-ares driven by the libuv loop (one uv_poll per c-ares socket, one
 * uv_timer for c-ares timeouts, one uv_timer per request for its total timeout and for
 * delivering results from the loop). See dns_resolve.h. */
#include "dns/dns_resolve.h"

#include <ares.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/px_err.h"

#define DNS__CONTAINER_OF(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

/* c-ares retries: 1.5 s then 3 s (it doubles per try), inside the 5 s total. */
#define DNS__ARES_TRY_MS 1500
#define DNS__ARES_TRIES 2
#define DNS__DEFAULT_PORT 53
/* "[" IPv6 "%zone" "]:" port, NUL */
#define DNS__SERVER_TEXT_MAX 80

typedef struct dns__poll dns__poll_t;

struct dns__poll {
    uv_poll_t poll;
    dns_resolver_t *r;
    ares_socket_t fd;
    dns__poll_t *next;
};

/* One address kept compactly in the cache. */
typedef struct dns__cache_addr {
    int family;
    uint8_t bytes[16];
} dns__cache_addr_t;

typedef struct dns__cache_entry {
    char host[DNS_RESOLVE_HOST_MAX + 1]; /* lowercased, no trailing dot; "" = free */
    uint64_t expires;                    /* uv_now() milliseconds */
    uint64_t used;                       /* LRU stamp */
    size_t naddrs;
    dns__cache_addr_t addrs[DNS_RESOLVE_ADDRS_MAX];
} dns__cache_entry_t;

struct dns_resolve_req {
    dns_resolver_t *r;
    uv_timer_t timer; /* total timeout, then result delivery */
    dns_resolve_cb cb;
    void *data;
    dns_resolve_req_t *prev;
    dns_resolve_req_t *next;
    uint16_t port;
    int ares_pending; /* c-ares still holds this request as its callback argument */
    int timer_closed;
    int done;        /* the callback fired or the request was cancelled */
    int have_result; /* status/addrs/err are final, delivery is scheduled */
    int status;
    const char *err;
    size_t naddrs;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
    char key[DNS_RESOLVE_HOST_MAX + 1];
};

struct dns_resolver {
    uv_loop_t *loop;
    ares_channel channel;
    int channel_live;
    uv_timer_t timer; /* c-ares timeouts */
    dns__poll_t *polls;
    dns_resolve_req_t *reqs; /* every request not yet freed */
    size_t nreqs;
    int open_handles; /* the timer and the polls */
    int closing;
    dns_resolver_close_cb close_cb;
    void *close_data;
    uint64_t timeout_ms;
    int cache_enabled;
    uint64_t cache_clock;
    dns__cache_entry_t cache[DNS_RESOLVE_CACHE_MAX];
};

static void dns__resolver_maybe_done(dns_resolver_t *r)
{
    dns_resolver_close_cb cb;
    void *data;

    if (!r->closing || r->open_handles != 0 || r->reqs != NULL)
        return;
    cb = r->close_cb;
    data = r->close_data;
    free(r);
    if (cb != NULL)
        cb(data);
}

/* ---- c-ares sockets and timer on the loop ---- */

static void on_ares_timer(uv_timer_t *t);

static void dns__resolver_arm(dns_resolver_t *r)
{
    struct timeval tv;
    uint64_t ms;

    if (!r->channel_live)
        return;
    if (ares_timeout(r->channel, NULL, &tv) == NULL) {
        uv_timer_stop(&r->timer);
        return;
    }
    ms = (uint64_t)tv.tv_sec * 1000 + ((uint64_t)tv.tv_usec + 999) / 1000;
    uv_timer_start(&r->timer, on_ares_timer, ms, 0);
}

static void on_ares_timer(uv_timer_t *t)
{
    dns_resolver_t *r = DNS__CONTAINER_OF(t, dns_resolver_t, timer);

    ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    dns__resolver_arm(r);
}

static void on_poll_closed(uv_handle_t *h)
{
    dns__poll_t *p = DNS__CONTAINER_OF(h, dns__poll_t, poll);
    dns_resolver_t *r = p->r;

    free(p);
    r->open_handles--;
    dns__resolver_maybe_done(r);
}

static void on_ares_poll(uv_poll_t *h, int status, int events)
{
    dns__poll_t *p = DNS__CONTAINER_OF(h, dns__poll_t, poll);
    dns_resolver_t *r = p->r;
    ares_socket_t rfd = ARES_SOCKET_BAD;
    ares_socket_t wfd = ARES_SOCKET_BAD;

    if (status < 0) {
        rfd = p->fd; /* let c-ares read the socket error and fail over */
        wfd = p->fd;
    } else {
        if (events & UV_READABLE)
            rfd = p->fd;
        if (events & UV_WRITABLE)
            wfd = p->fd;
    }
    ares_process_fd(r->channel, rfd, wfd); /* may close p through on_ares_sock_state */
    dns__resolver_arm(r);
}

static void dns__poll_close(dns_resolver_t *r, dns__poll_t *p)
{
    dns__poll_t **pp;

    for (pp = &r->polls; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    }
    uv_close((uv_handle_t *)&p->poll, on_poll_closed);
}

static void on_ares_sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    dns_resolver_t *r = data;
    dns__poll_t *p;
    int events = 0;

    for (p = r->polls; p != NULL; p = p->next) {
        if (p->fd == fd)
            break;
    }
    if (!readable && !writable) {
        if (p != NULL)
            dns__poll_close(r, p);
        return;
    }
    if (p == NULL) {
        p = calloc(1, sizeof(*p));
        if (p == NULL)
            return; /* the query times out; nothing else can be done here */
        if (uv_poll_init_socket(r->loop, &p->poll, fd) != 0) {
            free(p);
            return;
        }
        p->r = r;
        p->fd = fd;
        p->next = r->polls;
        r->polls = p;
        r->open_handles++;
    }
    if (readable)
        events |= UV_READABLE;
    if (writable)
        events |= UV_WRITABLE;
    if (uv_poll_start(&p->poll, events, on_ares_poll) != 0)
        dns__poll_close(r, p);
}

/* ---- requests ---- */

static void dns__req_maybe_free(dns_resolve_req_t *req)
{
    dns_resolver_t *r = req->r;

    if (!req->timer_closed || req->ares_pending)
        return;
    if (req->prev != NULL)
        req->prev->next = req->next;
    else
        r->reqs = req->next;
    if (req->next != NULL)
        req->next->prev = req->prev;
    r->nreqs--;
    free(req);
    dns__resolver_maybe_done(r);
}

static void on_req_timer_closed(uv_handle_t *h)
{
    dns_resolve_req_t *req = DNS__CONTAINER_OF(h, dns_resolve_req_t, timer);

    req->timer_closed = 1;
    dns__req_maybe_free(req);
}

static void on_req_timer(uv_timer_t *t)
{
    dns_resolve_req_t *req = DNS__CONTAINER_OF(t, dns_resolve_req_t, timer);

    if (!req->have_result) {
        req->have_result = 1;
        req->status = PX_ETIMEOUT;
        req->err = "timed out";
        req->naddrs = 0;
    }
    req->done = 1;
    uv_close((uv_handle_t *)&req->timer, on_req_timer_closed);
    req->cb(req->status, req->status == 0 ? req->addrs : NULL, req->naddrs,
            req->status == 0 ? NULL : req->err, req->data);
}

/* Makes the result final and delivers it from the loop on the next turn. */
static void dns__req_finish(dns_resolve_req_t *req, int status, const char *err)
{
    if (req->done || req->have_result)
        return;
    req->have_result = 1;
    req->status = status;
    req->err = err;
    if (status != 0)
        req->naddrs = 0;
    uv_timer_start(&req->timer, on_req_timer, 0, 0);
}

/* Converts a c-ares failure once, here, to our code and the text the log shows. */
static int dns__ares_error(int status, const char **err)
{
    switch (status) {
    case ARES_ENOTFOUND:
    case ARES_ENODATA:
    case ARES_ENONAME:
    case ARES_EBADNAME:
        *err = "Name or service not known";
        return PX_EDNS;
    case ARES_ESERVFAIL:
        *err = "DNS server returned SERVFAIL";
        return PX_EDNS;
    case ARES_EREFUSED:
        *err = "DNS server returned REFUSED";
        return PX_EDNS;
    case ARES_EFORMERR:
        *err = "DNS server returned FORMERR";
        return PX_EDNS;
    case ARES_ENOTIMP:
        *err = "DNS server returned NOTIMP";
        return PX_EDNS;
    case ARES_EBADRESP:
        *err = "DNS server returned a malformed answer";
        return PX_EDNS;
    case ARES_ECONNREFUSED:
        *err = "Could not contact DNS server";
        return PX_EDNS;
    case ARES_ETIMEOUT:
        *err = "timed out";
        return PX_ETIMEOUT;
    case ARES_ENOMEM:
        *err = "out of memory";
        return UV_ENOMEM;
    case ARES_ECANCELLED:
    case ARES_EDESTRUCTION:
        *err = "cancelled";
        return UV_ECANCELED;
    default:
        *err = "name resolution failed";
        return PX_EDNS;
    }
}

static void dns__set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static void dns__req_add_addr(dns_resolve_req_t *req, int family, const void *bytes)
{
    struct sockaddr_storage *ss;

    if (req->naddrs >= DNS_RESOLVE_ADDRS_MAX)
        return;
    ss = &req->addrs[req->naddrs++];
    memset(ss, 0, sizeof(*ss));
    ss->ss_family = (sa_family_t)family;
    if (family == AF_INET)
        memcpy(&((struct sockaddr_in *)ss)->sin_addr, bytes, 4);
    else
        memcpy(&((struct sockaddr_in6 *)ss)->sin6_addr, bytes, 16);
    dns__set_port(ss, req->port);
}

/* ---- cache ---- */

static dns__cache_entry_t *dns__cache_find(dns_resolver_t *r, const char *key)
{
    uint64_t now = uv_now(r->loop);
    size_t i;

    if (!r->cache_enabled)
        return NULL;
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        dns__cache_entry_t *e = &r->cache[i];

        if (e->host[0] == '\0' || strcmp(e->host, key) != 0)
            continue;
        if (e->expires <= now) {
            e->host[0] = '\0';
            return NULL;
        }
        e->used = ++r->cache_clock;
        return e;
    }
    return NULL;
}

static void dns__cache_store(dns_resolver_t *r, const dns_resolve_req_t *req, int ttl_s)
{
    dns__cache_entry_t *victim = &r->cache[0];
    uint64_t now = uv_now(r->loop);
    size_t i;

    if (!r->cache_enabled || ttl_s <= 0 || req->naddrs == 0 || req->key[0] == '\0')
        return;
    if (ttl_s > DNS_RESOLVE_CACHE_TTL_MAX_S)
        ttl_s = DNS_RESOLVE_CACHE_TTL_MAX_S;
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        dns__cache_entry_t *e = &r->cache[i];

        if (e->host[0] == '\0' || e->expires <= now || strcmp(e->host, req->key) == 0) {
            victim = e;
            break;
        }
        if (e->used < victim->used)
            victim = e;
    }
    memcpy(victim->host, req->key, sizeof(victim->host));
    victim->expires = now + (uint64_t)ttl_s * 1000;
    victim->used = ++r->cache_clock;
    victim->naddrs = req->naddrs;
    for (i = 0; i < req->naddrs; i++) {
        const struct sockaddr_storage *ss = &req->addrs[i];

        victim->addrs[i].family = ss->ss_family;
        if (ss->ss_family == AF_INET)
            memcpy(victim->addrs[i].bytes, &((const struct sockaddr_in *)ss)->sin_addr, 4);
        else
            memcpy(victim->addrs[i].bytes, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    }
}

/* ---- lookups ---- */

static void on_ares_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
    dns_resolve_req_t *req = arg;
    struct ares_addrinfo_node *n;
    const char *err = NULL;
    int ttl = DNS_RESOLVE_CACHE_TTL_MAX_S;
    int pass;
    int code;

    (void)timeouts;
    req->ares_pending = 0;
    if (req->done || req->have_result) {
        if (res != NULL)
            ares_freeaddrinfo(res);
        dns__req_maybe_free(req);
        return;
    }
    if (status != ARES_SUCCESS || res == NULL || res->nodes == NULL) {
        code = dns__ares_error(status == ARES_SUCCESS ? ARES_ENODATA : status, &err);
        if (res != NULL)
            ares_freeaddrinfo(res);
        dns__req_finish(req, code, err);
        return;
    }
    for (pass = 0; pass < 2; pass++) { /* IPv4 first, then IPv6 */
        for (n = res->nodes; n != NULL; n = n->ai_next) {
            if (pass == 0 && n->ai_family == AF_INET && n->ai_addr != NULL)
                dns__req_add_addr(req, AF_INET, &((struct sockaddr_in *)n->ai_addr)->sin_addr);
            else if (pass == 1 && n->ai_family == AF_INET6 && n->ai_addr != NULL)
                dns__req_add_addr(req, AF_INET6, &((struct sockaddr_in6 *)n->ai_addr)->sin6_addr);
            else
                continue;
            if (n->ai_ttl < ttl)
                ttl = n->ai_ttl;
        }
    }
    ares_freeaddrinfo(res);
    if (req->naddrs == 0) {
        code = dns__ares_error(ARES_ENODATA, &err);
        dns__req_finish(req, code, err);
        return;
    }
    dns__cache_store(req->r, req, ttl);
    dns__req_finish(req, 0, NULL);
}

/* Accepts "1.2.3.4", "::1" and "[::1]". Returns the family, or 0 when host is no literal. */
static int dns__parse_literal(const char *host, size_t len, uint8_t bytes[16])
{
    char tmp[DNS_RESOLVE_HOST_MAX + 1];

    if (uv_inet_pton(AF_INET, host, bytes) == 0)
        return AF_INET;
    if (len >= 2 && host[0] == '[' && host[len - 1] == ']') {
        memcpy(tmp, host + 1, len - 2);
        tmp[len - 2] = '\0';
        host = tmp;
    }
    if (uv_inet_pton(AF_INET6, host, bytes) == 0)
        return AF_INET6;
    return 0;
}

int dns_resolve(dns_resolver_t *r, const char *host, uint16_t port, dns_resolve_cb cb, void *data,
                dns_resolve_req_t **out)
{
    struct ares_addrinfo_hints hints;
    dns_resolve_req_t *req;
    dns__cache_entry_t *e;
    uint8_t bytes[16];
    size_t len;
    size_t i;
    int family;

    if (r == NULL || host == NULL || cb == NULL || out == NULL)
        return UV_EINVAL;
    if (r->closing)
        return UV_ECANCELED;
    len = strnlen(host, DNS_RESOLVE_HOST_MAX + 1);
    if (len == 0 || len > DNS_RESOLVE_HOST_MAX)
        return UV_EINVAL;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)host[i];

        if (c <= 0x20 || c >= 0x7F)
            return UV_EINVAL; /* never put control bytes or spaces into a query */
    }
    if (r->nreqs >= DNS_RESOLVE_PENDING_MAX)
        return UV_EBUSY;
    req = calloc(1, sizeof(*req));
    if (req == NULL)
        return UV_ENOMEM;
    req->r = r;
    req->cb = cb;
    req->data = data;
    req->port = port;
    uv_timer_init(r->loop, &req->timer);
    req->next = r->reqs;
    if (r->reqs != NULL)
        r->reqs->prev = req;
    r->reqs = req;
    r->nreqs++;
    *out = req;

    family = dns__parse_literal(host, len, bytes);
    if (family != 0) {
        dns__req_add_addr(req, family, bytes);
        dns__req_finish(req, 0, NULL);
        return 0;
    }
    for (i = 0; i < len; i++)
        req->key[i] = (char)((host[i] >= 'A' && host[i] <= 'Z') ? host[i] + 32 : host[i]);
    if (i > 1 && req->key[i - 1] == '.')
        i--;
    req->key[i] = '\0';
    e = dns__cache_find(r, req->key);
    if (e != NULL) {
        for (i = 0; i < e->naddrs; i++)
            dns__req_add_addr(req, e->addrs[i].family, e->addrs[i].bytes);
        dns__req_finish(req, 0, NULL);
        return 0;
    }

    uv_timer_start(&req->timer, on_req_timer, r->timeout_ms, 0);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_flags = ARES_AI_NOSORT; /* sorting would connect() a UDP socket per address */
    req->ares_pending = 1;
    /* may call on_ares_done before returning; it only schedules the delivery */
    ares_getaddrinfo(r->channel, host, NULL, &hints, on_ares_done, req);
    dns__resolver_arm(r);
    return 0;
}

void dns_resolve_cancel(dns_resolve_req_t *req)
{
    if (req == NULL || req->done)
        return;
    req->done = 1;
    uv_close((uv_handle_t *)&req->timer, on_req_timer_closed);
}

/* ---- resolver ---- */

/* Parses "IPv4[:port]", "IPv6" or "[IPv6][:port]" into node. Returns 0 or UV_EINVAL. */
static int dns__parse_server(const char *server, struct ares_addr_port_node *node)
{
    char addr[DNS__SERVER_TEXT_MAX];
    const char *port_text = NULL;
    const char *colon;
    size_t len = strnlen(server, sizeof(addr));
    size_t alen;
    unsigned long port = DNS__DEFAULT_PORT;

    if (len == 0 || len >= sizeof(addr))
        return UV_EINVAL;
    if (server[0] == '[') {
        const char *close = memchr(server, ']', len);

        if (close == NULL)
            return UV_EINVAL;
        alen = (size_t)(close - server - 1);
        memcpy(addr, server + 1, alen);
        if (close[1] == ':')
            port_text = close + 2;
        else if (close[1] != '\0')
            return UV_EINVAL;
    } else {
        colon = strchr(server, ':');
        if (colon != NULL && strchr(colon + 1, ':') == NULL) {
            alen = (size_t)(colon - server);
            port_text = colon + 1;
        } else {
            alen = len; /* no colon, or a bare IPv6 address */
        }
        memcpy(addr, server, alen);
    }
    addr[alen] = '\0';
    if (port_text != NULL) {
        const char *p;

        if (*port_text == '\0' || strlen(port_text) > 5)
            return UV_EINVAL;
        port = 0;
        for (p = port_text; *p != '\0'; p++) {
            if (*p < '0' || *p > '9')
                return UV_EINVAL;
            port = port * 10 + (unsigned long)(*p - '0');
        }
        if (port == 0 || port > 65535)
            return UV_EINVAL;
    }
    memset(node, 0, sizeof(*node));
    if (uv_inet_pton(AF_INET, addr, &node->addr.addr4) == 0)
        node->family = AF_INET;
    else if (uv_inet_pton(AF_INET6, addr, &node->addr.addr6) == 0)
        node->family = AF_INET6;
    else
        return UV_EINVAL;
    node->udp_port = (int)port;
    node->tcp_port = (int)port;
    return 0;
}

int dns_resolver_create(uv_loop_t *loop, const char *server, dns_resolver_t **out)
{
    struct ares_addr_port_node node;
    struct ares_options opts;
    char lookups[] = "b";            /* DNS only: never /etc/hosts */
    char resolvconf[] = "/dev/null"; /* never /etc/resolv.conf */
    dns_resolver_t *r;
    int mask;
    int st;
    int rc;

    if (loop == NULL || server == NULL || out == NULL)
        return UV_EINVAL;
    rc = dns__parse_server(server, &node);
    if (rc != 0)
        return rc;
    st = ares_library_init(ARES_LIB_INIT_ALL);
    if (st != ARES_SUCCESS)
        return UV_ENOMEM;
    r = calloc(1, sizeof(*r));
    if (r == NULL)
        return UV_ENOMEM;
    r->loop = loop;
    r->timeout_ms = DNS_RESOLVE_TIMEOUT_MS;
    r->cache_enabled = 1;

    /* Every option c-ares would otherwise take from resolv.conf or the environment
     * (LOCALDOMAIN, RES_OPTIONS, HOSTALIASES) is set here, so none of those is consulted. */
    memset(&opts, 0, sizeof(opts));
    /* NOCHECKRESP: hand SERVFAIL/REFUSED to us as such; with it off, c-ares 1.18 turns a
     * SERVFAIL from the only server into ECONNREFUSED. */
    opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES | ARES_FLAG_NOCHECKRESP;
    opts.timeout = DNS__ARES_TRY_MS;
    opts.tries = DNS__ARES_TRIES;
    opts.ndots = 1;
    opts.servers = NULL;
    opts.nservers = 0;
    opts.domains = NULL;
    opts.ndomains = 0;
    opts.lookups = lookups;
    opts.sock_state_cb = on_ares_sock_state;
    opts.sock_state_cb_data = r;
    opts.sortlist = NULL;
    opts.nsort = 0;
    opts.resolvconf_path = resolvconf;
    mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_NDOTS |
           ARES_OPT_SERVERS | ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS | ARES_OPT_SOCK_STATE_CB |
           ARES_OPT_SORTLIST | ARES_OPT_RESOLVCONF | ARES_OPT_NOROTATE;
    st = ares_init_options(&r->channel, &opts, mask);
    if (st != ARES_SUCCESS) {
        free(r);
        return st == ARES_ENOMEM ? UV_ENOMEM : PX_EDNS;
    }
    st = ares_set_servers_ports(r->channel, &node);
    if (st != ARES_SUCCESS) {
        ares_destroy(r->channel);
        free(r);
        return st == ARES_ENOMEM ? UV_ENOMEM : UV_EINVAL;
    }
    r->channel_live = 1;
    uv_timer_init(loop, &r->timer);
    r->open_handles = 1;
    *out = r;
    return 0;
}

void dns_resolver_set_timeout(dns_resolver_t *r, uint64_t ms)
{
    r->timeout_ms = ms;
}

void dns_resolver_set_cache(dns_resolver_t *r, int enabled)
{
    size_t i;

    r->cache_enabled = enabled != 0;
    if (!r->cache_enabled) {
        for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++)
            r->cache[i].host[0] = '\0';
    }
}

static void on_resolver_timer_closed(uv_handle_t *h)
{
    dns_resolver_t *r = DNS__CONTAINER_OF(h, dns_resolver_t, timer);

    r->open_handles--;
    dns__resolver_maybe_done(r);
}

void dns_resolver_close(dns_resolver_t *r, dns_resolver_close_cb close_cb, void *data)
{
    dns_resolve_req_t *req;
    dns_resolve_req_t *next;

    if (r == NULL || r->closing)
        return;
    r->closing = 1;
    r->close_cb = close_cb;
    r->close_data = data;
    /* Lookups still pending end with UV_ECANCELED, delivered from the loop as usual. */
    for (req = r->reqs; req != NULL; req = next) {
        next = req->next;
        dns__req_finish(req, UV_ECANCELED, "cancelled");
    }
    /* ares_cancel first: in c-ares 1.18 a getaddrinfo with two queries outstanding must not
     * meet ARES_EDESTRUCTION (it would end the lookup twice). Callbacks only mark requests. */
    ares_cancel(r->channel);
    ares_destroy(r->channel); /* closes its sockets through on_ares_sock_state */
    r->channel_live = 0;
    while (r->polls != NULL)
        dns__poll_close(r, r->polls);
    uv_close((uv_handle_t *)&r->timer, on_resolver_timer_closed);
}
