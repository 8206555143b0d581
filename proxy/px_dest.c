#include "proxy/px_dest.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proxy/px_config.h"

/* An address range of the IANA special-purpose registries that is not globally reachable. */
typedef struct px__range {
    uint8_t addr[16];
    int prefix;
    const char *kind;
} px__range_t;

/* IPv4 (RFC 6890 and the registry; 192.0.0.0/24 refused whole). */
static const px__range_t px__v4[] = {
    {{0}, 8, "unspecified (0.0.0.0/8)"},
    {{10}, 8, "private (RFC 1918)"},
    {{100, 64}, 10, "shared address space (100.64.0.0/10)"},
    {{127}, 8, "loopback"},
    {{169, 254}, 16, "link-local"},
    {{172, 16}, 12, "private (RFC 1918)"},
    {{192, 0, 0}, 24, "IETF protocol assignments (192.0.0.0/24)"},
    {{192, 0, 2}, 24, "documentation (TEST-NET-1)"},
    {{192, 88, 99}, 24, "6to4 relay anycast"},
    {{192, 168}, 16, "private (RFC 1918)"},
    {{198, 18}, 15, "benchmarking (198.18.0.0/15)"},
    {{198, 51, 100}, 24, "documentation (TEST-NET-2)"},
    {{203, 0, 113}, 24, "documentation (TEST-NET-3)"},
    {{224}, 4, "multicast"},
    {{255, 255, 255, 255}, 32, "broadcast"},
    {{240}, 4, "reserved (240.0.0.0/4)"},
};

/* IPv6 ranges refused outright (the embedding forms are handled apart). */
static const px__range_t px__v6[] = {
    {{0}, 128, "unspecified"},
    {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 128, "loopback"},
    {{0}, 96, "IPv4-compatible (deprecated)"},
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "local-use NAT64 (64:ff9b:1::/48)"},
    {{0x01, 0x00}, 64, "discard-only (100::/64)"},
    {{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, "benchmarking (2001:2::/48)"},
    {{0x20, 0x01, 0x00, 0x10}, 28, "ORCHID (2001:10::/28)"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "documentation (2001:db8::/32)"},
    {{0x3f, 0xff}, 20, "documentation (3fff::/20)"},
    {{0x5f, 0x00}, 16, "SRv6 SIDs (5f00::/16)"},
    {{0xfc}, 7, "unique local (fc00::/7)"},
    {{0xfe, 0x80}, 10, "link-local"},
    {{0xfe, 0xc0}, 10, "site-local (fec0::/10)"},
    {{0xff}, 8, "multicast"},
};

static int px__in(const uint8_t *a, const px__range_t *r)
{
    int bits = r->prefix;
    for (int i = 0; bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if ((a[i] & mask) != (r->addr[i] & mask))
            return 0;
    }
    return 1;
}

static const char *px__v4_special(const uint8_t *a)
{
    for (size_t i = 0; i < sizeof(px__v4) / sizeof(px__v4[0]); i++)
        if (px__in(a, &px__v4[i]))
            return px__v4[i].kind;
    return NULL;
}

/* The IPv4 address an IPv6 form carries: 1 with out filled (a second one for Teredo's
 * server in out2, which may stay unset), or 0. form gets the form's name. */
static int px__embedded(const uint8_t *b, uint8_t *out, uint8_t *out2, int *two, const char **form)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const uint8_t nat64[12] = {0x00, 0x64, 0xff, 0x9b};
    *two = 0;
    if (memcmp(b, mapped, 12) == 0) {
        *form = "IPv4-mapped";
        memcpy(out, b + 12, 4);
        return 1;
    }
    if (memcmp(b, nat64, 12) == 0) {
        *form = "NAT64";
        memcpy(out, b + 12, 4);
        return 1;
    }
    if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4: 2002:V4ADDR::/48 */
        *form = "6to4";
        memcpy(out, b + 2, 4);
        return 1;
    }
    if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
        /* Teredo 2001::/32: server at bytes 4-7, the client obfuscated (inverted) at 12-15 */
        *form = "Teredo";
        for (int i = 0; i < 4; i++)
            out[i] = (uint8_t)~b[12 + i];
        memcpy(out2, b + 4, 4);
        *two = 1;
        return 1;
    }
    return 0;
}

