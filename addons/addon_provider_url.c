/* One URL a model provider would fetch, checked the conservative way: whatever two URL parsers
 * could read differently (userinfo, backslashes, white space, a missing "//", a second colon)
 * is refused rather than interpreted, so that the host airlock checks is the host the
 * provider's fetcher connects to. */
#include "addons/addon_provider_int.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_policy.h"
#include "base/px_host.h"
#include "base/px_pct.h"

static const char *const pv_reasons[] = {
    [PV_URL_OK] = "allowed",
    [PV_URL_NOT_STRING] = "not a string",
    [PV_URL_BYTES] = "holds white space, a control character or a backslash",
    [PV_URL_SCHEME] = "not https://",
    [PV_URL_USERINFO] = "has user info (user@host)",
    [PV_URL_PORT] = "names a port other than 443",
    [PV_URL_HOST] = "its host is not a plain DNS name or IP address literal",
    [PV_URL_CLOSED] = "its host is not open to unrestricted GET in the network allowlist",
    [PV_URL_NO_POST] = "the network allowlist does not allow POST to it (remote MCP server)",
};

const char *addon__provider_url_reason(int r)
{
    return r >= 0 && r < (int)(sizeof(pv_reasons) / sizeof(pv_reasons[0])) ? pv_reasons[r]
                                                                           : "refused";
}

int addon__provider_host_ok(const char *h, size_t len)
{
    if (len == 0)
        return 0;
    int v6 = memchr(h, ':', len) != NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)h[i];
        int ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
                 c == '.' || c == ':';
        if (!v6)
            ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                 c == '.' || c == '-' || c == '_';
        if (!ok)
            return 0;
    }
    return 1;
}

/* The port text after ':' (may be empty): 1 when it is the https default. */
static int pv_port_443(const char *s, size_t len)
{
    if (len == 0)
        return 1; /* "host:" is the default port to WHATWG parsers */
    unsigned long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > 65535)
            return 0;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    return v == 443;
}

int addon__provider_url_check(const addon_policy_t *p, const char *u, size_t len, unsigned how,
                              char *host, size_t hostcap)
{
    host[0] = '\0';
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)u[i];
        /* WHATWG parsers drop tabs and newlines anywhere and read '\' as '/' */
        if (c <= 0x20 || c == 0x7f || c == '\\')
            return PV_URL_BYTES;
    }
    if ((how & PV_URL_DATA) && len >= 5 && strncasecmp(u, "data:", 5) == 0)
        return PV_URL_OK; /* inline content: nothing is fetched */
    static const char https[] = "https://";
    size_t sl = sizeof(https) - 1;
    if (len < sl || strncasecmp(u, https, sl) != 0)
        return PV_URL_SCHEME;
    size_t a = sl, e = a;
    while (e < len && u[e] != '/' && u[e] != '?' && u[e] != '#')
        e++;
    const char *auth = u + a;
    size_t alen = e - a;
    if (memchr(auth, '@', alen) != NULL)
        return PV_URL_USERINFO;
    const char *h = auth, *port = NULL;
    size_t hlen = alen, plen = 0;
    if (alen > 0 && auth[0] == '[') {
        const char *close = memchr(auth, ']', alen);
        if (close == NULL)
            return PV_URL_HOST;
        h = auth + 1;
        hlen = (size_t)(close - h);
        size_t rest = alen - (size_t)(close + 1 - auth);
        if (rest > 0 && close[1] != ':')
            return PV_URL_HOST;
        if (rest > 0) {
            port = close + 2;
            plen = rest - 1;
        }
        if (memchr(h, ':', hlen) == NULL)
            return PV_URL_HOST;
    } else {
        const char *colon = memchr(auth, ':', alen);
        if (colon != NULL) {
            hlen = (size_t)(colon - auth);
            port = colon + 1;
            plen = alen - hlen - 1;
            if (memchr(port, ':', plen) != NULL)
                return PV_URL_HOST;
        }
    }
    if (port != NULL && !pv_port_443(port, plen))
        return PV_URL_PORT;
    char raw[PV_HOST_MAX + 1];
    if (hlen > PV_HOST_MAX)
        return PV_URL_HOST;
    /* WHATWG parsers decode the host once: so does airlock, then checks what it got */
    size_t dlen = px_pct_unquote(h, hlen, raw);
    int v6 = auth[0] == '[';
    if (!addon__provider_host_ok(raw, dlen) || (memchr(raw, ':', dlen) != NULL) != v6)
        return PV_URL_HOST;
    int hl = px_host_norm(host, hostcap, raw, dlen);
    /* an empty label ("a..b", a second trailing dot) is no DNS name, whatever a resolver does */
    if (hl <= 0 || (!v6 && (host[0] == '.' || host[hl - 1] == '.' || strstr(host, "..") != NULL)))
        return PV_URL_HOST;
    if (!addon_policy_host_get_open(p, (addon_str_t){host, strlen(host)}))
        return PV_URL_CLOSED;
    if (how & PV_URL_POST) {
        /* a remote MCP server is spoken to with POST: the URL's own entry must allow it */
        addon_policy_query_t q = {
            .method = {"POST", 4},
            .host = {host, strlen(host)},
            .path = e < len && u[e] == '/' ? (addon_str_t){u + e, len - e} : (addon_str_t){"/", 1},
            .port = 443,
            .tls = 1,
        };
        if (e < len && u[e] == '/') {
            const char *hash = memchr(u + e, '#', len - e);
            if (hash != NULL)
                q.path.len = (size_t)(hash - (u + e));
        }
        addon_policy_decision_t d;
        addon_policy_decide(p, &q, &d);
        if (!d.allowed)
            return PV_URL_NO_POST;
    }
    return PV_URL_OK;
}
