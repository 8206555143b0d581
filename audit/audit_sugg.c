#include "audit/audit_sugg.h"

#include <stdlib.h>
#include <string.h>

#include "addons/addon_out.h"
#include "audit/audit_tab.h"
#include "base/px_err.h"
#include "base/px_pct.h"

typedef struct audit__sh {
    unsigned long n;
    unsigned long n_connect;
    int has_path; /* at least one request with a path (not CONNECT) */
    int same;     /* every path (query aside) equals prefix */
    int query;    /* some path had a query */
    int boundary; /* every path ends or has '/' right after the prefix */
    size_t prefix_len;
    char prefix[AUDIT_SUGG_PREFIX_MAX];
    char methods[AUDIT_SUGG_METHODS_MAX][AUDIT_METHOD_MAX + 1];
    size_t nmethods;
    int any_method; /* more methods than listed */
    unsigned short ports[AUDIT_SUGG_PORTS_MAX];
    size_t nports;
    unsigned long ports_over; /* requests on ports beyond the list */
    char example[AUDIT_SUGG_EXAMPLE_MAX + 1];
} audit__sh_t;

struct audit_sugg {
    audit_tab_t *hosts;
    unsigned long requests;
    unsigned long skipped;
    size_t *order; /* name order, built on demand */
    size_t order_n;
};

audit_sugg_t *audit_sugg_new(void)
{
    audit_sugg_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->hosts = audit_tab_new(AUDIT_SUGG_HOSTS_MAX, sizeof(audit__sh_t));
    if (s->hosts == NULL) {
        free(s);
        return NULL;
    }
    return s;
}

void audit_sugg_free(audit_sugg_t *s)
{
    if (s == NULL)
        return;
    audit_tab_free(s->hosts);
    free(s->order);
    free(s);
}

int audit_sugg_add(audit_sugg_t *s, const audit_req_t *r, const char *url, size_t url_len)
{
    for (size_t i = 0; i < r->host_len; i++) {
        char c = r->host[i];
        if (c == '*' || c == '?' || c == '[' || (unsigned char)c <= 0x20 ||
            (unsigned char)c >= 0x7f || c == '"' || c == '\\') {
            s->skipped++;
            return PX_EPARSE; /* a plain pattern cannot name it */
        }
    }
    int created = 0;
    audit__sh_t *h = audit_tab_get(s->hosts, r->host, r->host_len, 1, &created);
    if (h == NULL) {
        s->skipped++;
        return PX_ETOOBIG;
    }
    free(s->order);
    s->order = NULL;
    s->requests++;
    if (created) {
        size_t n = url_len < AUDIT_SUGG_EXAMPLE_MAX ? url_len : AUDIT_SUGG_EXAMPLE_MAX;
        memcpy(h->example, url, n);
        h->example[n] = '\0';
        h->same = 1;
    }
    h->n++;
    unsigned short def = r->connect ? 443 : (r->tls ? 443 : 80);
    if (r->port != def) {
        size_t k = 0;
        while (k < h->nports && h->ports[k] != r->port)
            k++;
        if (k == h->nports) {
            if (h->nports < AUDIT_SUGG_PORTS_MAX)
                h->ports[h->nports++] = r->port;
            else
                h->ports_over++;
        }
    }
    if (r->connect) {
        h->n_connect++;
        return 0;
    }
    /* the query starts at the first '?' as sent; a decoded %3F belongs to the path */
    char path[AUDIT_PATH_MAX];
    const char *q = memchr(r->path, '?', r->path_len);
    size_t plen = px_pct_unquote(r->path, q != NULL ? (size_t)(q - r->path) : r->path_len, path);
    h->query |= q != NULL;
    size_t keep = plen < AUDIT_SUGG_PREFIX_MAX ? plen : AUDIT_SUGG_PREFIX_MAX;
    if (!h->has_path) {
        h->has_path = 1;
        memcpy(h->prefix, path, keep);
        h->prefix_len = keep;
        h->same = keep == plen;
        h->boundary = keep == plen;
    } else {
        size_t k = 0;
        while (k < h->prefix_len && k < keep && h->prefix[k] == path[k])
            k++;
        if (k != h->prefix_len || plen != h->prefix_len)
            h->same = 0;
        int next_ok = k == plen || path[k] == '/';
        if (k < h->prefix_len) /* the earlier paths all go on with prefix[k] */
            h->boundary = h->prefix[k] == '/' && next_ok;
        else
            h->boundary = h->boundary && next_ok;
        h->prefix_len = k;
    }
    if (!h->any_method) {
        size_t k = 0;
        while (k < h->nmethods && strcmp(h->methods[k], r->method) != 0)
            k++;
        if (k == h->nmethods) {
            if (h->nmethods < AUDIT_SUGG_METHODS_MAX)
                memcpy(h->methods[h->nmethods++], r->method, strlen(r->method) + 1);
            else
                h->any_method = 1;
        }
    }
    return 0;
}

size_t audit_sugg_hosts(const audit_sugg_t *s)
{
    return audit_tab_count(s->hosts);
}

unsigned long audit_sugg_requests(const audit_sugg_t *s)
{
    return s->requests;
}

