#include "audit/audit_report.h"

#include <stdlib.h>
#include <string.h>

#include "audit/audit_named.h"
#include "audit/audit_path.h"
#include "audit/audit_report_int.h"

audit_report_t *audit_report_new(const addon_policy_t *current, const char *name)
{
    audit_report_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->current = current;
    r->current_name = name;
    r->width = 1;
    r->probe = audit_req_probe_policy();
    r->hosts = audit_tab_new(AUDIT_REPORT_HOSTS_MAX, sizeof(audit_rep_host_t));
    r->groups = audit_tab_new(AUDIT_REPORT_GROUPS_MAX, sizeof(audit_rep_group_t));
    r->causes = audit_tab_new(AUDIT_REPORT_CAUSES_MAX, sizeof(audit_rep_group_t));
    r->tls = audit_tab_new(AUDIT_REPORT_CAUSES_MAX, sizeof(audit_rep_group_t));
    r->creds = audit_tab_new(AUDIT_REPORT_CAUSES_MAX, sizeof(audit_rep_group_t));
    r->warns = audit_tab_new(AUDIT_REPORT_CAUSES_MAX, sizeof(audit_rep_group_t));
    r->dns = audit_tab_new(AUDIT_REPORT_DNS_MAX, sizeof(audit_rep_dns_t));
    r->malformed = audit_named_new(256);
    r->sugg = audit_sugg_new();
    if (r->probe == NULL || r->hosts == NULL || r->groups == NULL || r->causes == NULL ||
        r->tls == NULL || r->creds == NULL || r->warns == NULL || r->dns == NULL ||
        r->malformed == NULL || r->sugg == NULL) {
        audit_report_free(r);
        return NULL;
    }
    return r;
}

void audit_report_free(audit_report_t *r)
{
    if (r == NULL)
        return;
    addon_policy_unref(r->probe);
    audit_tab_free(r->hosts);
    audit_tab_free(r->groups);
    audit_tab_free(r->causes);
    audit_tab_free(r->tls);
    audit_tab_free(r->creds);
    audit_tab_free(r->warns);
    audit_tab_free(r->dns);
    audit_tab_free(r->malformed);
    audit_sugg_free(r->sugg);
    free(r);
}

size_t audit_report_bytes(const audit_report_t *r)
{
    return sizeof(*r) + audit_tab_bytes(r->hosts) + audit_tab_bytes(r->groups) +
           audit_tab_bytes(r->causes) + audit_tab_bytes(r->tls) + audit_tab_bytes(r->creds) +
           audit_tab_bytes(r->warns) + audit_tab_bytes(r->dns) + audit_tab_bytes(r->malformed);
}

void audit_report_file(audit_report_t *r, const char *file)
{
    if (r->nfiles < AUDIT_REPORT_FILES_MAX)
        r->files[r->nfiles++] = file;
}

unsigned long audit_report_known_lines(const audit_report_t *r)
{
    return r->known;
}

/* The request is the requests-th (1-based): count it in its bar, halving the resolution when
 * the bars are full (two neighbours merge), so the timeline covers any number of requests. */
static void audit__timeline(audit_report_t *r, audit_verdict_t v)
{
    unsigned long i = r->requests - 1;
    while (i / r->width >= AUDIT_REPORT_BUCKETS) {
        for (size_t k = 0; k < AUDIT_REPORT_BUCKETS / 2; k++) {
            audit_rep_bucket_t a = r->buckets[2 * k], b = r->buckets[2 * k + 1];
            r->buckets[k].allowed = a.allowed + b.allowed;
            r->buckets[k].blocked = a.blocked + b.blocked;
            r->buckets[k].errors = a.errors + b.errors;
        }
        memset(&r->buckets[AUDIT_REPORT_BUCKETS / 2], 0,
               sizeof(r->buckets[0]) * (AUDIT_REPORT_BUCKETS - AUDIT_REPORT_BUCKETS / 2));
        r->width *= 2;
    }
    audit_rep_bucket_t *b = &r->buckets[i / r->width];
    if (v == AUDIT_ALLOWED)
        b->allowed++;
    else if (v == AUDIT_BLOCKED || v == AUDIT_WARNED)
        b->blocked++;
    else
        b->errors++;
}

static void audit__copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* Counts one line in the group of table t under key; the first one is the example. */
static audit_rep_group_t *audit__group(audit_tab_t *t, const char *key, size_t klen,
                                       const char *file, unsigned long lineno, const char *line,
                                       size_t len, const char *reason)
{
    int created = 0;
    audit_rep_group_t *g = audit_tab_get(t, key, klen, 1, &created);
    if (g == NULL)
        return NULL;
    if (created) {
        audit__copy(g->example, sizeof(g->example), line, len);
        g->file = file;
        g->lineno = lineno;
        if (reason != NULL)
            audit__copy(g->reason, sizeof(g->reason), reason, strlen(reason));
    } else if (reason != NULL && strncmp(g->reason, reason, sizeof(g->reason) - 1) != 0) {
        g->other_reasons++;
    }
    g->count++;
    return g;
}

