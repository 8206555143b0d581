#include "proxy/px_precheck.h"

#include <llhttp.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/px_err.h"

#define PX__HOST_MAX 255

static int px__host_char_ok(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~' || ch == '%' || ch == '!' ||
           ch == '$' || ch == '&' || ch == '\'' || ch == '(' || ch == ')' || ch == '*' ||
           ch == '+' || ch == ',' || ch == ';' || ch == '=';
}

int px_authority_split(const char *a, size_t len, const char **host, size_t *hlen, uint16_t *port,
                       int *bracketed)
{
    *port = 0;
    *bracketed = 0;
    if (len == 0)
        return PX_EPARSE;
    size_t i;
    if (a[0] == '[') {
        const char *close = memchr(a, ']', len);
        if (close == NULL)
            return PX_EPARSE;
        *host = a + 1;
        *hlen = (size_t)(close - a - 1);
        *bracketed = 1;
        for (size_t k = 0; k < *hlen; k++) {
            char ch = (*host)[k];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') ||
                  (ch >= 'A' && ch <= 'F') || ch == ':' || ch == '.'))
                return PX_EPARSE;
        }
        if (*hlen == 0)
            return PX_EPARSE;
        i = (size_t)(close - a) + 1;
    } else {
        i = 0;
        while (i < len && a[i] != ':') {
            if (!px__host_char_ok((unsigned char)a[i]))
                return PX_EPARSE;
            i++;
        }
        *host = a;
        *hlen = i;
        if (*hlen == 0)
            return PX_EPARSE;
    }
    if (*hlen > PX__HOST_MAX)
        return PX_EPARSE;
    if (i == len)
        return 0;
    if (a[i] != ':')
        return PX_EPARSE;
    i++;
    if (i == len)
        return 0; /* "host:" means the default port (RFC 3986 section 3.2.3) */
    uint32_t p = 0;
    for (; i < len; i++) {
        if (a[i] < '0' || a[i] > '9')
            return PX_EPARSE;
        p = p * 10 + (uint32_t)(a[i] - '0');
        if (p > 65535)
            return PX_EPARSE;
    }
    if (p == 0)
        return PX_EPARSE;
    *port = (uint16_t)p;
    return 0;
}

/* A field value that must equal other, normalized, or the result of the comparison. */
static int px__same_host(const char *a, size_t alen, const char *norm_b)
{
    char na[PX__HOST_MAX + 1];
    return px_host_norm(na, sizeof(na), a, alen) >= 0 && strcmp(na, norm_b) == 0;
}

static void px__url(px_pre_t *o, int tls, const char *path, size_t plen)
{
    int n = snprintf(o->url, sizeof(o->url), "%s://%s%.*s%s", tls ? "https" : "http",
                     o->bracketed ? "[" : "", (int)o->host_len, o->host, o->bracketed ? "]" : "");
    size_t off = n > 0 ? (size_t)n : 0;
    if (off < sizeof(o->url) && o->port != (tls ? 443 : 80))
        off += (size_t)snprintf(o->url + off, sizeof(o->url) - off, ":%u", o->port);
    if (off < sizeof(o->url)) {
        size_t room = sizeof(o->url) - off - 1;
        size_t take = plen < room ? plen : room;
        memcpy(o->url + off, path, take);
        o->url[off + take] = '\0';
        if (take < plen)
            memcpy(o->url + sizeof(o->url) - 4, "...", 4);
    }
}

static void px__bad(px_pre_t *o, int status, const char *reason)
{
    o->verdict = PX_PRE_BAD;
    o->status = status;
    o->reason = reason;
}

static void px__mismatch(px_pre_t *o, const char *other, size_t olen, const char *key)
{
    o->verdict = PX_PRE_MISMATCH;
    o->other = other;
    o->other_len = olen;
    o->other_key = key;
}

/* The target, for the log line of a CONNECT: at most 512 bytes. */
static void px__connect_url(px_pre_t *o, const char *t, size_t tlen)
{
    snprintf(o->url, sizeof(o->url), "%.*s", (int)(tlen < 512 ? tlen : 512), t);
}

/* The framing and Host fields: duplicates and codings that smuggle. 0 or a verdict given. */
static int px__framing(const px_msg_t *m, px_pre_t *o)
{
    if (px_msg_count(m, "host") > 1) {
        px__bad(o, 400, "duplicate Host header");
        return -1;
    }
    if (px_msg_count(m, "content-length") > 1) {
        px__bad(o, 400, "duplicate Content-Length header");
        return -1;
    }
    /* exactly one coding, chunked: an upstream that honours another field or coding first
     * would read the chunk framing as a further request */
    int nte = px_msg_count(m, "transfer-encoding");
    if (nte > 1) {
        px__bad(o, 400, "more than one Transfer-Encoding header");
        return -1;
    }
    if (nte == 1 &&
        !px_msg_span_ieq(m, m->values[px_msg_find(m, "transfer-encoding")], "chunked")) {
        px__bad(o, 400, "Transfer-Encoding other than chunked");
        return -1;
    }
    return 0;
}

/* The absolute form "http[s]://authority/path": its host must be the Host's, port included.
 * Returns 0 with *path set, or -1 with a verdict given. */
