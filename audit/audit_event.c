#include "audit/audit_event.h"

#include <stdio.h>
#include <string.h>

#include "base/px_err.h"

/* proxy/px_int.h keeps a log URL in char url[2048]; an over-long one is cut to 2032 bytes plus
 * "..." (px__build_url). A URL of that length ending in "..." was cut. */
#define AUDIT__PX_URL_CUT_LEN (2048 - 16 + 3)
#define AUDIT__METHOD_MAX 32 /* the proxy keeps 23 bytes of a method */
#define AUDIT__HOST_MAX 255  /* a host name, once unescaped */

audit_str_t audit_s(const char *s)
{
    audit_str_t v = {s != NULL ? s : "", s != NULL ? strlen(s) : 0};
    return v;
}

static const signed char audit__hex[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int audit_str_eq(audit_str_t a, const char *b)
{
    size_t n = strlen(b);
    return a.len == n && (n == 0 || memcmp(a.base, b, n) == 0);
}

/* The bytes up to the first space (or the end). */
static audit_str_t audit__word(audit_str_t s)
{
    const char *sp = memchr(s.base, ' ', s.len);
    audit_str_t w = {s.base, sp != NULL ? (size_t)(sp - s.base) : s.len};
    return w;
}

static int audit__fail(audit_event_t *out, const char *why)
{
    out->kind = AUDIT_EV_NONE;
    out->why = why;
    return PX_EPARSE;
}

/* A method: an HTTP token as llhttp names it, or "-". */
static int audit__method_ok(audit_str_t m)
{
    if (m.len == 0 || m.len > AUDIT__METHOD_MAX)
        return 0;
    for (size_t i = 0; i < m.len; i++) {
        unsigned char c = (unsigned char)m.base[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                 (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
        if (!ok)
            return 0;
    }
    return 1;
}

int audit_str_digits(audit_str_t s, unsigned long max, unsigned long *v)
{
    if (s.len == 0 || s.len > 10)
        return PX_EPARSE;
    unsigned long n = 0;
    for (size_t i = 0; i < s.len; i++) {
        if (s.base[i] < '0' || s.base[i] > '9')
            return PX_EPARSE;
        n = n * 10 + (unsigned long)(s.base[i] - '0');
    }
    if (n > max)
        return PX_EPARSE;
    *v = n;
    return 0;
}

size_t audit_unescape(audit_str_t s, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.base[i];
        if (c == '\\' && i + 3 < s.len && s.base[i + 1] == 'x' &&
            audit__hex[(unsigned char)s.base[i + 2]] && audit__hex[(unsigned char)s.base[i + 3]]) {
            unsigned v = (unsigned)(((audit__hex[(unsigned char)s.base[i + 2]] - 1) << 4) |
                                    (audit__hex[(unsigned char)s.base[i + 3]] - 1));
            if (v < 0x20 || v >= 0x7f) {
                c = (unsigned char)v;
                i += 3;
            }
        }
        if (o >= cap)
            return (size_t)-1;
        out[o++] = (char)c;
    }
    return o;
}

/* The unescaped length of s (each \xNN of a non-printable byte counts one). */
static size_t audit__raw_len(audit_str_t s)
{
    size_t n = 0;
    for (size_t i = 0; i < s.len; i++, n++) {
        if (s.base[i] == '\\' && i + 3 < s.len && s.base[i + 1] == 'x' &&
            audit__hex[(unsigned char)s.base[i + 2]] && audit__hex[(unsigned char)s.base[i + 3]]) {
            unsigned v = (unsigned)(((audit__hex[(unsigned char)s.base[i + 2]] - 1) << 4) |
                                    (audit__hex[(unsigned char)s.base[i + 3]] - 1));
            if (v < 0x20 || v >= 0x7f)
                i += 3;
        }
    }
    return n;
}

/* "host[:port]" or "[v6][:port]" from a (escaped). */
static int audit__authority(audit_str_t a, int need_port, audit_url_t *u)
{
    if (a.len == 0)
        return PX_EPARSE;
    size_t i;
    if (a.base[0] == '[') {
        const char *close = memchr(a.base, ']', a.len);
        if (close == NULL || close == a.base + 1)
            return PX_EPARSE;
        u->host.base = a.base + 1;
        u->host.len = (size_t)(close - a.base - 1);
        u->bracketed = 1;
        i = (size_t)(close - a.base) + 1;
    } else {
        const char *colon = memchr(a.base, ':', a.len);
        i = colon != NULL ? (size_t)(colon - a.base) : a.len;
        u->host.base = a.base;
        u->host.len = i;
    }
    if (u->host.len == 0 || u->host.len > AUDIT__HOST_MAX * 4)
        return PX_EPARSE;
    for (size_t k = 0; k < u->host.len; k++) {
        char c = u->host.base[k];
        if (c == '/' || c == '?' || c == '[' || c == ']' || (!u->bracketed && c == ':'))
            return PX_EPARSE;
    }
    if (i == a.len)
        return need_port ? PX_EPARSE : 0;
    if (a.base[i] != ':')
        return PX_EPARSE;
    unsigned long p;
    audit_str_t ps = {a.base + i + 1, a.len - i - 1};
    if (audit_str_digits(ps, 65535, &p) != 0 || p == 0)
        return PX_EPARSE;
    u->port = (uint16_t)p;
    u->port_given = 1;
    return 0;
}

int audit_url_parse(audit_str_t url, int authority, audit_url_t *out)
{
    memset(out, 0, sizeof(*out));
    audit_url_t u = {0};
    if (authority) {
        u.authority = 1;
        u.tls = 1;
        if (audit__authority(url, 1, &u) != 0)
            return PX_EPARSE;
        u.ok = 1;
        *out = u;
        return 0;
    }
    audit_str_t rest;
    if (audit_str_starts(url, "https://")) {
        u.tls = 1;
        rest = audit_str_skip(url, 8);
    } else if (audit_str_starts(url, "http://")) {
        rest = audit_str_skip(url, 7);
    } else {
        return PX_EPARSE;
    }
    size_t alen = 0;
    while (alen < rest.len && rest.base[alen] != '/' && rest.base[alen] != '?')
        alen++;
    audit_str_t auth = {rest.base, alen};
    u.path.base = rest.base + alen;
    u.path.len = rest.len - alen;
    if (u.path.len == 0 && alen > 1 && rest.base[alen - 1] == '*') {
        /* OPTIONS *: the proxy wrote the target right after the authority */
        auth.len--;
        u.path.base = rest.base + alen - 1;
        u.path.len = 1;
    }
    if (u.path.len == 0)
        return PX_EPARSE;
    if (audit__authority(auth, 0, &u) != 0)
        return PX_EPARSE;
    if (!u.port_given)
        u.port = u.tls ? 443 : 80;
    /* the "..." first: counting the unescaped length walks the whole URL */
    u.cut = url.len >= 3 && memcmp(url.base + url.len - 3, "...", 3) == 0 &&
            audit__raw_len(url) == AUDIT__PX_URL_CUT_LEN;
    u.ok = 1;
    *out = u;
    return 0;
}

/* " [k: v]"... then "", " tunnel", " tunnel (tail)" or " (tail)". */
static int audit__access_rest(audit_str_t r, audit_event_t *out)
{
    out->annot.base = r.base;
    while (audit_str_starts(r, " [")) {
        /* brackets nest: "[tool-domains: web_fetch_1: forced allowed_domains: []]" */
        const char *close = NULL;
        size_t depth = 0;
        for (size_t i = 1; i < r.len && close == NULL; i++) {
            if (r.base[i] == '[')
                depth++;
            else if (r.base[i] == ']' && --depth == 0)
                close = r.base + i;
        }
        if (close == NULL)
            return PX_EPARSE;
        audit_str_t in = {r.base + 2, (size_t)(close - r.base - 2)};
        unsigned long v;
        if (audit_str_starts(in, "masked: ") &&
            audit_str_digits(audit_str_skip(in, 8), 1000000, &v) == 0)
            out->masked = (unsigned)v;
        else if (audit_str_starts(in, "dropped: ") &&
                 audit_str_digits(audit_str_skip(in, 9), 1000000, &v) == 0)
            out->dropped = (unsigned)v;
        r = audit_str_skip(r, (size_t)(close - r.base) + 1);
    }
    out->annot.len = (size_t)(r.base - out->annot.base);
    if (audit_str_starts(r, " tunnel") &&
        (r.len == 7 || audit_str_starts(audit_str_skip(r, 7), " ("))) {
        out->kind = AUDIT_EV_TUNNEL;
        r = audit_str_skip(r, 7);
    }
    if (r.len == 0)
        return 0;
    /* an empty " ()" is not written: a record without a tail has no parentheses */
    if (r.len > 3 && audit_str_starts(r, " (") && r.base[r.len - 1] == ')') {
        out->tail.base = r.base + 2;
        out->tail.len = r.len - 3;
        return 0;
    }
    return PX_EPARSE;
}

/* The text in place of a status: an ERROR's whole reason; else "word[ (tail)]". */
static int audit__access_reason(audit_str_t s, audit_event_t *out)
{
    out->status = -1;
    out->reason = s;
    if (out->verdict == AUDIT_EV_ERROR)
        return 0;
    long paren = audit_str_find(s, " (");
    if (paren == 0)
        return PX_EPARSE;
    if (paren > 0) {
        if (s.base[s.len - 1] != ')' || s.len == (size_t)paren + 3)
            return PX_EPARSE;
        out->reason.len = (size_t)paren;
        out->tail.base = s.base + paren + 2;
        out->tail.len = s.len - (size_t)paren - 3;
    }
    out->kind = AUDIT_EV_CONNECTION;
    return 0;
}

static int audit__access(audit_str_t s, audit_event_t *out)
{
    audit_str_t w = audit__word(s);
    if (audit_str_eq(w, "allowed"))
        out->verdict = AUDIT_EV_ALLOWED;
    else if (audit_str_eq(w, "BLOCKED"))
        out->verdict = AUDIT_EV_BLOCKED;
    else if (audit_str_eq(w, "WARN"))
        out->verdict = AUDIT_EV_WARN; /* warn mode: forwarded, the allowlist would block it */
    else
        out->verdict = AUDIT_EV_ERROR;
    out->kind = AUDIT_EV_REQUEST;
    s = audit_str_skip(s, w.len);
    if (!audit_str_starts(s, " "))
        return audit__fail(out, "no method");
    s = audit_str_skip(s, 1);
    out->method = audit__word(s);
    if (!audit__method_ok(out->method))
        return audit__fail(out, "bad method");
    /* a SOCKS request is decided like a CONNECT and logged like one (method SOCKS) */
    int authority = audit_str_eq(out->method, "CONNECT") || audit_str_eq(out->method, "SOCKS");
    if (authority)
        out->kind = AUDIT_EV_CONNECT;
    s = audit_str_skip(s, out->method.len);
    if (!audit_str_starts(s, " "))
        return audit__fail(out, "no URL");
    s = audit_str_skip(s, 1);
    long arrow = audit_str_find(s, " -> ");
    if (arrow <= 0)
        return audit__fail(out, "no ' -> '");
    out->url.base = s.base;
    out->url.len = (size_t)arrow;
    if (memchr(out->url.base, ' ', out->url.len) != NULL)
        return audit__fail(out, "space in the URL");
    s = audit_str_skip(s, (size_t)arrow + 4);
    if (s.len == 0)
        return audit__fail(out, "nothing after ' -> '");
    int is_status = s.len >= 3 && s.base[0] >= '1' && s.base[0] <= '9' && s.base[1] >= '0' &&
                    s.base[1] <= '9' && s.base[2] >= '0' && s.base[2] <= '9' &&
                    (s.len == 3 || s.base[3] == ' ');
    if (is_status) {
        out->status = (s.base[0] - '0') * 100 + (s.base[1] - '0') * 10 + (s.base[2] - '0');
        if (audit__access_rest(audit_str_skip(s, 3), out) != 0)
            return audit__fail(out, "unexpected text after the status");
    } else if (audit__access_reason(s, out) != 0) {
        return audit__fail(out, "no status");
    }
    if (!audit_str_eq(out->url, "-"))
        audit_url_parse(out->url, authority, &out->url_parts);
    return 0;
}

/* "METHOD URL (text)" at the end of STRIPPED and COLLAPSED lines. */
static int audit__method_url_paren(audit_str_t s, audit_event_t *out)
{
    out->method = audit__word(s);
    if (!audit__method_ok(out->method))
        return PX_EPARSE;
    s = audit_str_skip(s, out->method.len);
    if (!audit_str_starts(s, " "))
        return PX_EPARSE;
    s = audit_str_skip(s, 1);
    out->url = audit__word(s);
    s = audit_str_skip(s, out->url.len);
    if (out->url.len == 0 || s.len < 3 || !audit_str_starts(s, " (") || s.base[s.len - 1] != ')')
        return PX_EPARSE;
    out->tail.base = s.base + 2;
    out->tail.len = s.len - 3;
    if (!audit_str_eq(out->url, "-"))
        audit_url_parse(out->url, 0, &out->url_parts);
    return 0;
}

/* "'name'" then sep. */
static int audit__quoted(audit_str_t *s, audit_str_t *name, const char *sep)
{
    if (!audit_str_starts(*s, "'"))
        return PX_EPARSE;
    const char *q = memchr(s->base + 1, '\'', s->len - 1);
    if (q == NULL || q == s->base + 1)
        return PX_EPARSE;
    name->base = s->base + 1;
    name->len = (size_t)(q - s->base - 1);
    *s = audit_str_skip(*s, name->len + 2);
    if (!audit_str_starts(*s, sep))
        return PX_EPARSE;
    *s = audit_str_skip(*s, strlen(sep));
    return 0;
}

static int audit__dns(audit_str_t s, audit_event_t *out)
{
    s = audit_str_skip(s, 4);
    out->dns_type = audit__word(s);
    if (out->dns_type.len == 0 || out->dns_type.len > 16)
        return audit__fail(out, "bad DNS type");
    s = audit_str_skip(s, out->dns_type.len);
    if (!audit_str_starts(s, " "))
        return audit__fail(out, "no DNS name");
    s = audit_str_skip(s, 1);
    out->host = audit__word(s);
    if (out->host.len == 0)
        return audit__fail(out, "no DNS name");
    s = audit_str_skip(s, out->host.len);
    if (!audit_str_starts(s, " -> ") || s.len == 4)
        return audit__fail(out, "no DNS answer");
    out->reason = audit_str_skip(s, 4);
    if (memchr(out->reason.base, ' ', out->reason.len) != NULL)
        return audit__fail(out, "bad DNS answer");
    out->kind = AUDIT_EV_DNS;
    return 0;
}

static int audit__stripped(audit_str_t s, audit_event_t *out)
{
    audit_str_t r = audit_str_skip(s, 16);
    if (audit__quoted(&r, &out->header, " from ") != 0 || audit__method_url_paren(r, out) != 0)
        return audit__fail(out, "bad STRIPPED line");
    out->kind = AUDIT_EV_STRIPPED;
    return 0;
}

static int audit__collapsed(audit_str_t s, audit_event_t *out)
{
    audit_str_t r = audit_str_skip(s, 10);
    audit_str_t n = audit__word(r);
    unsigned long v;
    if (audit_str_digits(n, 1000000, &v) != 0 || (n.len > 1 && n.base[0] == '0'))
        return audit__fail(out, "bad COLLAPSED line"); /* written %zu: no leading zero */
    out->count = (unsigned)v;
    r = audit_str_skip(r, n.len);
    if (!audit_str_starts(r, " duplicate "))
        return audit__fail(out, "bad COLLAPSED line");
    r = audit_str_skip(r, 11);
    if (audit__quoted(&r, &out->header, " headers in ") != 0 ||
        audit__method_url_paren(r, out) != 0)
        return audit__fail(out, "bad COLLAPSED line");
    out->kind = AUDIT_EV_COLLAPSED;
    return 0;
}

/* The GitHub App credential's own lines (docs/replacements.md). */
static int audit__github(audit_str_t s, audit_event_t *out)
{
    static const char token[] = "GitHub App token refresh failed for ";
    static const char repos[] = "GitHub App repo node ID resolution failed: ";
    static const char scope[] = "GraphQL repo-scope check failed: ";
    if (audit_str_starts(s, repos) || audit_str_starts(s, scope)) {
        int is_repos = audit_str_starts(s, repos);
        out->tail = audit_str_skip(s, is_repos ? sizeof(repos) - 1 : sizeof(scope) - 1);
        out->kind = is_repos ? AUDIT_EV_GHAPP_REPOS : AUDIT_EV_GRAPHQL_SCOPE;
        out->verdict = is_repos ? AUDIT_EV_ERROR : AUDIT_EV_BLOCKED;
        return 0;
    }
    if (!audit_str_starts(s, token))
        return audit__fail(out, "not a network-log line");
    audit_str_t r = audit_str_skip(s, sizeof(token) - 1);
    out->method = audit__word(r);
    if (!audit__method_ok(out->method) ||
        !audit_str_starts(audit_str_skip(r, out->method.len), " "))
        return audit__fail(out, "bad GitHub App line");
    r = audit_str_skip(r, out->method.len + 1);
    long colon = audit_str_find(r, ": ");
    if (colon <= 0)
        return audit__fail(out, "bad GitHub App line");
    out->url.base = r.base;
    out->url.len = (size_t)colon;
    out->tail = audit_str_skip(r, (size_t)colon + 2);
    if (!audit_str_eq(out->url, "-"))
        audit_url_parse(out->url, 0, &out->url_parts);
    out->kind = AUDIT_EV_GHAPP_TOKEN;
    out->verdict = AUDIT_EV_ERROR;
    return 0;
}

/* The last position of needle in s, or -1. */
static long audit__rfind(audit_str_t s, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = s.len; n > 0 && i >= n; i--)
        if (memcmp(s.base + i - n, needle, n) == 0)
            return (long)(i - n);
    return -1;
}

/* A number as written by %llu: digits without a leading zero, within 64 bits. */
static int audit__u64(audit_str_t s, uint64_t *v)
{
    if (s.len == 0 || s.len > 20 || (s.len > 1 && s.base[0] == '0'))
        return PX_EPARSE;
    uint64_t n = 0;
    for (size_t i = 0; i < s.len; i++) {
        unsigned d = (unsigned)(s.base[i] - '0');
        if (s.base[i] < '0' || s.base[i] > '9' || n > (UINT64_MAX - d) / 10)
            return PX_EPARSE;
        n = n * 10 + d;
    }
    *v = n;
    return 0;
}

/* "[scope S, ]N request[s]" inside a DECISION's parentheses: the plural as render writes it. */
static int audit__decision_tail(audit_str_t t, audit_event_t *out)
{
    if (audit_str_starts(t, "scope ")) {
        long comma = audit_str_find(t, ", ");
        if (comma <= 6)
            return PX_EPARSE;
        out->scope.base = t.base + 6;
        out->scope.len = (size_t)comma - 6;
        if (memchr(out->scope.base, ' ', out->scope.len) != NULL)
            return PX_EPARSE;
        t = audit_str_skip(t, (size_t)comma + 2);
    }
    audit_str_t n = audit__word(t);
    uint64_t v;
    if (audit__u64(n, &v) != 0 || v > 1000000)
        return PX_EPARSE;
    out->count = (unsigned)v;
    t = audit_str_skip(t, n.len);
    return audit_str_eq(t, v == 1 ? " request" : " requests") ? 0 : PX_EPARSE;
}

/* "DECISION hID approved|denied METHOD host path by who (...)": who is the text after the last
 * " by " (airlock's own words: "uid N", "webhook"), so a path holding " by " still reads. */
static int audit__decision(audit_str_t s, audit_event_t *out)
{
    audit_str_t r = audit_str_skip(s, 9), w = audit__word(r);
    if (w.len < 2 || w.base[0] != 'h' || audit__u64(audit_str_skip(w, 1), &out->hold) != 0)
        return audit__fail(out, "bad DECISION hold ID");
    r = audit_str_skip(r, w.len);
    if (audit_str_starts(r, " approved "))
        out->verdict = AUDIT_EV_ALLOWED;
    else if (audit_str_starts(r, " denied "))
        out->verdict = AUDIT_EV_BLOCKED;
    else
        return audit__fail(out, "bad DECISION outcome");
    r = audit_str_skip(r, out->verdict == AUDIT_EV_ALLOWED ? 10 : 8);
    out->method = audit__word(r);
    if (!audit__method_ok(out->method) ||
        !audit_str_starts(audit_str_skip(r, out->method.len), " "))
        return audit__fail(out, "bad DECISION method");
    r = audit_str_skip(r, out->method.len + 1);
    out->host = audit__word(r);
    r = audit_str_skip(r, out->host.len);
    long paren = audit__rfind(r, " (");
    if (out->host.len == 0 || !audit_str_starts(r, " ") || paren <= 0 || r.base[r.len - 1] != ')')
        return audit__fail(out, "bad DECISION line");
    audit_str_t tail = {r.base + paren + 2, r.len - (size_t)paren - 3};
    audit_str_t head = {r.base + 1, (size_t)paren - 1};
    long by = audit__rfind(head, " by ");
    if (by <= 0 || (size_t)by + 4 == head.len)
        return audit__fail(out, "bad DECISION line");
    out->path.base = head.base;
    out->path.len = (size_t)by;
    out->who = audit_str_skip(head, (size_t)by + 4);
    if (audit__decision_tail(tail, out) != 0)
        return audit__fail(out, "bad DECISION requests");
    out->kind = AUDIT_EV_DECISION;
    return 0;
}

static int audit__dispatch(audit_str_t s, audit_event_t *out)
{
    if (s.len == 0) {
        out->kind = AUDIT_EV_BLANK;
        return 0;
    }
    if (audit_str_starts(s, "=== TASK START ")) {
        audit_str_t t = audit_str_skip(s, 15);
        if (t.len <= 4 || memcmp(t.base + t.len - 4, " ===", 4) != 0)
            return audit__fail(out, "bad TASK START line");
        out->text.base = t.base;
        out->text.len = t.len - 4;
        if (memchr(out->text.base, ' ', out->text.len) != NULL)
            return audit__fail(out, "bad TASK START line");
        out->kind = AUDIT_EV_TASK_START;
        return 0;
    }
    if (audit_str_starts(s, "allowed ") || audit_str_starts(s, "BLOCKED ") ||
        audit_str_starts(s, "ERROR ") || audit_str_starts(s, "WARN "))
        return audit__access(s, out);
    if (audit_str_starts(s, "DNS "))
        return audit__dns(s, out);
    if (audit_str_starts(s, "STRIPPED header "))
        return audit__stripped(s, out);
    if (audit_str_starts(s, "COLLAPSED "))
        return audit__collapsed(s, out);
    if (audit_str_starts(s, "WARNING: ")) {
        out->tail = audit_str_skip(s, 9);
        out->kind = AUDIT_EV_WARNING;
        out->verdict = AUDIT_EV_WARN;
        return 0;
    }
    if (audit_str_starts(s, "DECISION "))
        return audit__decision(s, out);
    if (audit_str_starts(s, "TLS REJECTED ")) {
        audit_str_t r = audit_str_skip(s, 13);
        out->host = audit__word(r);
        r = audit_str_skip(r, out->host.len);
        if (out->host.len == 0 || r.len < 3 || !audit_str_starts(r, " (") ||
            r.base[r.len - 1] != ')')
            return audit__fail(out, "bad TLS REJECTED line");
        out->tail.base = r.base + 2;
        out->tail.len = r.len - 3;
        out->kind = AUDIT_EV_TLS_REJECTED;
        out->verdict = AUDIT_EV_REJECTED;
        return 0;
    }
    return audit__github(s, out);
}

int audit_event_parse(const char *s, size_t len, audit_event_t *out)
{
    memset(out, 0, sizeof(*out));
    out->status = -1;
    if (len > AUDIT_EVENT_TEXT_MAX + 64)
        return audit__fail(out, "line over the length cap");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c >= 0x7f) {
            /* the proxy escapes these: a raw one means the line is not airlock's */
            if (!(c == '\r' && i + 1 == len))
                return audit__fail(out, "raw control or non-ASCII byte");
            len--;
        }
    }
    audit_str_t line = {s, len};
    size_t mark = strlen(AUDIT_EVENT_TRUNC_MARK);
    if (len >= mark && memcmp(s + len - mark, AUDIT_EVENT_TRUNC_MARK, mark) == 0) {
        out->truncated = 1;
        line.len -= mark;
    }
    int rc = audit__dispatch(line, out);
    if (rc != 0 && out->truncated)
        out->why = "cut by the proxy's line cap";
    return rc;
}
