/* airlock's own allowlist format (YAML or JSON, docs/allowlist.md): `block`, `domains` and
 * `url_prefixes`, read from an addon_yaml document into the policy, every error as
 * "file:line:col: what: message". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_glob.h"
#include "addons/addon_policy_int.h"
#include "base/px_limits.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

static const char *const policy_top_keys[] = {
    "domains", "url_prefixes", "block", "budgets", "provider_fetch_pass", "mode",
    "on_block", "hold_seconds", NULL};
static const char *const policy_entry_keys[] = {"host",  "path",    "methods",
                                                "ports", "tls",     "graphql", NULL};
static const char *const policy_graphql_keys[] = {"queries", "mutations", "subscriptions", NULL};
static const char *const policy_block_keys[] = {"host", "path", "methods", "mode", NULL};

static int policy_nomem(char *err, size_t errlen)
{
    snprintf(err, errlen, "out of memory");
    return PX_ENOMEM;
}

/* A copy of s[0..len) with a NUL after it. */
static char *policy_dup(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        return NULL;
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

/* "name:line" of node n into e->src. */
static int policy_src(addon__policy_entry_t *e, const addon_yaml_node_t *n, const char *name,
                      char *err, size_t errlen)
{
    char src[ADDON__POLICY_SRC_MAX];
    snprintf(src, sizeof(src), "%s:%u", name, addon_yaml_line(n));
    return addon__policy_set_src(e, src) == 0 ? 0 : policy_nomem(err, errlen);
}

/* A host pattern (addon__policy_host) from a YAML string, errors at the node. */
static int policy_host(const addon_yaml_node_t *n, const char *what, addon__policy_entry_t *e,
                       char *err, size_t errlen)
{
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(n, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    rc = addon__policy_host(s, len, e, &why);
    if (rc == PX_ENOMEM)
        return policy_nomem(err, errlen);
    if (rc != 0)
        return addon_yaml_errorf(n, err, errlen, "%s: %s", what, why);
    return 0;
}

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
        char *d = policy_dup(s, len);
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

/* One list of a graphql block: field-name patterns (fnmatch, case-sensitive). */
static int policy_graphql_list(const addon_yaml_node_t *n, const char *what,
                               const addon_str_t **out, size_t *count, char *err, size_t errlen)
{
    *out = NULL;
    *count = 0;
    if (n == NULL || addon_yaml_type(n) == ADDON_YAML_NULL)
        return 0;
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, what, err, errlen);
    if (rc != 0 || addon_yaml_count(n) == 0)
        return rc;
    addon_str_t *v = calloc(addon_yaml_count(n), sizeof(*v));
    if (v == NULL)
        return policy_nomem(err, errlen);
    *out = v;
    for (size_t i = 0; i < addon_yaml_count(n); i++) {
        char item[ADDON__POLICY_WHAT_MAX * 2];
        snprintf(item, sizeof(item), "%s[%zu]", what, i);
        const char *s;
        size_t len;
        rc = addon_yaml_get_string(addon_yaml_item(n, i), item, &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        char *d = policy_dup(s, len);
        if (d == NULL)
            return policy_nomem(err, errlen);
        v[i] = (addon_str_t){d, len};
        *count = i + 1;
    }
    return 0;
}

/* graphql: {queries: [...], mutations: [...], subscriptions: [...]}; missing lists deny. */
static int policy_graphql(const addon_yaml_node_t *n, const char *what, addon__policy_entry_t *e,
                          char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc == 0)
        rc = addon_yaml_check_keys(n, policy_graphql_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    addon_policy_graphql_t *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return policy_nomem(err, errlen);
    e->graphql = g;
    char sub[ADDON__POLICY_WHAT_MAX * 2 + 32];
    snprintf(sub, sizeof(sub), "%s.queries", what);
    rc = policy_graphql_list(addon_yaml_get(n, "queries"), sub, &g->queries, &g->nqueries, err,
                             errlen);
    if (rc == 0) {
        snprintf(sub, sizeof(sub), "%s.mutations", what);
        rc = policy_graphql_list(addon_yaml_get(n, "mutations"), sub, &g->mutations,
                                 &g->nmutations, err, errlen);
    }
    if (rc == 0) {
        snprintf(sub, sizeof(sub), "%s.subscriptions", what);
        rc = policy_graphql_list(addon_yaml_get(n, "subscriptions"), sub, &g->subscriptions,
                                 &g->nsubscriptions, err, errlen);
    }
    return rc;
}

static int policy_url_entry(const addon_yaml_node_t *n, const char *list, size_t idx,
                            addon__policy_entry_t *e, char *err, size_t errlen)
{
    char what[ADDON__POLICY_WHAT_MAX];
    snprintf(what, sizeof(what), "%s[%zu]", list, idx);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc != 0)
        return rc;
    if (strcmp(list, "block") != 0) /* a block entry's keys were checked against its own list */
        rc = addon_yaml_check_keys(n, policy_entry_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    char sub[ADDON__POLICY_WHAT_MAX + 16];
    const addon_yaml_node_t *host = addon_yaml_get(n, "host");
    if (host == NULL)
        return addon_yaml_errorf(n, err, errlen, "%s: missing required key 'host'", what);
    snprintf(sub, sizeof(sub), "%s.host", what);
    rc = policy_host(host, sub, e, err, errlen);
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
        char *d = policy_dup(s, len);
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
    const addon_yaml_node_t *graphql = addon_yaml_get(n, "graphql");
    if (graphql != NULL && addon_yaml_type(graphql) != ADDON_YAML_NULL) {
        snprintf(sub, sizeof(sub), "%s.graphql", what);
        rc = policy_graphql(graphql, sub, e, err, errlen);
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
        if (e->passthrough &&
            (e->path.len > 0 || e->nmethods > 0 || addon_yaml_get(n, "graphql") != NULL))
            return addon_yaml_errorf(tls, err, errlen,
                                     "%s: a passthrough entry cannot restrict 'path', "
                                     "'methods' or 'graphql' (airlock does not see inside the "
                                     "TLS stream)",
                                     sub);
    }
    return 0;
}

static int policy_push(addon_policy_t *p, addon_policy_kind_t kind, const addon_yaml_node_t *n,
                       addon__policy_entry_t **out, char *err, size_t errlen)
{
    int rc;
    *out = addon__policy_push(p, kind, &rc);
    if (*out == NULL && rc == PX_ETOOBIG)
        return addon_yaml_errorf(n, err, errlen, "more than %d entries in one list",
                                 ADDON_POLICY_ENTRIES_MAX);
    if (*out == NULL)
        return policy_nomem(err, errlen);
    return policy_src(*out, n, p->name, err, errlen);
}

static int policy_domains(addon_policy_t *p, const addon_yaml_node_t *n, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "domains", err, errlen);
    for (size_t i = 0; rc == 0 && i < addon_yaml_count(n); i++) {
        char what[ADDON__POLICY_WHAT_MAX];
        snprintf(what, sizeof(what), "domains[%zu]", i);
        addon__policy_entry_t *e;
        rc = policy_push(p, ADDON_POLICY_DOMAINS, addon_yaml_item(n, i), &e, err, errlen);
        if (rc == 0)
            rc = policy_host(addon_yaml_item(n, i), what, e, err, errlen);
    }
    return rc;
}

static int policy_urls(addon_policy_t *p, const addon_yaml_node_t *n, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "url_prefixes", err, errlen);
    for (size_t i = 0; rc == 0 && i < addon_yaml_count(n); i++) {
        addon__policy_entry_t *e;
        rc = policy_push(p, ADDON_POLICY_URL_PREFIXES, addon_yaml_item(n, i), &e, err, errlen);
        if (rc == 0)
            rc = policy_url_entry(addon_yaml_item(n, i), "url_prefixes", i, e, err, errlen);
    }
    return rc;
}