unsigned long audit_sugg_skipped(const audit_sugg_t *s)
{
    return s->skipped;
}

static const audit_tab_t *audit__cmp_tab;

static int audit__cmp(const void *a, const void *b)
{
    const char *ka, *kb;
    audit_tab_at(audit__cmp_tab, *(const size_t *)a, &ka, NULL);
    audit_tab_at(audit__cmp_tab, *(const size_t *)b, &kb, NULL);
    return strcmp(ka, kb);
}

static int audit__order(const audit_sugg_t *cs)
{
    audit_sugg_t *s = (audit_sugg_t *)cs; /* the order is a cache */
    size_t n = audit_tab_count(s->hosts);
    if (s->order != NULL && s->order_n == n)
        return 0;
    free(s->order);
    s->order = malloc((n ? n : 1) * sizeof(*s->order));
    if (s->order == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < n; i++)
        s->order[i] = i;
    audit__cmp_tab = s->hosts;
    qsort(s->order, n, sizeof(*s->order), audit__cmp);
    s->order_n = n;
    return 0;
}

const char *audit_sugg_host(const audit_sugg_t *s, size_t i)
{
    if (audit__order(s) != 0 || i >= s->order_n)
        return NULL;
    const char *k;
    audit_tab_at(s->hosts, s->order[i], &k, NULL);
    return k;
}

size_t audit_sugg_find(const audit_sugg_t *s, const char *host, size_t hlen)
{
    if (audit__order(s) != 0)
        return (size_t)-1;
    for (size_t i = 0; i < s->order_n; i++) {
        const char *k;
        size_t kl;
        audit_tab_at(s->hosts, s->order[i], &k, &kl);
        if (kl == hlen && memcmp(k, host, hlen) == 0)
            return i;
    }
    return (size_t)-1;
}

/* A YAML double-quoted scalar of printable ASCII. */
static void audit__yq(addon_out_t *o, const char *s, size_t n)
{
    addon_out_put(o, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            addon_out_put(o, "\\", 1);
        addon_out_put(o, s + i, 1);
    }
    addon_out_put(o, "\"", 1);
}

/* The path pattern: exact, prefix + '*', or none (any path, returned 0). Glob characters of
 * the path are written as one-character classes so they match only themselves. */
static int audit__pattern(const audit__sh_t *h, char *out, size_t cap, size_t *outlen)
{
    size_t n = h->prefix_len;
    int exact = h->same && !h->query;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h->prefix[i];
        if (c < 0x20 || c >= 0x7f) {
            n = i; /* a pattern of printable ASCII only: cut, widen */
            exact = 0;
        }
    }
    if (!exact && !h->same && !(h->boundary && n == h->prefix_len)) {
        while (n > 0 && h->prefix[n - 1] != '/')
            n--; /* whole segments only */
    }
    if (!exact && n <= 1)
        return 0;
    size_t o = 0;
    for (size_t i = 0; i < n && o + 4 < cap; i++) {
        char c = h->prefix[i];
        if (c == '*' || c == '?' || c == '[') {
            out[o++] = '[';
            out[o++] = c;
            out[o++] = ']';
        } else {
            out[o++] = c;
        }
    }
    if (!exact)
        out[o++] = '*';
    *outlen = o;
    return 1;
}

size_t audit_sugg_entry(const audit_sugg_t *s, size_t i, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    if (audit__order(s) != 0 || i >= s->order_n)
        return 0;
    const char *host;
    size_t hlen;
    const audit__sh_t *h = audit_tab_at(s->hosts, s->order[i], &host, &hlen);
    addon_out_fmt(&o, "  # %lu blocked request%s, e.g. ", h->n, h->n == 1 ? "" : "s");
    addon_out_put(&o, h->example, strlen(h->example));
    addon_out_put(&o, "\n  - host: ", 11);
    audit__yq(&o, host, hlen);
    addon_out_put(&o, "\n", 1);
    char pat[AUDIT_SUGG_PREFIX_MAX * 3 + 2];
    size_t plen = 0;
    if (h->has_path && audit__pattern(h, pat, sizeof(pat), &plen)) {
        addon_out_put(&o, "    path: ", 10);
        audit__yq(&o, pat, plen);
        addon_out_put(&o, "\n", 1);
    }
    /* methods only when every request had a path: CONNECT reaches any method */
    if (h->has_path && !h->any_method && h->nmethods > 0) {
        addon_out_put(&o, "    methods: [", 14);
        for (size_t k = 0; k < h->nmethods; k++) {
            if (k > 0)
                addon_out_put(&o, ", ", 2);
            audit__yq(&o, h->methods[k], strlen(h->methods[k]));
        }
        addon_out_put(&o, "]\n", 2);
    }
    if (h->nports > 0) {
        addon_out_put(&o, "    ports: [", 12);
        for (size_t k = 0; k < h->nports; k++)
            addon_out_fmt(&o, "%s%u", k > 0 ? ", " : "", h->ports[k]);
        addon_out_put(&o, "]\n", 2);
    }
    if (h->ports_over > 0)
        addon_out_fmt(&o, "    # %lu request(s) on further ports are not covered\n", h->ports_over);
    return o.pos;
}
