#include "proxy/px_uppeer.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

/* Writes the socket's own peer (the address the dial settled on, after the fallbacks) into
 * out[48]: the length, or a negative code. */
static int px__peer_text(px_upconn_t *u, char *out, size_t cap)
{
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    int rc = uv_tcp_getpeername(&u->sock.tcp, (struct sockaddr *)&sa, &len);
    if (rc != 0)
        return rc;
    char ip[INET6_ADDRSTRLEN];
    int n;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)&sa;
        if (inet_ntop(AF_INET, &s4->sin_addr, ip, sizeof(ip)) == NULL)
            return UV_EINVAL;
        n = snprintf(out, cap, "%s:%u", ip, (unsigned)ntohs(s4->sin_port));
    } else if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&sa;
        if (inet_ntop(AF_INET6, &s6->sin6_addr, ip, sizeof(ip)) == NULL)
            return UV_EINVAL;
        n = snprintf(out, cap, "[%s]:%u", ip, (unsigned)ntohs(s6->sin6_port));
    } else {
        return UV_EINVAL;
    }
    if (n < 0 || (size_t)n >= cap) {
        out[0] = '\0';
        return PX_ETOOBIG;
    }
    return n;
}

int px_up_peer(const px_upreq_t *r, char *out, size_t cap)
{
    if (out == NULL || cap == 0)
        return UV_EINVAL;
    out[0] = '\0';
    if (r == NULL || r->conn == NULL)
        return PX_ESTATE;
    px_upconn_t *u = r->conn;
    /* asked once per connection, not per request: a system call each time cost one more per
     * keep-alive request (http_bench's sys figure) */
    if (u->peer[0] == '\0') {
        int rc = px__peer_text(u, u->peer, sizeof(u->peer));
        if (rc < 0)
            return rc;
    }
    size_t n = strlen(u->peer);
    if (n >= cap)
        return PX_ETOOBIG;
    memcpy(out, u->peer, n + 1);
    return (int)n;
}
