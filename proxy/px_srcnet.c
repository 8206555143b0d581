/* Source networks in one address space (px_srcnet.h). */
#include "proxy/px_srcnet.h"

#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "base/px_err.h"
#include "proxy/px_config.h"

static const uint8_t px__v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* 1 when the first bits bits of a and b are the same. */
static int px__prefix_eq(const uint8_t *a, const uint8_t *b, int bits)
{
    int bytes = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)bytes) != 0)
        return 0;
    if (rest == 0)
        return 1;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[bytes] & mask) == (b[bytes] & mask);
}

int px_srcnet_parse(px_srcnet_t *n, const char *text)
{
    px_cidr_t c;
    int rc = px_cidr_parse(&c, text);
    if (rc != 0)
        return rc;
    memset(n, 0, sizeof(*n));
    if (c.family == AF_INET) {
        memcpy(n->addr, px__v4mapped, sizeof(px__v4mapped));
        memcpy(n->addr + 12, c.addr, 4);
        n->prefix = 96 + c.prefix;
    } else {
        memcpy(n->addr, c.addr, 16);
        n->prefix = c.prefix;
    }
    /* host bits cleared: two ways of writing one network compare equal */
    for (int i = 0; i < 16; i++) {
        int keep = n->prefix - i * 8;
        if (keep <= 0)
            n->addr[i] = 0;
        else if (keep < 8)
            n->addr[i] &= (uint8_t)(0xff << (8 - keep));
    }
    return 0;
}

int px_srcnet_addr(const struct sockaddr *sa, uint8_t out[16])
{
    if (sa->sa_family == AF_INET) {
        memcpy(out, px__v4mapped, sizeof(px__v4mapped));
        memcpy(out + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(out, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return 0;
    }
    return PX_ECONFIG;
}

int px_srcnet_contains(const px_srcnet_t *n, const uint8_t a[16])
{
    return px__prefix_eq(n->addr, a, n->prefix);
}

int px_srcnet_overlap(const px_srcnet_t *a, const px_srcnet_t *b)
{
    return px__prefix_eq(a->addr, b->addr, a->prefix < b->prefix ? a->prefix : b->prefix);
}