const char *px_dest_special(const struct sockaddr *sa, char *buf, size_t cap)
{
    if (sa->sa_family == AF_INET)
        return px__v4_special((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
    if (sa->sa_family != AF_INET6)
        return "unsupported address family";
    const uint8_t *b = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    uint8_t v4[4], v4b[4];
    int two;
    const char *form;
    if (px__embedded(b, v4, v4b, &two, &form)) {
        const char *kind = px__v4_special(v4);
        const uint8_t *which = v4;
        if (kind == NULL && two) {
            kind = px__v4_special(v4b);
            which = v4b;
        }
        if (kind == NULL)
            return NULL;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, which, text, sizeof(text));
        snprintf(buf, cap, "%s of %s: %s", form, text, kind);
        return buf;
    }
    for (size_t i = 0; i < sizeof(px__v6) / sizeof(px__v6[0]); i++)
        if (px__in(b, &px__v6[i]))
            return px__v6[i].kind;
    return NULL;
}

/* The address bytes of sa (4, or 16; an IPv4-mapped IPv6 address gives its 4) and its port,
 * or 0 for another family. */
static size_t px__addr_bytes(const struct sockaddr *sa, const uint8_t **bytes, uint16_t *port)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (sa->sa_family == AF_INET) {
        *bytes = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
        *port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
        return 4;
    }
    if (sa->sa_family == AF_INET6) {
        *bytes = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        *port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
        if (memcmp(*bytes, mapped, 12) == 0) {
            *bytes += 12;
            return 4;
        }
        return 16;
    }
    return 0;
}

/* 1 when the address (n bytes) is one of this machine's own or the proxy IP. */
static int px__is_own(const px_dest_ctx_t *m, const uint8_t *a, size_t n)
{
    if (n == 4 && memcmp(a, &m->proxy_ip, 4) == 0)
        return 1;
    for (size_t i = 0; i < m->n_own; i++)
        if (m->own[i].family == (n == 4 ? AF_INET : AF_INET6) && memcmp(m->own[i].addr, a, n) == 0)
            return 1;
    return 0;
}

/* 1 when sa is one of airlock's own listening sockets (at that address, or at any local
 * address for a wildcard listener): connecting there would make airlock its own upstream. */
static int px__is_listener(const px_dest_ctx_t *m, const struct sockaddr *sa)
{
    const px_config_t *cfg = m->cfg;
    const px_listen_t *ls[] = {&cfg->listen_dns, &cfg->listen_http, &cfg->listen_https,
                               &cfg->listen_proxy, &cfg->listen_transparent, &cfg->listen_socks};
    const uint8_t *a;
    uint16_t port;
    size_t n = px__addr_bytes(sa, &a, &port);
    if (n == 0)
        return 0;
    int local = px__is_own(m, a, n) || (n == 4 && a[0] == 127) ||
                (n == 16 && memcmp(a, in6addr_loopback.s6_addr, 16) == 0);
    for (size_t i = 0; i < sizeof(ls) / sizeof(ls[0]); i++) {
        if (!ls[i]->enabled)
            continue;
        const uint8_t *la;
        uint16_t lport;
        size_t ln = px__addr_bytes((const struct sockaddr *)&ls[i]->addr, &la, &lport);
        if (ln == 0 || lport != port)
            continue;
        static const uint8_t zero[16] = {0};
        if (memcmp(la, zero, ln) == 0) {
            if (local && (ln == 16 || n == 4)) /* IPv6 "::" takes IPv4 too (dual stack) */
                return 1;
        } else if (ln == n && memcmp(la, a, n) == 0) {
            return 1;
        }
    }
    return 0;
}

int px_dest_forbidden(const px_dest_ctx_t *m, const struct sockaddr *sa, char *why, size_t cap)
{
    char detail[96];
    int listener = px__is_listener(m, sa);
    int reopened = 0; /* --allow-upstream-cidr re-opens a range, never airlock itself */
    for (size_t i = 0; !reopened && i < m->cfg->n_allow_cidrs; i++)
        reopened = px_cidr_contains(&m->cfg->allow_cidrs[i], sa);
    if (reopened && !listener)
        return 0;
    const char *kind = NULL;
    if (!reopened)
        kind = px_dest_special(sa, detail, sizeof(detail));
    if (kind == NULL && !reopened) {
        const uint8_t *a;
        uint16_t port;
        size_t n = px__addr_bytes(sa, &a, &port);
        if (n != 0 && px__is_own(m, a, n))
            kind = "the proxy's own address";
    }
    if (kind == NULL && listener)
        kind = "airlock's own listener";
    if (kind == NULL)
        return 0;
    char text[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, text, sizeof(text));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, text, sizeof(text));
    snprintf(why, cap, "destination %s is not allowed (%s)", text, kind);
    return 1;
}

