/* The resolver's answer cache: a fixed table scanned in full (DNS_RESOLVE_CACHE_MAX is
 * small), LRU by a stamp per entry. See dns_cache.h. */
#include "dns/dns_cache.h"

#include <string.h>

#include "base/px_host.h"

void dns_cache_key(const char *host, size_t len, char key[DNS_RESOLVE_HOST_MAX + 1])
{
    if (px_host_norm(key, DNS_RESOLVE_HOST_MAX + 1, host, len) < 0)
        key[0] = '\0'; /* never stored: the resolver refuses longer names first */
}

void dns_cache_init(dns_cache_t *c)
{
    memset(c, 0, sizeof(*c));
    c->enabled = 1;
}

void dns_cache_set_enabled(dns_cache_t *c, int enabled)
{
    size_t i;

    c->enabled = enabled != 0;
    if (!c->enabled) {
        for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++)
            c->entries[i].host[0] = '\0';
    }
}

size_t dns_cache_lookup(dns_cache_t *c, const char *key, uint64_t now_ms,
                        dns_cache_addr_t out[DNS_RESOLVE_ADDRS_MAX])
{
    size_t i;

    if (!c->enabled)
        return 0;
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        dns_cache_entry_t *e = &c->entries[i];

        if (e->host[0] == '\0' || strcmp(e->host, key) != 0)
            continue;
        if (e->expires <= now_ms) {
            e->host[0] = '\0';
            return 0;
        }
        e->used = ++c->clock;
        memcpy(out, e->addrs, e->naddrs * sizeof(e->addrs[0]));
        return e->naddrs;
    }
    return 0;
}

void dns_cache_store(dns_cache_t *c, const char *key, const dns_cache_addr_t *addrs, size_t naddrs,
                     int ttl_s, uint64_t now_ms)
{
    dns_cache_entry_t *victim = &c->entries[0];
    size_t klen = strnlen(key, DNS_RESOLVE_HOST_MAX + 1);
    size_t i;

    if (!c->enabled || ttl_s <= 0 || naddrs == 0 || klen == 0 || klen > DNS_RESOLVE_HOST_MAX)
        return;
    if (ttl_s > DNS_RESOLVE_CACHE_TTL_MAX_S)
        ttl_s = DNS_RESOLVE_CACHE_TTL_MAX_S;
    if (naddrs > DNS_RESOLVE_ADDRS_MAX)
        naddrs = DNS_RESOLVE_ADDRS_MAX;
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        dns_cache_entry_t *e = &c->entries[i];

        if (e->host[0] == '\0' || e->expires <= now_ms || strcmp(e->host, key) == 0) {
            victim = e;
            break;
        }
        if (e->used < victim->used)
            victim = e;
    }
    memcpy(victim->host, key, klen + 1);
    victim->expires = now_ms + (uint64_t)ttl_s * 1000;
    victim->used = ++c->clock;
    victim->naddrs = naddrs;
    memcpy(victim->addrs, addrs, naddrs * sizeof(addrs[0]));
}
