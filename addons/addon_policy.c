/* The allowlist snapshot (reference counted) and its decisions (docs/allowlist.md). Loading is in
 * addon_policy_load.c and the readers of each format, the texts in addon_policy_text.c. */
#include "addons/addon_policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_glob.h"
#include "addons/addon_policy_int.h"
#include "base/px_err.h"
#include "base/px_host.h"
#include "base/px_path.h"
#include "base/px_pct.h"

#define ADDON__POLICY_HTTP_PORT 80
#define ADDON__POLICY_HTTPS_PORT 443

addon_policy_t *addon_policy_new_empty(const char *name)
{
    return addon__policy_new(name, ADDON_POLICY_FORMAT_NATIVE);
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
        addon__policy_free(p);
}

const addon__policy_list_t *addon__policy_list(const addon_policy_t *p, addon_policy_kind_t kind)
{
    if (p == NULL)
        return NULL;
    if (kind == ADDON_POLICY_DOMAINS)
        return &p->domains;
    if (kind == ADDON_POLICY_URL_PREFIXES)
        return &p->urls;
    if (kind == ADDON_POLICY_BLOCKS)
        return &p->blocks;
    return NULL;
}

size_t addon_policy_count(const addon_policy_t *p, addon_policy_kind_t kind)
{
    const addon__policy_list_t *l = addon__policy_list(p, kind);
    return l != NULL ? l->n : 0;
}

addon_policy_format_t addon_policy_format_of(const addon_policy_t *p)
{
    return p != NULL ? p->format : ADDON_POLICY_FORMAT_NATIVE;
}

/* ---- deciding --------------------------------------------------------------------------- */

/* 1 when the raw path (before its first raw '?') has a segment that is ".." once
 * percent-decoded and once its ";parameters" are removed: servers resolve "/..;/",
 * "%2e%2e;" and "..%3b" as "..". Segments are split on decoded '/' too ("..%2f"). A "."
 * segment alone is a reading (px_path), not a refusal: apt's flat repositories ask for
 * "/./InRelease". */