/* `on_block: block` (the default) or `on_block: hold`, and `hold_seconds: N` (1 to
 * PX_HOLD_SECONDS_MAX, default PX_HOLD_SECONDS_DEFAULT; only with hold): p->hold_seconds. */
static int policy_on_block(addon_policy_t *p, const addon_yaml_node_t *root, char *err,
                           size_t errlen)
{
    const addon_yaml_node_t *ob = addon_yaml_get(root, "on_block");
    const addon_yaml_node_t *hs = addon_yaml_get(root, "hold_seconds");
    int hold = 0;
    if (ob != NULL) {
        const char *s;
        size_t len;
        int rc = addon_yaml_get_string(ob, "on_block", &s, &len, err, errlen);
        if (rc != 0)
            return rc;
        if (len == 4 && memcmp(s, "hold", 4) == 0)
            hold = 1;
        else if (!(len == 5 && memcmp(s, "block", 5) == 0))
            return addon_yaml_errorf(ob, err, errlen, "on_block: expected 'block' or 'hold'");
    }
    if (hs != NULL && !hold)
        return addon_yaml_errorf(hs, err, errlen, "hold_seconds: only with 'on_block: hold'");
    int64_t secs = PX_HOLD_SECONDS_DEFAULT;
    if (hs != NULL) {
        int rc =
            addon_yaml_get_int(hs, "hold_seconds", 1, PX_HOLD_SECONDS_MAX, &secs, err, errlen);
        if (rc != 0)
            return rc;
    }
    p->hold_seconds = hold ? (int)secs : 0;
    return 0;
}

