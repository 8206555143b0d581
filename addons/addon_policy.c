#include "addons/addon_policy.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_glob.h"
#include "addons/addon_out.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define ADDON__POLICY_WHAT_MAX 64 /* "url_prefixes[123].methods[4]" */
#define ADDON__POLICY_HTTP_PORT 80
#define ADDON__POLICY_HTTPS_PORT 443

typedef struct addon__policy_entry {
    addon_str_t host; /* lowercased; a non-glob one without trailing dot or brackets */
    addon_str_t path; /* empty = any path */
    int host_glob;    /* addon_glob_is_glob(host), computed once */
    int path_glob;
    addon_str_t *methods; /* as written; none = any method */
    size_t nmethods;
    uint16_t *ports; /* allowed besides the scheme's default port */
    size_t nports;
    int passthrough;
} addon__policy_entry_t;

struct addon_policy {
    atomic_int refs;
    char *name;
    addon__policy_entry_t *domains;
    size_t ndomains;
    addon__policy_entry_t *urls;
    size_t nurls;
};

static const char *const policy_top_keys[] = {"domains", "url_prefixes", NULL};
static const char *const policy_entry_keys[] = {"host", "path", "methods", "ports", "tls", NULL};

/* ---- loading ---------------------------------------------------------------------------- */

static void policy_entry_free(addon__policy_entry_t *e)
{
    free((char *)e->host.base);
    free((char *)e->path.base);
    for (size_t i = 0; i < e->nmethods; i++)
        free((char *)e->methods[i].base);
    free(e->methods);
    free(e->ports);
}

static void policy_free(addon_policy_t *p)
{
    for (size_t i = 0; i < p->ndomains; i++)
        policy_entry_free(&p->domains[i]);
    for (size_t i = 0; i < p->nurls; i++)
        policy_entry_free(&p->urls[i]);
    free(p->domains);
    free(p->urls);
    free(p->name);
    free(p);
}

static addon_policy_t *policy_new(const char *name)
{
    addon_policy_t *p = calloc(1, sizeof(*p));
    if (p == NULL)
        return NULL;
    p->name = strdup(name != NULL ? name : "<allowlist>");
    if (p->name == NULL) {
        free(p);
        return NULL;
    }
    atomic_init(&p->refs, 1);
    return p;
}

static int policy_nomem(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return PX_ENOMEM;
}

/* A copy of s[0..len) with a NUL after it, lowercased when lower is set. */
static char *policy_dup(const char *s, size_t len, int lower)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        d[i] = lower && c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
    }
    d[len] = '\0';
    return d;
}

/* Host patterns are compared like request hosts: lowercased, and a plain (non-glob) pattern
 * loses one trailing dot and IPv6 brackets. A glob keeps them: "[" starts a class there. */
static int policy_host(const addon_yaml_node_t *n, const char *what, addon_str_t *out, int *glob,
                       char *err, size_t errlen)
{
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(n, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    size_t colons = 0;
    size_t last_colon = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c <= 0x20 || c == 0x7f)
            return addon_yaml_errorf(
                n, err, errlen, "%s: host pattern contains a space or control character", what);
        if (c == '/')
            return addon_yaml_errorf(
                n, err, errlen, "%s: host pattern contains '/' (put the path in 'path')", what);
        if (c == ':') {
            colons++;
            last_colon = i;
        }
    }
    /* "example.com:8443" or "[::1]:8443": ports belong in 'ports', not in the pattern. */
    size_t digits_from = 0;
    if (colons == 1)
        digits_from = last_colon + 1;
    else if (colons > 1 && s[0] == '[' && last_colon > 0 && s[last_colon - 1] == ']')
        digits_from = last_colon + 1;
    int port_suffix = digits_from > 0 && digits_from < len;
    for (size_t i = digits_from; port_suffix && i < len; i++)
        port_suffix = s[i] >= '0' && s[i] <= '9';
    if (port_suffix)
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: host pattern contains a port (list it under 'ports')", what);
    size_t start = 0;
    size_t end = len;
    if (!addon_glob_is_glob(s, len)) {
        if (end > start && s[end - 1] == '.')
            end--;
        if (end - start >= 2 && s[start] == '[' && s[end - 1] == ']') {
            start++;
            end--;
        }
    }
    if (end == start)
        return addon_yaml_errorf(n, err, errlen, "%s: empty host pattern", what);
    char *d = policy_dup(s + start, end - start, 1);
    if (d == NULL)
        return policy_nomem(err, errlen);
    out->base = d;
    out->len = end - start;
    *glob = addon_glob_is_glob(d, end - start);
    return 0;
}