static void audit__method(audit_rep_group_t *g, audit_str_t m)
{
    size_t have = strlen(g->methods);
    const char *p = g->methods;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        if (n == m.len && memcmp(p, m.base, n) == 0)
            return;
        p += n;
        while (*p == ',' || *p == ' ')
            p++;
    }
    if (have + m.len + 3 > sizeof(g->methods)) {
        g->more_methods = 1;
        return;
    }
    if (have > 0) {
        memcpy(g->methods + have, ", ", 2);
        have += 2;
    }
    memcpy(g->methods + have, m.base, m.len);
    g->methods[have + m.len] = '\0';
}

/* The host as a table key: the logged (escaped) host, lowercased. */
static size_t audit__host_key(const audit_line_t *l, char *out, size_t cap)
{
    if (!l->url.ok) {
        audit__copy(out, cap, "(no URL)", 8);
        return 8;
    }
    size_t n = l->url.host.len < cap - 1 ? l->url.host.len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        char c = l->url.host.base[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    if (n > 0 && out[n - 1] == '.')
        n--;
    out[n] = '\0';
    return n;
}

static void audit__blocked(audit_report_t *r, const audit_line_t *l, const char *host,
                           const char *file, unsigned long lineno, const char *line, size_t len)
{
    char reason[AUDIT_REPORT_REASON_MAX + 1];
    int suggest = 0;
    audit_req_from_line(l, &r->req);
    if (l->tail.len > 0)
        snprintf(reason, sizeof(reason), "%d %.*s", l->status, (int)l->tail.len, l->tail.base);
    else
        snprintf(reason, sizeof(reason), "%d blocked by the allowlist", l->status);
    if (r->req.redecidable && !r->req.then_allowed) {
        int blocked = 1;
        if (r->current != NULL) {
            blocked = !audit_req_decide(r->current, &r->req, r->why, sizeof(r->why));
            const char *pre = blocked ? "" : "now allowed: ";
            size_t pl = strlen(pre);
            memcpy(reason, pre, pl + 1);
            audit__copy(reason + pl, sizeof(reason) - pl, r->why, strlen(r->why));
        }
        if (blocked && audit_req_unallowable(r->probe, &r->req, r->why, sizeof(r->why))) {
            audit__copy(reason, sizeof(reason), r->why, strlen(r->why));
            r->unallowable++;
        } else if (blocked) {
            suggest = audit_sugg_add(r->sugg, &r->req, l->url_text.base, l->url_text.len) == 0;
        }
    }
    char pat[AUDIT_PATTERN_MAX];
    if (!l->url.ok)
        snprintf(pat, sizeof(pat), "-");
    else if (l->url.authority)
        snprintf(pat, sizeof(pat), ":%u", l->url.port);
    else
        audit_path_pattern(l->url.path.base, l->url.path.len, pat, sizeof(pat));
    char key[AUDIT_HOST_MAX * 4 + AUDIT_PATTERN_MAX + 4];
    int kn = snprintf(key, sizeof(key), "%s\x01%s", host, pat);
    if (kn < 0 || (size_t)kn >= sizeof(key))
        kn = (int)sizeof(key) - 1;
    audit_rep_group_t *g =
        audit__group(r->groups, key, (size_t)kn, file, lineno, line, len, reason);
    if (g == NULL)
        return;
    audit__method(g, l->method);
    g->suggestible |= suggest;
}

static void audit__access(audit_report_t *r, const audit_line_t *l, const char *file,
                          unsigned long lineno, const char *line, size_t len)
{
    r->requests++;
    audit__timeline(r, l->verdict);
    char host[AUDIT_HOST_MAX * 4 + 1];
    size_t hl = audit__host_key(l, host, sizeof(host));
    audit_rep_host_t *h = audit_tab_get(r->hosts, host, hl, 1, NULL);
    if (h != NULL) {
        h->requests++;
        if (l->masked > 0)
            h->masked++;
    }
    if (l->masked > 0)
        r->masked++;
    if (l->verdict == AUDIT_ALLOWED) {
        r->allowed++;
        if (h != NULL)
            h->allowed++;
    } else if (l->verdict == AUDIT_BLOCKED || l->verdict == AUDIT_WARNED) {
        /* a WARN line is counted with what the allowlist blocks: warn mode is for seeing that */
        r->blocked++;
        if (h != NULL)
            h->blocked++;
        audit__blocked(r, l, host, file, lineno, line, len);
    } else {
        r->errors++;
        if (h != NULL)
            h->errors++;
        char cause[AUDIT_REPORT_REASON_MAX + 1];
        if (l->status < 0)
            snprintf(cause, sizeof(cause), "%.*s", (int)l->tail.len, l->tail.base);
        else
            snprintf(cause, sizeof(cause), "%d %.*s", l->status, (int)l->tail.len, l->tail.base);
        audit__group(r->causes, cause, strlen(cause), file, lineno, line, len, NULL);
    }
}

/* `airlock health` (app/px_health.c) asks DNS for this name, then sends a GET without Host,
 * which the pre-checks refuse with exactly this line: neither is the agent's traffic. */
#define AUDIT__HEALTH_NAME "airlock-health.invalid"
#define AUDIT__HEALTH_TAIL "malformed request: missing Host header"

/* 1 when l is the HTTP probe of `airlock health`: the Host-less GET, when a health DNS query
 * came before it (an agent's Host-less GET without one still counts as blocked). */
static int audit__health_http(audit_report_t *r, const audit_line_t *l)
{
    if (r->health_pending == 0 || l->verdict != AUDIT_BLOCKED || l->status != 400 || l->url.ok ||
        !audit_str_eq(l->method, "GET") || !audit_str_eq(l->tail, AUDIT__HEALTH_TAIL))
        return 0;
    r->health_pending--;
    return 1;
}

static void audit__dns(audit_report_t *r, const audit_line_t *l)
{
    if (audit_str_eq(l->dns_name, AUDIT__HEALTH_NAME)) {
        r->health++;
        r->health_pending++;
        return;
    }
    r->dns_lines++;
    char name[AUDIT_HOST_MAX * 4 + 1];
    size_t n = l->dns_name.len < sizeof(name) - 1 ? l->dns_name.len : sizeof(name) - 1;
    for (size_t i = 0; i < n; i++) {
        char c = l->dns_name.base[i];
        name[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    if (n > 1 && name[n - 1] == '.')
        n--;
    if (n == 1 && name[0] == '?')
        return; /* FORMERR: no readable question */
    audit_rep_dns_t *d = audit_tab_get(r->dns, name, n, 1, NULL);
    if (d == NULL)
        return;
    d->count++;
    if (audit_str_eq(l->dns_type, "A"))
        d->types |= 1;
    else if (audit_str_eq(l->dns_type, "AAAA"))
        d->types |= 2;
    else
        d->types |= 4;
}

int audit_report_line(audit_report_t *r, const char *file, unsigned long lineno, const char *line,
                      size_t len, int overlong)
{
    r->lines++;
    if (overlong) {
        audit_named_add(r->malformed, "line over the length cap", file, lineno, "", 0);
        return 0;
    }
    audit_line_t l;
    if (audit_line_parse(line, len, &l) != 0) {
        audit_named_add(r->malformed, l.why, file, lineno, line, len);
        return 0;
    }
    r->known++;
    char key[AUDIT_LINE_MAX];
    int kn;
    switch (l.kind) {
    case AUDIT_LINE_ACCESS:
        if (audit__health_http(r, &l))
            break;
        audit__access(r, &l, file, lineno, line, len);
        break;
    case AUDIT_LINE_DNS:
        audit__dns(r, &l);
        break;
    case AUDIT_LINE_TASK_START:
        r->tasks_seen++;
        if (r->ntasks < AUDIT_REPORT_TASKS_MAX) {
            r->tasks[r->ntasks].at = r->requests;
            audit__copy(r->tasks[r->ntasks].ts, sizeof(r->tasks[0].ts), l.text.base, l.text.len);
            r->ntasks++;
        }
        break;
    case AUDIT_LINE_STRIPPED:
    case AUDIT_LINE_COLLAPSED: {
        if (l.kind == AUDIT_LINE_STRIPPED)
            r->stripped++;
        else
            r->collapsed++;
        kn = snprintf(key, sizeof(key), "%s\x01%.*s\x01%.*s",
                      l.kind == AUDIT_LINE_STRIPPED ? "STRIPPED" : "COLLAPSED", (int)l.header.len,
                      l.header.base, (int)(l.url.ok ? l.url.host.len : 1),
                      l.url.ok ? l.url.host.base : "-");
        if (kn > 0 && (size_t)kn < sizeof(key))
            audit__group(r->creds, key, (size_t)kn, file, lineno, line, len, NULL);
        break;
    }
    case AUDIT_LINE_TLS_REJECTED:
        r->tls_rejected++;
        kn = snprintf(key, sizeof(key), "%.*s\x01%.*s", (int)l.text.len, l.text.base,
                      (int)l.reason.len, l.reason.base);
        if (kn > 0 && (size_t)kn < sizeof(key))
            audit__group(r->tls, key, (size_t)kn, file, lineno, line, len, NULL);
        break;
    case AUDIT_LINE_DECISION:
        if (l.verdict == AUDIT_ALLOWED)
            r->approved++;
        else
            r->denied++;
        break;
    case AUDIT_LINE_WARNING: {
        r->warnings++;
        /* "Container clock skew detected: x-amz-date=..." groups by what comes before ':' */
        const char *colon = memchr(l.text.base, ':', l.text.len);
        size_t n = colon != NULL ? (size_t)(colon - l.text.base) : l.text.len;
        if (n > 120)
            n = 120;
        audit__group(r->warns, l.text.base, n, file, lineno, line, len, NULL);
        break;
    }
    default:
        break;
    }
    return 0;
}
