#include "audit/audit_req.h"

#include <stdio.h>
#include <string.h>

#include "base/px_err.h"

/* Tails of BLOCKED/ERROR lines written after the allowlist had let the request through. */
static const char *const audit__after_policy[] = {
    "credential needs https",
    "credential masking failed",
    "request body over the limit",
    NULL,
};

static int audit__not(audit_req_t *r, const char *why)
{
    r->redecidable = 0;
    r->not_why = why;
    return 0;
}

/* Whether a request the log shows as blocked or failed had passed the allowlist; -1 when the
 * line does not say (another check decided it). */
static int audit__then_allowed(const audit_line_t *l)
{
    if (l->verdict == AUDIT_ALLOWED)
        return 1;
    if (l->verdict == AUDIT_WARNED)
        return 0; /* warn mode let it go on: the allowlist would have blocked it */
    if (l->verdict == AUDIT_ERROR)
        return 1; /* upstream failures, signing failures: all after the policy */
    if (l->status == 403 && l->tail.len == 0)
        return 0;
    if (l->status == 413)
        return 1;
    for (const char *const *t = audit__after_policy; *t != NULL; t++) {
        if (audit_str_eq(l->tail, *t))
            return 1;
    }
    return -1;
}

int audit_req_from_line(const audit_line_t *l, audit_req_t *r)
{
    r->redecidable = 0;
    r->not_why = NULL;
    r->connect = 0;
    if (l->kind != AUDIT_LINE_ACCESS)
        return audit__not(r, "not an access line");
    if (l->status == 400 || l->status == 431)
        return audit__not(r, "airlock's own 400/431 answer to a malformed request (before the "
                             "allowlist)");
    if (l->status == 408)
        return audit__not(r, "request head not received in time: 408 (before the allowlist)");
    if (audit_str_starts(l->tail, "host mismatch"))
        return audit__not(r, "host mismatch (decided before the allowlist)");
    if (audit_str_eq(l->tail, "tunneling not allowed"))
        return audit__not(r, "CONNECT on port 80/443, refused before the allowlist");
    if (audit_str_starts(l->tail, "tunnel:"))
        return audit__not(r, "passthrough tunnel closed before a TLS ClientHello (the CONNECT "
                             "has its own line)");
    if (audit_str_eq(l->tail, "internal error in an addon"))
        return audit__not(r, "internal error in an addon (the allowlist's verdict is unknown)");
    if (l->truncated)
        return audit__not(r, "line cut at the proxy's line cap");
    if (audit_str_eq(l->method, "-") || audit_str_eq(l->url_text, "-"))
        return audit__not(r, "no method or URL in the line");
    if (!l->url.ok)
        return audit__not(r, "URL could not be read");
    if (l->url.cut)
        return audit__not(r, "URL cut at the proxy's 2 KiB cap");
    int connect = audit_str_eq(l->method, "CONNECT") || audit_str_eq(l->method, "SOCKS");
    int then;
    if (connect) {
        if (l->verdict == AUDIT_ALLOWED && l->status == 200)
            then = 1;
        else if ((l->verdict == AUDIT_BLOCKED && l->status == 403 && l->tail.len == 0) ||
                 (l->verdict == AUDIT_WARNED && l->status == 200))
            then = 0;
        else
            return audit__not(r, "CONNECT line not decided by the allowlist");
    } else {
        then = audit__then_allowed(l);
        if (then < 0)
            return audit__not(r, "blocked by a check other than the allowlist");
    }
    size_t hl = audit_unescape(l->url.host, r->host, sizeof(r->host));
    if (hl == (size_t)-1)
        return audit__not(r, "host longer than 255 bytes");
    for (size_t i = 0; i < hl; i++) {
        if (r->host[i] >= 'A' && r->host[i] <= 'Z')
            r->host[i] = (char)(r->host[i] + ('a' - 'A'));
    }
    if (hl > 0 && r->host[hl - 1] == '.')
        hl--;
    if (hl == 0)
        return audit__not(r, "URL could not be read");
    r->host_len = hl;
    r->host[hl] = '\0';
    r->path_len = 0;
    if (!connect) {
        size_t pl = audit_unescape(l->url.path, r->path, sizeof(r->path));
        if (pl == (size_t)-1)
            return audit__not(r, "URL could not be read");
        r->path_len = pl;
    }
    memcpy(r->method, l->method.base, l->method.len);
    r->method[l->method.len] = '\0';
    r->port = l->url.port;
    r->tls = l->url.tls;
    r->connect = connect;
    r->then_allowed = then;
    r->redecidable = 1;
    return 0;
}

addon_policy_query_t audit_req_query(const audit_req_t *r)
{
    addon_policy_query_t q = {
        .method = {r->method, strlen(r->method)},
        .host = {r->host, r->host_len},
        .path = {r->path, r->path_len},
        .port = r->port,
        .tls = r->tls,
    };
    return q;
}

int audit_req_decide(const addon_policy_t *p, const audit_req_t *r, char *why, size_t whylen)
{
    if (r->connect) {
        addon_str_t h = {r->host, r->host_len};
        int ok = addon_policy_has_host(p, h, r->port, 1, NULL);
        if (why != NULL && whylen > 0)
            snprintf(why, whylen, "%s: %s entry names host %.*s with port %u",
                     ok ? "allowed" : "blocked", ok ? "an" : "no", (int)r->host_len, r->host,
                     r->port);
        return ok;
    }
    addon_policy_query_t q = audit_req_query(r);
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    if (why != NULL && whylen > 0)
        addon_policy_explain(p, &q, &d, why, whylen);
    return d.allowed ? 1 : 0;
}

addon_policy_t *audit_req_probe_policy(void)
{
    static const char probe[] = "url_prefixes:\n  - host: \"*\"\n";
    addon_policy_t *p = NULL;
    char err[256];
    if (addon_policy_load_buffer("(allow everything)", probe, sizeof(probe) - 1, &p, err,
                                 sizeof(err)) != 0)
        return NULL;
    return p;
}

int audit_req_unallowable(const addon_policy_t *probe, const audit_req_t *r, char *why,
                          size_t whylen)
{
    if (r->connect)
        return 0;
    addon_policy_query_t q = audit_req_query(r);
    q.port = r->tls ? 443 : 80;
    addon_policy_decision_t d;
    addon_policy_decide(probe, &q, &d);
    if (d.allowed)
        return 0;
    if (why != NULL && whylen > 0)
        addon_policy_explain(probe, &q, &d, why, whylen);
    return 1;
}