/* tchar from RFC 9110: the characters a method token may hold. */
static int policy_is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return 1;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int policy_methods(const addon_yaml_node_t *n, const char *what, addon__policy_entry_t *e,
                          char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, what, err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count == 0)
        return 0;
    e->methods = calloc(count, sizeof(*e->methods));
    if (e->methods == NULL)
        return policy_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        const addon_yaml_node_t *m = addon_yaml_item(n, i);
        char item[ADDON__POLICY_WHAT_MAX * 2];
        snprintf(item, sizeof(item), "%s[%zu]", what, i);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(m, item, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (len == 0)
            return addon_yaml_errorf(m, err, errlen, "%s: empty method", item);
        for (size_t k = 0; k < len; k++) {
            if (!policy_is_tchar((unsigned char)s[k]))
                return addon_yaml_errorf(m, err, errlen,
                                         "%s: a method is an HTTP token (letters, digits, "
                                         "!#$%%&'*+-.^_`|~)",
                                         item);
        }
        char *d = policy_dup(s, len, 0);
        if (d == NULL)
            return policy_nomem(err, errlen);
        e->methods[i].base = d;
        e->methods[i].len = len;
        e->nmethods = i + 1;
    }
    return 0;
}

static int policy_ports(const addon_yaml_node_t *n, const char *what, addon__policy_entry_t *e,
                        char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, what, err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count == 0)
        return 0;
    e->ports = calloc(count, sizeof(*e->ports));
    if (e->ports == NULL)
        return policy_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        char item[ADDON__POLICY_WHAT_MAX * 2];
        snprintf(item, sizeof(item), "%s[%zu]", what, i);
        int64_t v;
        rc = addon_yaml_get_int(addon_yaml_item(n, i), item, 1, 65535, &v, err, errlen);
        if (rc != 0)
            return rc;
        e->ports[i] = (uint16_t)v;
        e->nports = i + 1;
    }
    return 0;
}

