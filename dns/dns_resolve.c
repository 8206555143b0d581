/* Upstream resolver: c-ares driven by the libuv loop (one uv_poll per c-ares socket, one
 * uv_timer for c-ares timeouts, one uv_timer per request for its total timeout and for
 * delivering results from the loop). Requests for a name share the one c-ares lookup in
 * flight for it (a dns__lookup), so a burst of first requests asks upstream once per record
 * type. Answers are kept in a dns_cache (dns_cache.c). See dns_resolve.h. */
#include "dns/dns_resolve.h"

#include <ares.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "dns/dns_cache.h"
#include "base/px_err.h"

#define DNS__CONTAINER_OF(ptr, type, field) ((type *)((char *)(ptr)-offsetof(type, field)))

/* c-ares retries: 1.5 s then 3 s (it doubles per try), inside the 5 s total. */
#define DNS__ARES_TRY_MS 1500
#define DNS__ARES_TRIES 2
#define DNS__DEFAULT_PORT 53
/* "[" IPv6 "%zone" "]:" port, NUL */
#define DNS__SERVER_TEXT_MAX 80
/* Hash buckets for the lookups in flight (a power of two). */
#define DNS__LOOKUP_BUCKETS 256

typedef struct dns__poll dns__poll_t;

struct dns__poll {
    uv_poll_t poll;
    dns_resolver_t *r;
    ares_socket_t fd;
    dns__poll_t *next;
};

typedef struct dns__lookup dns__lookup_t;

/* One ares_getaddrinfo in flight for a name, and the requests waiting on it. It lives from
 * that call to its on_ares_done, with waiters or without (c-ares 1.18 cannot cancel one
 * query), and stays joinable all that time. */
struct dns__lookup {
    dns_resolver_t *r;
    dns__lookup_t *next;                 /* in its hash bucket */
    dns_resolve_req_t *waiters;          /* in the order they came */
    dns_resolve_req_t *last;             /* the newest waiter */
    uint64_t sent;                       /* uv_now() when its queries went out */
    char key[DNS_RESOLVE_HOST_MAX + 1];  /* dns_cache_key(name) */
    char name[DNS_RESOLVE_HOST_MAX + 1]; /* as its first request spelled it: what is asked */
};

struct dns_resolve_req {
    dns_resolver_t *r;
    uv_timer_t timer; /* total timeout, then result delivery */
    dns_resolve_cb cb;
    void *data;
    dns_resolve_req_t *prev;
    dns_resolve_req_t *next;
    dns__lookup_t *lookup; /* the lookup it waits on, NULL once it stopped waiting */
    dns_resolve_req_t *wprev;
    dns_resolve_req_t *wnext;
    uint64_t joined; /* uv_now() when it began waiting on lookup */
    uint16_t port;
    int done;        /* the callback fired or the request was cancelled */
    int have_result; /* status/addrs/err are final, delivery is scheduled */
    int status;
    const char *err;
    size_t naddrs;
    struct sockaddr_storage addrs[DNS_RESOLVE_ADDRS_MAX];
};

struct dns_resolver {
    uv_loop_t *loop;
    ares_channel channel;
    int channel_live;
    uv_timer_t timer; /* c-ares timeouts */
    dns__poll_t *polls;
    dns_resolve_req_t *reqs; /* every request not yet freed */
    size_t nreqs;
    dns__lookup_t *lookups[DNS__LOOKUP_BUCKETS];
    size_t nlookups;
    int open_handles; /* the timer and the polls */
    int closing;
    dns_resolver_close_cb close_cb;
    void *close_data;
    uint64_t timeout_ms;
    dns_cache_t cache;
};