static int px__absolute(const char *t, size_t tlen, px_pre_t *o, const char **path, size_t *plen)
{
    size_t slen = 0;
    if (tlen > 7 && strncasecmp(t, "http://", 7) == 0)
        slen = 7;
    else if (tlen > 8 && strncasecmp(t, "https://", 8) == 0)
        slen = 8;
    if (slen == 0) {
        px__bad(o, 400, "invalid request target");
        return -1;
    }
    const char *auth = t + slen;
    size_t alen = 0;
    while (slen + alen < tlen && auth[alen] != '/' && auth[alen] != '?' && auth[alen] != '#')
        alen++;
    if (memchr(auth, '@', alen) != NULL) {
        px__bad(o, 400, "userinfo in request target");
        return -1;
    }
    const char *uhost;
    size_t uhlen;
    uint16_t uport;
    int ubr;
    if (px_authority_split(auth, alen, &uhost, &uhlen, &uport, &ubr) != 0) {
        px__bad(o, 400, "invalid host in request target");
        return -1;
    }
    *path = auth + alen;
    *plen = tlen - slen - alen;
    char un[PX__HOST_MAX + 1];
    uint16_t ueff = uport ? uport : (slen == 8 ? 443 : 80);
    if (px_host_norm(un, sizeof(un), uhost, uhlen) < 0 || strcmp(un, o->norm_host) != 0 ||
        ueff != o->port) {
        px__mismatch(o, uhost, uhlen, "url");
        return -1;
    }
    return 0;
}

void px_precheck(const px_msg_t *m, const px_pre_ctx_t *ctx, px_pre_t *o)
{
    memset(o, 0, offsetof(px_pre_t, norm_host));
    o->norm_host[0] = '\0';
    o->url[0] = '\0';
    const char *t = m->buf + m->target.off;
    size_t tlen = m->target.len;
    if (px__framing(m, o) != 0)
        return;

    /* CONNECT: a tunnel on the explicit-proxy port, refused everywhere else */
    if (m->method == HTTP_CONNECT) {
        px__connect_url(o, t, tlen);
        if (ctx->kind != PX_LISTEN_PROXY || ctx->tunnel[0] != '\0') {
            o->verdict = PX_PRE_NO_TUNNEL;
            return;
        }
        if (px_authority_split(t, tlen, &o->host, &o->host_len, &o->port, &o->bracketed) != 0 ||
            o->port == 0) {
            px__bad(o, 400, "CONNECT needs host:port");
            return;
        }
        px_host_norm(o->norm_host, sizeof(o->norm_host), o->host, o->host_len);
        o->verdict = PX_PRE_TUNNEL;
        return;
    }

    int hi = px_msg_find(m, "host");
    if (hi < 0) {
        px__bad(o, 400, "missing Host header");
        return;
    }
    uint16_t hport;
    if (px_authority_split(m->buf + m->values[hi].off, m->values[hi].len, &o->host, &o->host_len,
                           &hport, &o->bracketed) != 0) {
        px__bad(o, 400, "invalid Host header");
        return;
    }
    px_host_norm(o->norm_host, sizeof(o->norm_host), o->host, o->host_len); /* fits: <= 255 */
    o->port = hport ? hport : (ctx->tls ? 443 : 80);
    if (ctx->tunnel[0] != '\0') {
        /* inside a CONNECT tunnel the Host must name the CONNECT host and port */
        uint16_t asked = o->port;
        o->port = ctx->tunnel_port;
        if (strcmp(o->norm_host, ctx->tunnel) != 0 || (hport != 0 && asked != ctx->tunnel_port)) {
            px__url(o, ctx->tls, t, tlen);
            px__mismatch(o, ctx->tunnel, strlen(ctx->tunnel), "connect");
            return;
        }
    } else if (ctx->orig_port != 0) {
        o->port = ctx->orig_port; /* transparent: where the client really connected */
    }

    /* the request target: origin form, asterisk, or absolute form. A fragment is never sent
     * by a client; a server cuts it, so the path it reads is not the one decided on. */
    if (memchr(t, '#', tlen) != NULL) {
        px__bad(o, 400, "fragment in request target");
        return;
    }
    const char *path = t;
    size_t plen = tlen;
    if (!(tlen > 0 && t[0] == '/') && !(tlen == 1 && t[0] == '*')) {
        if (px__absolute(t, tlen, o, &path, &plen) != 0) {
            if (o->verdict == PX_PRE_MISMATCH)
                px__url(o, ctx->tls, plen ? path : "/", plen ? plen : 1);
            return;
        }
    }
    if (plen == 0) {
        path = "/";
        plen = 1;
    }
    o->path = path;
    o->path_len = plen;
    px__url(o, ctx->tls, path, plen);

    /* on TLS, the Host must name what the ClientHello named (port and case aside) */
    if (ctx->tls && ctx->sni[0] != '\0' && !px__same_host(o->host, o->host_len, ctx->sni)) {
        px__mismatch(o, ctx->sni, strlen(ctx->sni), "sni");
        return;
    }
    o->verdict = PX_PRE_OK;
}
