/* Which upstream destinations airlock refuses (README.md, "Destinations airlock refuses"):
 * every address that is not global unicast. Pure: no I/O. */
#ifndef PX_DEST_H
#define PX_DEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct px_config px_config_t;
struct px_cidr;

/* Why sa (AF_INET or AF_INET6) is not a global unicast destination, as a short static text
 * ("loopback", "private (RFC 1918)", "NAT64 of 169.254.169.254: link-local", ...), or NULL when
 * it is one. IPv6 forms that carry an IPv4 address (mapped, NAT64 64:ff9b::/96, 6to4, Teredo)
 * are judged by that address; the text then names it in buf (cap bytes), which is returned.
 * Any other family is refused. */
const char *px_dest_special(const struct sockaddr *sa, char *buf, size_t cap);

/* What decides a destination besides its address class: the configuration (listeners, the
 * ranges --allow-upstream-cidr re-opens), this machine's own addresses and the proxy IP (network
 * order). Borrowed; own may be NULL with n_own 0. */
typedef struct px_dest_ctx {
    const px_config_t *cfg;
    const struct px_cidr *own;
    size_t n_own;
    uint32_t proxy_ip;
} px_dest_ctx_t;

/* 1 (and why, "destination A is not allowed (kind)") when sa may not be dialed: any address
 * px_dest_special() names, this machine's own addresses and the proxy IP, unless
 * --allow-upstream-cidr re-opens its range; airlock's own listening sockets (an address and
 * port a listener of it takes, the wildcard ones at any local address) always. Else 0. */
int px_dest_forbidden(const px_dest_ctx_t *d, const struct sockaddr *sa, char *why, size_t cap);

#endif
