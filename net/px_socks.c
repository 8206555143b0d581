#include "net/px_socks.h"

#include <arpa/inet.h>
#include <string.h>

#include "base/px_err.h"

int px_socks_greeting(const unsigned char *p, size_t len, int *noauth)
{
    *noauth = 0;
    if (len >= 1 && p[0] != PX_SOCKS_VER)
        return PX_EPARSE; /* SOCKS4 or not SOCKS at all: RFC 1928 has no reply for it */
    if (len < 2)
        return 0;
    size_t n = p[1];
    if (n == 0)
        return PX_EPARSE;
    if (len < 2 + n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (p[2 + i] == PX_SOCKS_NOAUTH)
            *noauth = 1;
    return (int)(2 + n);
}

static int px__socks_bad(px_socks_req_t *r, px_socks_rep_t rep)
{
    r->rep = rep;
    return PX_EPARSE;
}

int px_socks_request(const unsigned char *p, size_t len, px_socks_req_t *r)
{
    memset(r, 0, sizeof(*r));
    r->rep = PX_SOCKS_FAILURE;
    /* each byte is checked as soon as it is in: a wrong version is refused before the rest */
    if (len >= 1 && p[0] != PX_SOCKS_VER)
        return px__socks_bad(r, PX_SOCKS_FAILURE);
    if (len >= 3 && p[2] != 0)
        return px__socks_bad(r, PX_SOCKS_FAILURE);
    if (len < 4)
        return 0;
    r->cmd = p[1];
    r->atyp = p[3];
    size_t alen, off = 4;
    switch (r->atyp) {
    case PX_SOCKS_IPV4:
        alen = 4;
        break;
    case PX_SOCKS_IPV6:
        alen = 16;
        break;
    case PX_SOCKS_NAME:
        if (len < 5)
            return 0;
        alen = p[4];
        off = 5;
        if (alen == 0)
            return px__socks_bad(r, PX_SOCKS_FAILURE);
        break;
    default:
        return px__socks_bad(r, PX_SOCKS_BAD_ATYP); /* its length is unknown: nothing follows */
    }
    if (len < off + alen + 2)
        return 0;
    const unsigned char *a = p + off;
    if (r->atyp == PX_SOCKS_NAME) {
        if (memchr(a, 0, alen) != NULL)
            return px__socks_bad(r, PX_SOCKS_FAILURE);
        memcpy(r->host, a, alen);
        r->host[alen] = '\0';
    } else if (inet_ntop(alen == 4 ? AF_INET : AF_INET6, a, r->host, sizeof(r->host)) == NULL) {
        return px__socks_bad(r, PX_SOCKS_FAILURE);
    }
    r->port = (uint16_t)(p[off + alen] << 8 | p[off + alen + 1]);
    if (r->port == 0)
        return px__socks_bad(r, PX_SOCKS_FAILURE);
    r->rep = PX_SOCKS_OK;
    return (int)(off + alen + 2);
}

size_t px_socks_reply(unsigned char *out, px_socks_rep_t rep, const uint8_t *addr, size_t alen,
                      uint16_t port)
{
    static const uint8_t any[4] = {0, 0, 0, 0};
    if (addr == NULL || (alen != 4 && alen != 16)) {
        addr = any;
        alen = 4;
    }
    out[0] = PX_SOCKS_VER;
    out[1] = (uint8_t)rep;
    out[2] = 0;
    out[3] = alen == 4 ? PX_SOCKS_IPV4 : PX_SOCKS_IPV6;
    memcpy(out + 4, addr, alen);
    out[4 + alen] = (uint8_t)(port >> 8);
    out[5 + alen] = (uint8_t)port;
    return 6 + alen;
}