static void dns__resolver_maybe_done(dns_resolver_t *r)
{
    dns_resolver_close_cb cb;
    void *data;

    if (!r->closing || r->open_handles != 0 || r->reqs != NULL || r->nlookups != 0)
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

static void on_req_timer_closed(uv_handle_t *h)
{
    dns_resolve_req_t *req = DNS__CONTAINER_OF(h, dns_resolve_req_t, timer);
    dns_resolver_t *r = req->r;

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

/* Takes req off its lookup's waiters; the lookup runs on, even with none left. */
static void dns__req_leave(dns_resolve_req_t *req)
{
    dns__lookup_t *lk = req->lookup;

    if (lk == NULL)
        return;
    if (req->wprev != NULL)
        req->wprev->wnext = req->wnext;
    else
        lk->waiters = req->wnext;
    if (req->wnext != NULL)
        req->wnext->wprev = req->wprev;
    else
        lk->last = req->wprev;
    req->lookup = NULL;
    req->wprev = NULL;
    req->wnext = NULL;
}

static void dns__req_join(dns_resolve_req_t *req, dns__lookup_t *lk)
{
    req->lookup = lk;
    req->joined = uv_now(lk->r->loop);
    req->wprev = lk->last;
    req->wnext = NULL;
    if (lk->last != NULL)
        lk->last->wnext = req;
    else
        lk->waiters = req;
    lk->last = req;
}

static void on_req_timer(uv_timer_t *t)
{
    dns_resolve_req_t *req = DNS__CONTAINER_OF(t, dns_resolve_req_t, timer);

    if (!req->have_result) {
        dns__req_leave(req); /* its own timeout: the others sharing the lookup wait on */
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
    dns__req_leave(req);
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

static void dns__req_add_addrs(dns_resolve_req_t *req, const dns_cache_addr_t *addrs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        dns__req_add_addr(req, addrs[i].family, addrs[i].bytes);
}

/* ---- lookups ---- */

static dns__lookup_t **dns__lookup_bucket(dns_resolver_t *r, const char *key)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *key != '\0'; key++)
        h = (h ^ (uint8_t)*key) * 16777619u;
    return &r->lookups[h & (DNS__LOOKUP_BUCKETS - 1)];
}

static dns__lookup_t *dns__lookup_find(dns_resolver_t *r, const char *key)
{
    dns__lookup_t *lk;

    for (lk = *dns__lookup_bucket(r, key); lk != NULL; lk = lk->next) {
        if (strcmp(lk->key, key) == 0)
            return lk;
    }
    return NULL;
}

static void dns__lookup_free(dns__lookup_t *lk)
{
    dns__lookup_t **pp;

    for (pp = dns__lookup_bucket(lk->r, lk->key); *pp != NULL; pp = &(*pp)->next) {
        if (*pp == lk) {
            *pp = lk->next;
            break;
        }
    }
    lk->r->nlookups--;
    free(lk);
}

static void on_ares_done(void *arg, int status, int timeouts, struct ares_addrinfo *res);

/* Sends lk's queries. c-ares may end lk before this returns (on_ares_done only schedules
 * deliveries, then frees lk), so the caller must not touch lk afterwards. */
static void dns__lookup_send(dns__lookup_t *lk)
{
    struct ares_addrinfo_hints hints;

    lk->sent = uv_now(lk->r->loop);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_flags = ARES_AI_NOSORT; /* sorting would connect() a UDP socket per address */
    ares_getaddrinfo(lk->r->channel, lk->name, NULL, &hints, on_ares_done, lk);
}

static void on_ares_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
    dns__lookup_t *lk = arg;
    dns_resolver_t *r = lk->r;
    dns_cache_addr_t addrs[DNS_RESOLVE_ADDRS_MAX];
    struct ares_addrinfo_node *n;
    dns_resolve_req_t *req;
    dns_resolve_req_t *next;
    const char *err = NULL;
    size_t naddrs = 0;
    int ttl = DNS_RESOLVE_CACHE_TTL_MAX_S;
    int code = 0;
    int pass;

    (void)timeouts;
    for (pass = 0; status == ARES_SUCCESS && res != NULL && pass < 2; pass++) {
        int family = pass == 0 ? AF_INET : AF_INET6; /* IPv4 first */

        for (n = res->nodes; n != NULL; n = n->ai_next) {
            if (n->ai_family != family || n->ai_addr == NULL)
                continue;
            if (n->ai_ttl < ttl)
                ttl = n->ai_ttl;
            if (naddrs == DNS_RESOLVE_ADDRS_MAX)
                continue;
            addrs[naddrs].family = family;
            if (family == AF_INET)
                memcpy(addrs[naddrs].bytes, &((struct sockaddr_in *)n->ai_addr)->sin_addr, 4);
            else
                memcpy(addrs[naddrs].bytes, &((struct sockaddr_in6 *)n->ai_addr)->sin6_addr, 16);
            naddrs++;
        }
    }
    if (res != NULL)
        ares_freeaddrinfo(res);
    if (naddrs == 0)
        code = dns__ares_error(status == ARES_SUCCESS ? ARES_ENODATA : status, &err);
    else
        dns_cache_store(&r->cache, lk->key, addrs, naddrs, ttl, uv_now(r->loop));
    for (req = lk->waiters; req != NULL; req = next) {
        next = req->wnext;
        /* c-ares gave up on time, but a request that joined after the queries went out has
         * not had a full try of its own yet: it stays for the lookup sent again below. */
        if (status == ARES_ETIMEOUT && req->joined > lk->sent && !r->closing)
            continue;
        dns__req_add_addrs(req, addrs, naddrs);
        dns__req_finish(req, code, err); /* takes req off lk */
    }
    if (lk->waiters != NULL) {
        /* Starting queries from a c-ares callback is what c-ares' own getaddrinfo does for
         * its next search domain. */
        dns__lookup_send(lk);
        return;
    }
    dns__lookup_free(lk);
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
    char key[DNS_RESOLVE_HOST_MAX + 1];
    dns_cache_addr_t cached[DNS_RESOLVE_ADDRS_MAX];
    size_t ncached = 0;
    dns__lookup_t *lk = NULL;
    dns__lookup_t *fresh = NULL;
    dns_resolve_req_t *req;
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
    family = dns__parse_literal(host, len, bytes);
    if (family == 0) {
        dns_cache_key(host, len, key);
        ncached = dns_cache_lookup(&r->cache, key, uv_now(r->loop), cached);
        if (ncached == 0)
            lk = dns__lookup_find(r, key);
        if (ncached == 0 && lk == NULL) {
            if (r->nlookups >= DNS_RESOLVE_PENDING_MAX)
                return UV_EBUSY;
            fresh = calloc(1, sizeof(*fresh));
            if (fresh == NULL)
                return UV_ENOMEM;
        }
    }
    req = calloc(1, sizeof(*req));
    if (req == NULL) {
        free(fresh);
        return UV_ENOMEM;
    }
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

    if (family != 0) {
        dns__req_add_addr(req, family, bytes);
        dns__req_finish(req, 0, NULL);
        return 0;
    }
    if (ncached != 0) {
        dns__req_add_addrs(req, cached, ncached);
        dns__req_finish(req, 0, NULL);
        return 0;
    }
    uv_timer_start(&req->timer, on_req_timer, r->timeout_ms, 0);
    if (lk != NULL) {
        dns__req_join(req, lk); /* no new query: the answer on its way serves this one too */
        return 0;
    }
    fresh->r = r;
    memcpy(fresh->key, key, sizeof(fresh->key));
    memcpy(fresh->name, host, len);
    fresh->name[len] = '\0';
    fresh->next = *dns__lookup_bucket(r, key);
    *dns__lookup_bucket(r, key) = fresh;
    r->nlookups++;
    dns__req_join(req, fresh);
    dns__lookup_send(fresh);
    dns__resolver_arm(r);
    return 0;
}

void dns_resolve_cancel(dns_resolve_req_t *req)
{
    if (req == NULL || req->done)
        return;
    dns__req_leave(req); /* the lookup runs on for the other requests, or for the cache */
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
    dns_cache_init(&r->cache);

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
    dns_cache_set_enabled(&r->cache, enabled);
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
    /* Requests still pending end with UV_ECANCELED, delivered from the loop as usual; this
     * also takes them off their lookups. */
    for (req = r->reqs; req != NULL; req = next) {
        next = req->next;
        dns__req_finish(req, UV_ECANCELED, "cancelled");
    }
    /* ares_cancel first: in c-ares 1.18 a getaddrinfo with two queries outstanding must not
     * meet ARES_EDESTRUCTION (it would end the lookup twice). Each lookup ends here once and
     * is freed; it has no request left to deliver to. */
    ares_cancel(r->channel);
    ares_destroy(r->channel); /* closes its sockets through on_ares_sock_state */
    r->channel_live = 0;
    while (r->polls != NULL)
        dns__poll_close(r, r->polls);
    uv_close((uv_handle_t *)&r->timer, on_resolver_timer_closed);
}