static int policy_url_entry(const addon_yaml_node_t *n, size_t idx, addon__policy_entry_t *e,
                            char *err, size_t errlen)
{
    char what[ADDON__POLICY_WHAT_MAX];
    snprintf(what, sizeof(what), "url_prefixes[%zu]", idx);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *graphql = addon_yaml_get(n, "graphql");
    if (graphql != NULL) {
        for (size_t i = 0; i < addon_yaml_count(n); i++) {
            if (addon_yaml_value(n, i) == graphql)
                graphql = addon_yaml_key(n, i);
        }
        return addon_yaml_errorf(graphql, err, errlen,
                                 "%s: 'graphql' (GraphQL operation filtering) is not supported "
                                 "by airlock; remove the key and restrict the entry with "
                                 "'path' and 'methods'",
                                 what);
    }
    rc = addon_yaml_check_keys(n, policy_entry_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    char sub[ADDON__POLICY_WHAT_MAX + 16];
    const addon_yaml_node_t *host = addon_yaml_get(n, "host");
    if (host == NULL)
        return addon_yaml_errorf(n, err, errlen, "%s: missing required key 'host'", what);
    snprintf(sub, sizeof(sub), "%s.host", what);
    rc = policy_host(host, sub, &e->host, &e->host_glob, err, errlen);
    if (rc != 0)
        return rc;

    const addon_yaml_node_t *path = addon_yaml_get(n, "path");
    if (path != NULL && addon_yaml_type(path) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.path", what);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(path, sub, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        char *d = policy_dup(s, len, 0);
        if (d == NULL)
            return policy_nomem(err, errlen);
        e->path.base = d;
        e->path.len = len;
        e->path_glob = addon_glob_is_glob(d, len);
    }
    const addon_yaml_node_t *methods = addon_yaml_get(n, "methods");
    if (methods != NULL && addon_yaml_type(methods) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.methods", what);
        rc = policy_methods(methods, sub, e, err, errlen);
        if (rc != 0)
            return rc;
    }
    const addon_yaml_node_t *ports = addon_yaml_get(n, "ports");
    if (ports != NULL && addon_yaml_type(ports) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.ports", what);
        rc = policy_ports(ports, sub, e, err, errlen);
        if (rc != 0)
            return rc;
    }
    const addon_yaml_node_t *tls = addon_yaml_get(n, "tls");
    if (tls != NULL && addon_yaml_type(tls) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.tls", what);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(tls, sub, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (strcmp(s, "passthrough") == 0 && len == strlen("passthrough"))
            e->passthrough = 1;
        else if (strcmp(s, "intercept") != 0 || len != strlen("intercept"))
            return addon_yaml_errorf(tls, err, errlen, "%s: must be 'passthrough' or 'intercept'",
                                     sub);
        if (e->passthrough && (e->path.len > 0 || e->nmethods > 0))
            return addon_yaml_errorf(tls, err, errlen,
                                     "%s: a passthrough entry cannot restrict 'path' or "
                                     "'methods' (airlock does not see inside the TLS stream)",
                                     sub);
    }
    return 0;
}

static int policy_domains(addon_policy_t *p, const addon_yaml_node_t *n, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "domains", err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count == 0)
        return 0;
    p->domains = calloc(count, sizeof(*p->domains));
    if (p->domains == NULL)
        return policy_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        char what[ADDON__POLICY_WHAT_MAX];
        snprintf(what, sizeof(what), "domains[%zu]", i);
        p->ndomains = i + 1;
        rc = policy_host(addon_yaml_item(n, i), what, &p->domains[i].host, &p->domains[i].host_glob,
                         err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int policy_urls(addon_policy_t *p, const addon_yaml_node_t *n, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "url_prefixes", err, errlen);
    if (rc != 0)
        return rc;
    size_t count = addon_yaml_count(n);
    if (count == 0)
        return 0;
    p->urls = calloc(count, sizeof(*p->urls));
    if (p->urls == NULL)
        return policy_nomem(err, errlen);
    for (size_t i = 0; i < count; i++) {
        p->nurls = i + 1;
        rc = policy_url_entry(addon_yaml_item(n, i), i, &p->urls[i], err, errlen);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int policy_from_root(addon_policy_t *p, const addon_yaml_node_t *root, char *err,
                            size_t errlen)
{
    if (root == NULL || addon_yaml_type(root) == ADDON_YAML_NULL)
        return 0;
    if (addon_yaml_type(root) != ADDON_YAML_MAP)
        return addon_yaml_errorf(root, err, errlen,
                                 "the allowlist must be a mapping with 'domains' and/or "
                                 "'url_prefixes', got %s",
                                 addon_yaml_type_name(addon_yaml_type(root)));
    int rc = addon_yaml_check_keys(root, policy_top_keys, NULL, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *domains = addon_yaml_get(root, "domains");
    if (domains != NULL && addon_yaml_type(domains) != ADDON_YAML_NULL) {
        rc = policy_domains(p, domains, err, errlen);
        if (rc != 0)
            return rc;
    }
    const addon_yaml_node_t *urls = addon_yaml_get(root, "url_prefixes");
    if (urls != NULL && addon_yaml_type(urls) != ADDON_YAML_NULL)
        rc = policy_urls(p, urls, err, errlen);
    return rc;
}

static int policy_from_doc(addon_yaml_doc_t *doc, addon_policy_t **out, char *err, size_t errlen)
{
    addon_policy_t *p = policy_new(addon_yaml_name(doc));
    if (p == NULL) {
        addon_yaml_free(doc);
        return policy_nomem(err, errlen);
    }
    int rc = policy_from_root(p, addon_yaml_root(doc), err, errlen);
    addon_yaml_free(doc);
    if (rc != 0) {
        policy_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

int addon_policy_load_buffer(const char *name, const char *data, size_t len, addon_policy_t **out,
                             char *err, size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    *out = NULL;
    addon_yaml_doc_t *doc;
    int rc = addon_yaml_load_buffer(name, data, len, &doc, err, errlen);
    if (rc != 0)
        return rc;
    return policy_from_doc(doc, out, err, errlen);
}

int addon_policy_load_file(const char *path, addon_policy_t **out, char *err, size_t errlen)
{
    char dummy[1];
    if (err == NULL || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    *out = NULL;
    addon_yaml_doc_t *doc;
    int rc = addon_yaml_load_file(path, &doc, err, errlen);
    if (rc != 0)
        return rc;
    return policy_from_doc(doc, out, err, errlen);
}

addon_policy_t *addon_policy_new_empty(const char *name)
{
    return policy_new(name);
}

addon_policy_t *addon_policy_ref(addon_policy_t *p)
{
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
    return p;
}

void addon_policy_unref(addon_policy_t *p)
{
    if (p == NULL)
        return;
    if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1)
        policy_free(p);
}

size_t addon_policy_count(const addon_policy_t *p, addon_policy_kind_t kind)
{
    if (p == NULL)
        return 0;
    if (kind == ADDON_POLICY_DOMAINS)
        return p->ndomains;
    if (kind == ADDON_POLICY_URL_PREFIXES)
        return p->nurls;
    return 0;
}

/* ---- deciding --------------------------------------------------------------------------- */

/* Hex digit values plus one (0: not a hex digit). */
static const signed char policy_hex[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
    ['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
    ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
    ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Percent-decodes src into dst (room for srclen bytes) once, as Python's unquote: "%XX" with
 * two hex digits becomes one byte; anything else, '+' included, is copied. Returns the length. */
static size_t policy_unquote(const char *src, size_t len, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '%' && i + 2 < len && policy_hex[(unsigned char)src[i + 1]] &&
            policy_hex[(unsigned char)src[i + 2]]) {
            dst[o++] = (char)(((policy_hex[(unsigned char)src[i + 1]] - 1) << 4) |
                              (policy_hex[(unsigned char)src[i + 2]] - 1));
            i += 2;
        } else {
            dst[o++] = src[i];
        }
    }
    return o;
}

/* 1 when the raw path (before its first raw '?') has a segment that is "." or ".." once
 * percent-decoded and once its ";parameters" are removed: servers resolve "/..;/",
 * "%2e%2e;" and "..%3b" as "..". Segments are split on decoded '/' too ("..%2f"). */
static int policy_dot_segment(const char *raw, size_t len)
{
    size_t dots = 0;    /* the segment so far (before ';') is this many dots */
    int other = 0;      /* ... or holds something else */
    int params = 0;     /* past the segment's first ';' */
    for (size_t i = 0; i <= len; i++) {
        char ch;
        if (i == len) {
            ch = '/';
        } else if (raw[i] == '?') {
            len = i; /* the query is not part of the path */
            ch = '/';
        } else if (raw[i] == '%' && i + 2 < len && policy_hex[(unsigned char)raw[i + 1]] &&
                   policy_hex[(unsigned char)raw[i + 2]]) {
            ch = (char)(((policy_hex[(unsigned char)raw[i + 1]] - 1) << 4) |
                        (policy_hex[(unsigned char)raw[i + 2]] - 1));
            i += 2;
        } else {
            ch = raw[i];
        }
        if (ch == '/') {
            if (!other && (dots == 1 || dots == 2))
                return 1;
            dots = 0;
            other = params = 0;
        } else if (params) {
            continue;
        } else if (ch == ';') {
            params = 1;
        } else if (ch == '.') {
            dots++;
        } else {
            other = 1;
        }
    }
    return 0;
}

/* s is the decoded path+query; raw the path as sent. */
static addon_policy_precheck_t policy_precheck(const char *s, size_t len, const char *raw,
                                               size_t rawlen)
{
    if (len == 0)
        return ADDON_POLICY_PRECHECK_NONE;
    if (memchr(s, '\0', len) != NULL)
        return ADDON_POLICY_PRECHECK_NUL;
    if (memchr(s, '\\', len) != NULL)
        return ADDON_POLICY_PRECHECK_BACKSLASH;
    if (policy_dot_segment(raw, rawlen))
        return ADDON_POLICY_PRECHECK_DOT_SEGMENT;
    return ADDON_POLICY_PRECHECK_NONE;
}

/* The request host as patterns are stored: one trailing dot and IPv6 brackets removed. Case is
 * folded by the matcher. */
static addon_str_t policy_norm_host(addon_str_t h)
{
    if (h.len > 0 && h.base[h.len - 1] == '.')
        h.len--;
    if (h.len >= 2 && h.base[0] == '[' && h.base[h.len - 1] == ']') {
        h.base++;
        h.len -= 2;
    }
    return h;
}

/* Host patterns are stored lowercased, so equality only folds the request's side. */
static int policy_host_ok(const addon__policy_entry_t *e, addon_str_t host)
{
    if (e->host_glob)
        return addon_glob_fnmatch(e->host.base, e->host.len, host.base, host.len, 1);
    if (e->host.len != host.len)
        return 0;
    for (size_t i = 0; i < host.len; i++) {
        char c = host.base[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + ('a' - 'A'));
        if (c != e->host.base[i])
            return 0;
    }
    return 1;
}

static int policy_path_ok(const addon__policy_entry_t *e, const char *path, size_t len)
{
    if (e->path.len == 0)
        return 1;
    if (e->path_glob)
        return addon_glob_fnmatch(e->path.base, e->path.len, path, len, 0);
    return e->path.len == len && memcmp(e->path.base, path, len) == 0;
}

static int policy_port_ok(const addon__policy_entry_t *e, uint16_t port, int tls)
{
    if (port == (tls ? ADDON__POLICY_HTTPS_PORT : ADDON__POLICY_HTTP_PORT))
        return 1;
    for (size_t i = 0; i < e->nports; i++) {
        if (e->ports[i] == port)
            return 1;
    }
    return 0;
}

static int policy_method_ok(const addon__policy_entry_t *e, addon_str_t m)
{
    if (e->nmethods == 0)
        return 1;
    for (size_t i = 0; i < e->nmethods; i++) {
        if (e->methods[i].len == m.len && strncasecmp(e->methods[i].base, m.base, m.len) == 0)
            return 1;
    }
    return 0;
}

/* Records entry e as the reason when it came closer than the current one (the verdicts are
 * ordered from closest to farthest). */
static void policy_note(addon_policy_decision_t *d, addon_policy_verdict_t v,
                        addon_policy_kind_t kind, size_t idx, const addon__policy_entry_t *e)
{
    if (v >= d->verdict)
        return;
    d->verdict = v;
    d->kind = kind;
    d->index = idx;
    d->host_pattern = e->host;
    d->path_pattern = e->path;
}

static void policy_decide_path(const addon_policy_t *p, const addon_policy_query_t *q,
                               const char *path, size_t plen, addon_policy_decision_t *d)
{
    d->precheck = policy_precheck(path, plen, q->path.base, q->path.len);
    if (d->precheck != ADDON_POLICY_PRECHECK_NONE) {
        d->verdict = ADDON_POLICY_BLOCK_PRECHECK;
        return;
    }
    if (p == NULL)
        return;
    addon_str_t host = policy_norm_host(q->host);
    for (size_t i = 0; i < p->ndomains; i++) {
        const addon__policy_entry_t *e = &p->domains[i];
        if (!policy_host_ok(e, host))
            continue;
        if (policy_port_ok(e, q->port, q->tls)) {
            policy_note(d, ADDON_POLICY_ALLOW, ADDON_POLICY_DOMAINS, i, e);
            d->allowed = 1;
            return;
        }
        policy_note(d, ADDON_POLICY_BLOCK_PORT, ADDON_POLICY_DOMAINS, i, e);
    }
    for (size_t i = 0; i < p->nurls; i++) {
        const addon__policy_entry_t *e = &p->urls[i];
        if (!policy_host_ok(e, host))
            continue;
        if (!policy_path_ok(e, path, plen)) {
            policy_note(d, ADDON_POLICY_BLOCK_PATH, ADDON_POLICY_URL_PREFIXES, i, e);
            continue;
        }
        if (!policy_port_ok(e, q->port, q->tls)) {
            policy_note(d, ADDON_POLICY_BLOCK_PORT, ADDON_POLICY_URL_PREFIXES, i, e);
            continue;
        }
        if (!policy_method_ok(e, q->method)) {
            policy_note(d, ADDON_POLICY_BLOCK_METHOD, ADDON_POLICY_URL_PREFIXES, i, e);
            continue;
        }
        policy_note(d, ADDON_POLICY_ALLOW, ADDON_POLICY_URL_PREFIXES, i, e);
        d->allowed = 1;
        d->passthrough = e->passthrough;
        return;
    }
}

/* Kept apart so that the 64 KiB decoding buffer is only on the stack for paths holding '%'. */
static void policy_decide_encoded(const addon_policy_t *p, const addon_policy_query_t *q,
                                  addon_policy_decision_t *d)
{
    char buf[ADDON_POLICY_PATH_MAX];
    size_t len = policy_unquote(q->path.base, q->path.len, buf);
    policy_decide_path(p, q, buf, len, d);
}

void addon_policy_decide(const addon_policy_t *p, const addon_policy_query_t *q,
                         addon_policy_decision_t *d)
{
    memset(d, 0, sizeof(*d));
    d->verdict = ADDON_POLICY_BLOCK_HOST;
    if (q->path.len > ADDON_POLICY_PATH_MAX) {
        d->verdict = ADDON_POLICY_BLOCK_PRECHECK;
        d->precheck = ADDON_POLICY_PRECHECK_TOO_LONG;
    } else if (q->path.len > 0 && memchr(q->path.base, '%', q->path.len) != NULL) {
        policy_decide_encoded(p, q, d);
    } else {
        policy_decide_path(p, q, q->path.base, q->path.len, d);
    }
    d->method_message = d->verdict == ADDON_POLICY_BLOCK_METHOD;
}

int addon_policy_has_host(const addon_policy_t *p, addon_str_t host, uint16_t port, int tls,
                          int *passthrough)
{
    if (passthrough != NULL)
        *passthrough = 0;
    if (p == NULL)
        return 0;
    host = policy_norm_host(host);
    for (size_t i = 0; i < p->ndomains; i++) {
        if (policy_host_ok(&p->domains[i], host) && policy_port_ok(&p->domains[i], port, tls))
            return 1;
    }
    for (size_t i = 0; i < p->nurls; i++) {
        const addon__policy_entry_t *e = &p->urls[i];
        if (policy_host_ok(e, host) && policy_port_ok(e, port, tls)) {
            if (passthrough != NULL)
                *passthrough = e->passthrough;
            return 1;
        }
    }
    return 0;
}

/* ---- describing ------------------------------------------------------------------------- */

/* An snprintf-style writer: counts everything, stores what fits, keeps buf NUL-terminated. */

static const char *policy_kind_name(addon_policy_kind_t kind)
{
    return kind == ADDON_POLICY_DOMAINS ? "domains" : "url_prefixes";
}

static const addon__policy_entry_t *policy_entry(const addon_policy_t *p, addon_policy_kind_t k,
                                                 size_t i)
{
    if (p == NULL)
        return NULL;
    if (k == ADDON_POLICY_DOMAINS && i < p->ndomains)
        return &p->domains[i];
    if (k == ADDON_POLICY_URL_PREFIXES && i < p->nurls)
        return &p->urls[i];
    return NULL;
}

static void out_entry(addon_out_t *o, addon_policy_kind_t kind,
                      const addon__policy_entry_t *e)
{
    if (kind == ADDON_POLICY_DOMAINS) {
        addon_out_esc(o, e->host);
        return;
    }
    addon_out_fmt(o, "host ");
    addon_out_esc(o, e->host);
    addon_out_fmt(o, ", path ");
    if (e->path.len == 0)
        addon_out_fmt(o, "any");
    else
        addon_out_esc(o, e->path);
    addon_out_fmt(o, ", methods ");
    if (e->nmethods == 0)
        addon_out_fmt(o, "any");
    for (size_t i = 0; i < e->nmethods; i++) {
        if (i > 0)
            addon_out_fmt(o, ",");
        addon_out_esc(o, e->methods[i]);
    }
    for (size_t i = 0; i < e->nports; i++)
        addon_out_fmt(o, "%s%u", i == 0 ? ", also ports " : ",", e->ports[i]);
    if (e->passthrough)
        addon_out_fmt(o, ", tls passthrough");
}

size_t addon_policy_describe(const addon_policy_t *p, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    size_t nd = p != NULL ? p->ndomains : 0;
    size_t nu = p != NULL ? p->nurls : 0;
    addon_out_put(&o, p != NULL ? p->name : "<none>", strlen(p != NULL ? p->name : "<none>"));
    addon_out_fmt(&o, ": %zu domains, %zu url_prefixes%s\n", nd, nu,
            nd + nu == 0 ? " (everything is blocked)" : "");
    for (size_t i = 0; i < nd; i++) {
        addon_out_fmt(&o, "domains[%zu] ", i);
        out_entry(&o, ADDON_POLICY_DOMAINS, &p->domains[i]);
        addon_out_fmt(&o, "\n");
    }
    for (size_t i = 0; i < nu; i++) {
        addon_out_fmt(&o, "url_prefixes[%zu] ", i);
        out_entry(&o, ADDON_POLICY_URL_PREFIXES, &p->urls[i]);
        addon_out_fmt(&o, "\n");
    }
    return o.pos;
}

const char *addon_policy_precheck_name(addon_policy_precheck_t c)
{
    switch (c) {
    case ADDON_POLICY_PRECHECK_NONE:
        return "none";
    case ADDON_POLICY_PRECHECK_NUL:
        return "path contains NUL";
    case ADDON_POLICY_PRECHECK_BACKSLASH:
        return "path contains a backslash";
    case ADDON_POLICY_PRECHECK_DOT_SEGMENT:
        return "path has a . or .. segment";
    case ADDON_POLICY_PRECHECK_TOO_LONG:
        return "path is too long";
    }
    return "unknown";
}

size_t addon_policy_explain(const addon_policy_t *p, const addon_policy_query_t *q,
                            const addon_policy_decision_t *d, char *buf, size_t len)
{
    addon_out_t o = {buf, len, 0};
    if (len > 0)
        buf[0] = '\0';
    const addon__policy_entry_t *e = policy_entry(p, d->kind, d->index);
    const char *kind = policy_kind_name(d->kind);
    if (d->allowed && e != NULL) {
        addon_out_fmt(&o, "allowed by %s[%zu] (", kind, d->index);
        out_entry(&o, d->kind, e);
        addon_out_fmt(&o, ")");
        return o.pos;
    }
    switch (e != NULL ? d->verdict : ADDON_POLICY_BLOCK_HOST) {
    case ADDON_POLICY_BLOCK_METHOD:
        addon_out_fmt(&o, "blocked: method ");
        addon_out_esc(&o, q->method);
        addon_out_fmt(&o, " not allowed (%s[%zu] matches host and path)", kind, d->index);
        break;
    case ADDON_POLICY_BLOCK_PORT:
        addon_out_fmt(&o, "blocked: port %u not allowed (%s[%zu] matches host%s)", q->port, kind,
                d->index, d->kind == ADDON_POLICY_URL_PREFIXES ? " and path" : "");
        break;
    case ADDON_POLICY_BLOCK_PATH:
        addon_out_fmt(&o, "blocked: no entry matches path ");
        addon_out_esc(&o, q->path);
        addon_out_fmt(&o, " (%s[%zu] matches host ", kind, d->index);
        addon_out_esc(&o, q->host);
        addon_out_fmt(&o, ")");
        break;
    default:
        if (d->verdict == ADDON_POLICY_BLOCK_PRECHECK) {
            addon_out_fmt(&o, "blocked: pre-check: %s", addon_policy_precheck_name(d->precheck));
            break;
        }
        addon_out_fmt(&o, "blocked: no entry matches host ");
        addon_out_esc(&o, q->host);
        if (addon_policy_count(p, ADDON_POLICY_DOMAINS) +
                addon_policy_count(p, ADDON_POLICY_URL_PREFIXES) ==
            0)
            addon_out_fmt(&o, " (the allowlist is empty)");
        break;
    }
    return o.pos;
}
