#include "proxy/px_uppeer.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "base/px_err.h"
#include "proxy/px_upstream_int.h"

int px_up_peer(const px_upreq_t *r, char *out, size_t cap)
{
    if (out == NULL || cap == 0)
        return UV_EINVAL;
    out[0] = '\0';
    if (r == NULL || r->conn == NULL)
        return PX_ESTATE;
    struct sockaddr_storage sa;
    int len = sizeof(sa);
    /* the socket's own peer: the address the dial settled on, after the fallbacks */
    int rc = uv_tcp_getpeername(&r->conn->sock.tcp, (struct sockaddr *)&sa, &len);
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
