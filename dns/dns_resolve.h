/* The upstream resolver: c-ares on the libuv loop, asking only the one server it was given
 * (never /etc/resolv.conf, /etc/hosts or search domains). Used after a request was allowed.
 * A request for a name already being looked up (compared case-insensitively, one trailing dot
 * ignored) joins that lookup instead of asking upstream again; it still gets its own callback,
 * port and timeout, and the lookup's answer or error. */
#ifndef DNS_RESOLVE_H
#define DNS_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "dns/dns_cache.h"

/* Total time for one request (A and AAAA together), from its own dns_resolve call, whatever
 * c-ares retries. A lookup that gives up on time before a request that joined it late had a
 * full try of its own is sent again for such requests. */
#define DNS_RESOLVE_TIMEOUT_MS 5000
/* DNS_RESOLVE_ADDRS_MAX, DNS_RESOLVE_HOST_MAX and the cache bounds: dns/dns_cache.h. */
/* Requests pending per resolver, and names being looked up at once; more fail with
 * UV_EBUSY. */
#define DNS_RESOLVE_PENDING_MAX 4096

typedef struct dns_resolver dns_resolver_t;
typedef struct dns_resolve_req dns_resolve_req_t;

/* Lookup result. status 0: addrs[0..naddrs) (IPv4 first, port set), err NULL. Otherwise
 * status is PX_EDNS, PX_ETIMEOUT or a libuv code, naddrs 0, and err a text such as "Name or
 * service not known", "DNS server returned SERVFAIL" or "timed out". addrs and err are
 * borrowed for the call; the request is freed when the callback returns. */
typedef void (*dns_resolve_cb)(int status, const struct sockaddr_storage *addrs, size_t naddrs,
                               const char *err, void *data);
/* Fires once after the resolver's last handle closed; the resolver is gone by then. */
typedef void (*dns_resolver_close_cb)(void *data);

/* Creates a resolver asking only server ("IPv4", "IPv4:port", "IPv6" or "[IPv6]:port"; port
 * 53 by default). Borrows server. Returns 0 and *out, UV_EINVAL for a bad server, or another
 * negative code. */
int dns_resolver_create(uv_loop_t *loop, const char *server, dns_resolver_t **out);

/* Sets the total timeout for requests made from now on (default DNS_RESOLVE_TIMEOUT_MS). */
void dns_resolver_set_timeout(dns_resolver_t *r, uint64_t ms);

/* Turns the answer cache on (default) or off; turning it off empties it. */
void dns_resolver_set_cache(dns_resolver_t *r, int enabled);

/* Starts resolving host (a name, an IPv4 literal, or an IPv6 literal with or without
 * brackets) and puts port into every address. Borrows host. cb always fires later from the
 * loop, never inside this call, exactly once unless the request is cancelled. Returns 0 and
 * *req (valid until cb fires or dns_resolve_cancel), or a negative code (cb never fires). */
int dns_resolve(dns_resolver_t *r, const char *host, uint16_t port, dns_resolve_cb cb, void *data,
                dns_resolve_req_t **req);

/* Cancels a request whose callback has not fired yet: the callback will never fire and req
 * is invalid on return. Safe to call from any callback except on a request already done.
 * Other requests for the same name are unaffected; their lookup runs on (and fills the cache). */
void dns_resolve_cancel(dns_resolve_req_t *req);

/* Ends every request still pending: their callbacks fire with UV_ECANCELED from the loop (not
 * inside this call), then all handles close and close_cb (may be NULL) fires with data; the
 * resolver is freed after it. dns_resolve fails with UV_ECANCELED from now on. Idempotent. */
void dns_resolver_close(dns_resolver_t *r, dns_resolver_close_cb close_cb, void *data);

#endif