/* block: [ "host glob", {host, path, methods}, ... ] */
/* `mode: enforce` (the default) or `mode: warn`: *warn 0 or 1. */
static int policy_mode(const addon_yaml_node_t *n, const char *what, int *warn, char *err,
                       size_t errlen)
{
    const char *s;
    size_t len;
    int rc = addon_yaml_get_string(n, what, &s, &len, err, errlen);
    if (rc != 0)
        return rc;
    if (len == 7 && memcmp(s, "enforce", 7) == 0)
        *warn = 0;
    else if (len == 4 && memcmp(s, "warn", 4) == 0)
        *warn = 1;
    else
        return addon_yaml_errorf(n, err, errlen, "%s: expected 'enforce' or 'warn'", what);
    return 0;
}

static int policy_block_entry(const addon_yaml_node_t *n, size_t idx, addon__policy_entry_t *e,
                              char *err, size_t errlen)
{
    char what[ADDON__POLICY_WHAT_MAX];
    snprintf(what, sizeof(what), "block[%zu]", idx);
    if (addon_yaml_type(n) == ADDON_YAML_STRING)
        return policy_host(n, what, e, err, errlen);
    int rc = addon_yaml_expect(n, ADDON_YAML_MAP, what, err, errlen);
    if (rc != 0)
        return addon_yaml_errorf(n, err, errlen,
                                 "%s: expected a host pattern or a mapping with "
                                 "'host' (and 'path', 'methods'), got %s",
                                 what, addon_yaml_type_name(addon_yaml_type(n)));
    rc = addon_yaml_check_keys(n, policy_block_keys, what, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *mode = addon_yaml_get(n, "mode");
    if (mode != NULL) {
        snprintf(what, sizeof(what), "block[%zu].mode", idx);
        rc = policy_mode(mode, what, &e->warn, err, errlen);
        if (rc != 0)
            return rc;
    }
    /* The same keys as a url_prefixes entry, minus ports and tls: a block holds on every port. */
    return policy_url_entry(n, "block", idx, e, err, errlen);
}

static int policy_blocks(addon_policy_t *p, const addon_yaml_node_t *n, char *err, size_t errlen)
{
    int rc = addon_yaml_expect(n, ADDON_YAML_SEQ, "block", err, errlen);
    for (size_t i = 0; rc == 0 && i < addon_yaml_count(n); i++) {
        addon__policy_entry_t *e;
        rc = policy_push(p, ADDON_POLICY_BLOCKS, addon_yaml_item(n, i), &e, err, errlen);
        if (rc == 0)
            rc = policy_block_entry(addon_yaml_item(n, i), i, e, err, errlen);
    }
    return rc;
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
    if (rc == 0 && addon_yaml_get(root, "mode") != NULL)
        rc = policy_mode(addon_yaml_get(root, "mode"), "mode", &p->warn, err, errlen);
    if (rc == 0)
        rc = policy_on_block(p, root, err, errlen);
    if (rc != 0)
        return rc;
    const addon_yaml_node_t *blocks = addon_yaml_get(root, "block");
    if (blocks != NULL && addon_yaml_type(blocks) != ADDON_YAML_NULL) {
        rc = policy_blocks(p, blocks, err, errlen);
        if (rc != 0)
            return rc;
    }
    const addon_yaml_node_t *domains = addon_yaml_get(root, "domains");
    if (domains != NULL && addon_yaml_type(domains) != ADDON_YAML_NULL) {
        rc = policy_domains(p, domains, err, errlen);
        if (rc != 0)
            return rc;
    }
    const addon_yaml_node_t *urls = addon_yaml_get(root, "url_prefixes");
    if (urls != NULL && addon_yaml_type(urls) != ADDON_YAML_NULL)
        rc = policy_urls(p, urls, err, errlen);
    if (rc == 0 && addon_yaml_get(root, "budgets") != NULL) /* addon_policy_budget.c */
        rc = addon__policy_budgets_yaml(p, addon_yaml_get(root, "budgets"), err, errlen);
    if (rc == 0 && addon_yaml_get(root, "provider_fetch_pass") != NULL) /* addon_provider_pass.c */
        rc = addon__policy_fetch_pass_yaml(p, addon_yaml_get(root, "provider_fetch_pass"), err,
                                           errlen);
    return rc;
}

int addon__policy_yaml_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                            char *err, size_t errlen)
{
    addon_yaml_doc_t *doc;
    int rc = addon_yaml_load_buffer(name, data, len, &doc, err, errlen);
    if (rc != 0)
        return rc;
    rc = policy_from_root(p, addon_yaml_root(doc), err, errlen);
    addon_yaml_free(doc);
    return rc;
}