static int policy_dot_segment(const char *raw, size_t len)
{
    size_t dots = 0; /* the segment so far (before ';') is this many dots */
    int other = 0;   /* ... or holds something else */
    int params = 0;  /* past the segment's first ';' */
    for (size_t i = 0; i <= len; i++) {
        char ch;
        if (i == len) {
            ch = '/';
        } else if (raw[i] == '?') {
            len = i; /* the query is not part of the path */
            ch = '/';
        } else if (px_pct_at(raw, len, i) >= 0) {
            ch = (char)px_pct_at(raw, len, i);
            i += 2;
        } else {
            ch = raw[i];
        }
        if (ch == '/') {
            if (!other && dots == 2)
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

/* The request host as patterns are stored, through the one host normalizer (base/px_host:
 * IPv6 brackets or one trailing dot removed, lowercased) into buf. A name too long for buf
 * (longer than any host the pre-checks let through) is compared as it is. */
#define POLICY_HOST_BUF 260
static addon_str_t policy_norm_host(addon_str_t h, char *buf)
{
    int n = px_host_norm(buf, POLICY_HOST_BUF, h.base, h.len);
    if (n < 0)
        return h;
    return (addon_str_t){buf, (size_t)n};
}

/* s[0..len) equals the stored (lowercased) pattern pat, folding only the request's side. */
static int policy_eq_icase(const char *pat, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + ('a' - 'A'));
        if (c != pat[i])
            return 0;
    }
    return 1;
}

/* A sub entry (".github.com") takes the name itself and every name ending in ".github.com". */
static int policy_host_ok(const addon__policy_entry_t *e, addon_str_t host)
{
    if (e->host_glob)
        return addon_glob_fnmatch(e->host.base, e->host.len, host.base, host.len, 1);
    if (e->host.len == host.len)
        return policy_eq_icase(e->host.base, host.base, host.len);
    if (!e->sub || host.len < e->host.len + 2 || host.base[host.len - e->host.len - 1] != '.')
        return 0;
    return policy_eq_icase(e->host.base, host.base + host.len - e->host.len, e->host.len);
}

int addon__policy_host_matches(const addon__policy_entry_t *e, addon_str_t host)
{
    char buf[POLICY_HOST_BUF];
    return policy_host_ok(e, policy_norm_host(host, buf));
}

/* Allows match paths case-sensitively (icase 0). Restrictions (block entries, a graphql
 * entry's filter) match them in any case (icase 1): many servers route case-insensitively
 * (GitHub's /repos/OWNER/REPO, IIS), and a restriction applied to one spelling more is safe
 * where an allow would not be. */
static int policy_path_ok(const addon__policy_entry_t *e, const char *path, size_t len, int icase)
{
    if (e->path.len == 0)
        return 1;
    if (e->path_glob)
        return addon_glob_fnmatch(e->path.base, e->path.len, path, len, icase);
    if (e->path.len != len)
        return 0;
    return icase ? strncasecmp(e->path.base, path, len) == 0 : memcmp(e->path.base, path, len) == 0;
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

/* Decides one reading path[0..plen) (decoded path + query) of the request for host (normalized)
 * into d, which starts as ADDON_POLICY_BLOCK_HOST. */
static void policy_decide_reading(const addon_policy_t *p, const addon_policy_query_t *q,
                                  addon_str_t host, const char *path, size_t plen,
                                  addon_policy_decision_t *d)
{
    /* Blocks win over every allow: they are checked first and end the decision. */
    for (size_t i = 0; i < p->blocks.n; i++) {
        const addon__policy_entry_t *e = &p->blocks.v[i];
        if (policy_host_ok(e, host) && policy_path_ok(e, path, plen, 1) &&
            policy_method_ok(e, q->method)) {
            if (e->warn) { /* blocks nothing: noted, and the request is decided without it */
                if (d->warn_block == 0)
                    d->warn_block = i + 1;
                continue;
            }
            d->verdict = ADDON_POLICY_BLOCK_LISTED;
            d->kind = ADDON_POLICY_BLOCKS;
            d->index = i;
            d->host_pattern = e->host;
            d->path_pattern = e->path;
            return;
        }
    }
    for (size_t i = 0; i < p->domains.n; i++) {
        const addon__policy_entry_t *e = &p->domains.v[i];
        if (!policy_host_ok(e, host))
            continue;
        if (policy_port_ok(e, q->port, q->tls)) {
            policy_note(d, ADDON_POLICY_ALLOW, ADDON_POLICY_DOMAINS, i, e);
            d->allowed = 1;
            return;
        }
        policy_note(d, ADDON_POLICY_BLOCK_PORT, ADDON_POLICY_DOMAINS, i, e);
    }
    for (size_t i = 0; i < p->urls.n; i++) {
        const addon__policy_entry_t *e = &p->urls.v[i];
        if (!policy_host_ok(e, host))
            continue;
        if (!policy_path_ok(e, path, plen, 0)) {
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
        d->graphql = e->graphql;
        return;
    }
}

/* The graphql block of the first url_prefixes entry whose host and path (in any case; with or
 * without the query) match the reading path[0..len) (its path part path[0..plen)), whatever its
 * method and port: a feature's path applies to every request that may reach it (a GET with
 * ?query= to a POST-only graphql entry's path, allowed by a domains entry, is still a GraphQL
 * request). NULL when none. */
static const addon_policy_graphql_t *policy_graphql_any(const addon_policy_t *p, addon_str_t host,
                                                        const char *path, size_t plen, size_t len)
{
    for (size_t i = 0; p->ngraphql > 0 && i < p->urls.n; i++) {
        const addon__policy_entry_t *e = &p->urls.v[i];
        if (e->graphql != NULL && policy_host_ok(e, host) &&
            (policy_path_ok(e, path, len, 1) || policy_path_ok(e, path, plen, 1)))
            return e->graphql;
    }
    return NULL;
}

/* The other readings of an allowed request (changes: px_path_changes of its path part): a
 * block entry that matches any of them wins; any one that is not allowed blocks the request; a
 * graphql entry that allows any of them applies. Kept apart for its buffer. */
static void policy_decide_others(const addon_policy_t *p, const addon_policy_query_t *q,
                                 addon_str_t host, const char *path, size_t plen, size_t len,
                                 unsigned changes, addon_policy_decision_t *d)
{
    char buf[ADDON_POLICY_PATH_MAX];
    addon_policy_decision_t first_no = {0};
    for (unsigned how = 1; how <= PX_PATH_ALL; how++) {
        if (!px_path_worth(changes, how))
            continue;
        size_t n = px_path_reading(path, plen, how, buf);
        memcpy(buf + n, path + plen, len - plen); /* the query, as it is */
        addon_policy_decision_t r = {0};
        r.verdict = ADDON_POLICY_BLOCK_HOST;
        size_t r_len = n + len - plen;
        policy_decide_reading(p, q, host, buf, r_len, &r);
        r.reading = how;
        if (d->warn_block == 0)
            d->warn_block = r.warn_block;
        if (r.verdict == ADDON_POLICY_BLOCK_LISTED) {
            r.warn_block = d->warn_block;
            *d = r;
            return;
        }
        if (!r.allowed && first_no.reading == 0)
            first_no = r;
        if (d->graphql == NULL)
            d->graphql = r.graphql != NULL ? r.graphql : policy_graphql_any(p, host, buf, n, r_len);
    }
    if (d->allowed && first_no.reading != 0) {
        size_t wb = d->warn_block; /* a warn block entry that matched any reading is noted */
        *d = first_no;
        d->warn_block = wb;
    }
}

/* path[0..len) is the decoded path+query, its path part path[0..plen). */
static void policy_decide_path(const addon_policy_t *p, const addon_policy_query_t *q,
                               const char *path, size_t plen, size_t len,
                               addon_policy_decision_t *d)
{
    d->precheck = policy_precheck(path, len, q->path.base, q->path.len);
    if (d->precheck != ADDON_POLICY_PRECHECK_NONE) {
        d->verdict = ADDON_POLICY_BLOCK_PRECHECK;
        return;
    }
    if (p == NULL)
        return;
    char hbuf[POLICY_HOST_BUF];
    addon_str_t host = policy_norm_host(q->host, hbuf);
    policy_decide_reading(p, q, host, path, len, d);
    if (d->allowed && d->graphql == NULL)
        d->graphql = policy_graphql_any(p, host, path, plen, len);
    unsigned changes = px_path_changes(path, plen);
    if (changes != 0 && d->verdict != ADDON_POLICY_BLOCK_LISTED)
        policy_decide_others(p, q, host, path, plen, len, changes, d);
    if (!d->allowed)
        d->graphql = NULL;
}

/* Kept apart so that the 64 KiB decoding buffer is only on the stack for paths holding '%'.
 * The path and the query are decoded apart, so that the path part's end is known (the
 * concatenation is the whole target decoded once: no escape spans the raw '?'). */
static void policy_decide_encoded(const addon_policy_t *p, const addon_policy_query_t *q,
                                  addon_policy_decision_t *d)
{
    char buf[ADDON_POLICY_PATH_MAX];
    const char *qm = memchr(q->path.base, '?', q->path.len);
    size_t rp = qm != NULL ? (size_t)(qm - q->path.base) : q->path.len;
    size_t plen = px_pct_unquote(q->path.base, rp, buf);
    size_t len = plen + px_pct_unquote(q->path.base + rp, q->path.len - rp, buf + plen);
    policy_decide_path(p, q, buf, plen, len, d);
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
        const char *qm = q->path.len > 0 ? memchr(q->path.base, '?', q->path.len) : NULL;
        size_t plen = qm != NULL ? (size_t)(qm - q->path.base) : q->path.len;
        policy_decide_path(p, q, q->path.base, plen, q->path.len, d);
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
    if (addon_policy_host_blocked(p, host, NULL))
        return 0;
    char hbuf[POLICY_HOST_BUF];
    host = policy_norm_host(host, hbuf);
    for (size_t i = 0; i < p->domains.n; i++) {
        if (policy_host_ok(&p->domains.v[i], host) && policy_port_ok(&p->domains.v[i], port, tls))
            return 1;
    }
    for (size_t i = 0; i < p->urls.n; i++) {
        const addon__policy_entry_t *e = &p->urls.v[i];
        if (policy_host_ok(e, host) && policy_port_ok(e, port, tls)) {
            if (passthrough != NULL)
                *passthrough = e->passthrough;
            return 1;
        }
    }
    return 0;
}

const char *addon_policy_entry_src(const addon_policy_t *p, addon_policy_kind_t kind, size_t index)
{
    const addon__policy_list_t *l = addon__policy_list(p, kind);
    if (l == NULL || index >= l->n || l->v[index].src == NULL)
        return "";
    return l->v[index].src;
}

int addon_policy_warn_mode(const addon_policy_t *p)
{
    return p != NULL && p->warn;
}

int addon_policy_hold_seconds(const addon_policy_t *p)
{
    return p != NULL ? p->hold_seconds : 0;
}

int addon_policy_host_blocked(const addon_policy_t *p, addon_str_t host, size_t *index)
{
    if (p == NULL)
        return 0;
    char hbuf[POLICY_HOST_BUF];
    host = policy_norm_host(host, hbuf);
    for (size_t i = 0; i < p->blocks.n; i++) {
        const addon__policy_entry_t *e = &p->blocks.v[i];
        if (!e->warn && e->path.len == 0 && e->nmethods == 0 && policy_host_ok(e, host)) {
            if (index != NULL)
                *index = i;
            return 1;
        }
    }
    return 0;
}

const addon_policy_graphql_t *addon_policy_graphql(const addon_policy_t *p, size_t index)
{
    if (p == NULL || index >= p->urls.n)
        return NULL;
    return p->urls.v[index].graphql;
}

int addon_policy_host_get_open(const addon_policy_t *p, addon_str_t host)
{
    static const addon_str_t get = {"GET", 3};
    if (p == NULL)
        return 0;
    char hbuf[POLICY_HOST_BUF];
    host = policy_norm_host(host, hbuf);
    /* a block on any path of the host takes some GET away: not open */
    for (size_t i = 0; i < p->blocks.n; i++) {
        const addon__policy_entry_t *e = &p->blocks.v[i];
        if (!e->warn && policy_host_ok(e, host) && policy_method_ok(e, get))
            return 0;
    }
    for (size_t i = 0; i < p->domains.n; i++) {
        if (policy_host_ok(&p->domains.v[i], host))
            return 1;
    }
    for (size_t i = 0; i < p->urls.n; i++) {
        const addon__policy_entry_t *e = &p->urls.v[i];
        if (e->path.len == 0 && policy_host_ok(e, host) && policy_method_ok(e, get))
            return 1;
    }
    return 0;
}
