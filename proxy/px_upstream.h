/* Upstream connections (internal to proxy/): see px_upstream.c. */
#ifndef PX_UPSTREAM_H
#define PX_UPSTREAM_H

#include <stddef.h>
#include <sys/socket.h>

#include "proxy/px_int.h"

/* 1 (and a reason in why) when sa may not be dialed: loopback, link-local, unspecified,
 * multicast, broadcast, or the proxy's own address, unless --allow-upstream-cidr covers it. */
int px_upstream_addr_forbidden(const px_engine_t *eng, const struct sockaddr *sa, char *why,
                               size_t cap);

/* A new, unconnected upstream object for key ("host:port:scheme"). NULL when out of memory. */
px_upstream_t *px_upstream_new(px_engine_t *eng, const char *key);

/* Cancels c's DNS lookup, if any (its callback never fires). */
void px_upstream_cancel(px_conn_t *c);

/* Resolves and connects again for c (after a pooled connection turned out dead). */
void px_upstream_retry(px_conn_t *c);

/* Half-closes the upstream's write side (for an upgraded connection's client EOF). */
void px_upstream_shutdown(px_upstream_t *u);

#endif
