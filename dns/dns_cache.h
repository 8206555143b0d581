/* The upstream resolver's answer cache: positive answers only, per name (compared lowercased,
 * one trailing dot ignored), each kept for its TTL capped at DNS_RESOLVE_CACHE_TTL_MAX_S, at
 * most DNS_RESOLVE_CACHE_MAX names with the least recently used evicted. No loop and no clock
 * of its own: the caller passes the time (uv_now() milliseconds) to every call that needs it. */
#ifndef DNS_CACHE_H
#define DNS_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* The resolver's bounds, here because the cache's layout needs them (dns_resolve.h includes
 * this header). Addresses handed to a callback; more are dropped (IPv4 first). */
#define DNS_RESOLVE_ADDRS_MAX 16
/* Longest host name accepted (RFC 1035 text form, trailing dot included). */
#define DNS_RESOLVE_HOST_MAX 254
/* Cached names (positive answers only, TTL honoured, least recently used evicted). */
#define DNS_RESOLVE_CACHE_MAX 64
/* Cache lifetime cap, whatever TTL upstream gave. */
#define DNS_RESOLVE_CACHE_TTL_MAX_S 300

/* One address without a port, as the cache keeps it and a lookup collects it. */
typedef struct dns_cache_addr {
    int family; /* AF_INET (bytes[0..4)) or AF_INET6 */
    uint8_t bytes[16];
} dns_cache_addr_t;

typedef struct dns_cache_entry {
    char host[DNS_RESOLVE_HOST_MAX + 1]; /* a key from dns_cache_key; "" = free */
    uint64_t expires;                    /* milliseconds, on the caller's clock */
    uint64_t used;                       /* LRU stamp */
    size_t naddrs;
    dns_cache_addr_t addrs[DNS_RESOLVE_ADDRS_MAX];
} dns_cache_entry_t;

/* The layout is here only so that the resolver embeds the cache (one allocation, nothing to
 * free); everyone else goes through the functions below. */
typedef struct dns_cache {
    int enabled;
    uint64_t clock; /* the last LRU stamp handed out */
    dns_cache_entry_t entries[DNS_RESOLVE_CACHE_MAX];
} dns_cache_t;

/* Writes into key the name as the cache and the resolver's lookups in flight compare it:
 * host[0..len) (borrowed, len at most DNS_RESOLVE_HOST_MAX) lowercased (ASCII only), one
 * trailing dot dropped unless it is the whole name. key is NUL-terminated. */
void dns_cache_key(const char *host, size_t len, char key[DNS_RESOLVE_HOST_MAX + 1]);

/* Makes c an empty cache, enabled. */
void dns_cache_init(dns_cache_t *c);

/* Turns c on or off; turning it off empties it. While off, lookups miss and stores do
 * nothing. */
void dns_cache_set_enabled(dns_cache_t *c, int enabled);

/* Copies key's addresses into out and returns how many (1..DNS_RESOLVE_ADDRS_MAX), marking
 * the name most recently used; 0 when key is not cached, has expired by now_ms (its entry is
 * freed) or c is off. Borrows key. */
size_t dns_cache_lookup(dns_cache_t *c, const char *key, uint64_t now_ms,
                        dns_cache_addr_t out[DNS_RESOLVE_ADDRS_MAX]);

/* Keeps a copy of addrs[0..naddrs) (at most DNS_RESOLVE_ADDRS_MAX are kept) for key until
 * now_ms plus ttl_s seconds, capped at DNS_RESOLVE_CACHE_TTL_MAX_S, replacing key's entry, a
 * free or expired one, or else the least recently used. Does nothing while c is off, or for a
 * ttl_s <= 0, no address, or a key empty or longer than DNS_RESOLVE_HOST_MAX. Borrows key and
 * addrs. */
void dns_cache_store(dns_cache_t *c, const char *key, const dns_cache_addr_t *addrs, size_t naddrs,
                     int ttl_s, uint64_t now_ms);

#endif
