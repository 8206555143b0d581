/* The audit tools' view of a line: audit_event_parse() (the module that also writes every line)
 * read into the audit_line_t the tools were written against. */
#include "audit/audit_line.h"

#include <string.h>

#include "base/px_err.h"

static int audit__fail(audit_line_t *out, const char *why)
{
    out->kind = AUDIT_LINE_MALFORMED;
    out->why = why;
    return PX_EPARSE;
}

static const audit_line_kind_t audit__kinds[] = {
    [AUDIT_EV_NONE] = AUDIT_LINE_MALFORMED,
    [AUDIT_EV_BLANK] = AUDIT_LINE_BLANK,
    [AUDIT_EV_TASK_START] = AUDIT_LINE_TASK_START,
    [AUDIT_EV_REQUEST] = AUDIT_LINE_ACCESS,
    [AUDIT_EV_CONNECT] = AUDIT_LINE_ACCESS,
    [AUDIT_EV_TUNNEL] = AUDIT_LINE_ACCESS,
    [AUDIT_EV_CONNECTION] = AUDIT_LINE_ACCESS,
    [AUDIT_EV_DNS] = AUDIT_LINE_DNS,
    [AUDIT_EV_STRIPPED] = AUDIT_LINE_STRIPPED,
    [AUDIT_EV_COLLAPSED] = AUDIT_LINE_COLLAPSED,
    [AUDIT_EV_WARNING] = AUDIT_LINE_WARNING,
    [AUDIT_EV_TLS_REJECTED] = AUDIT_LINE_TLS_REJECTED,
    /* the GitHub App lines: not lines the tools count (as before the event module) */
    [AUDIT_EV_GHAPP_TOKEN] = AUDIT_LINE_MALFORMED,
    [AUDIT_EV_GHAPP_REPOS] = AUDIT_LINE_MALFORMED,
    [AUDIT_EV_GRAPHQL_SCOPE] = AUDIT_LINE_MALFORMED,
    [AUDIT_EV_DECISION] = AUDIT_LINE_DECISION,
};

/* The request-shaped fields. The tools count a refusal by its status: a BLOCKED line without
 * one (a connection refused whole: "-> closed") and a tunnel line with a tail are not lines
 * they read, as before the event module. */
static int audit__access(const audit_event_t *ev, audit_line_t *out)
{
    if (ev->verdict != AUDIT_EV_ERROR && ev->status < 0)
        return audit__fail(out, "no status");
    if (ev->kind == AUDIT_EV_TUNNEL && ev->tail.len > 0)
        return audit__fail(out, "unexpected text after the status");
    out->verdict = ev->verdict == AUDIT_EV_ALLOWED   ? AUDIT_ALLOWED
                   : ev->verdict == AUDIT_EV_BLOCKED ? AUDIT_BLOCKED
                   : ev->verdict == AUDIT_EV_WARN    ? AUDIT_WARNED
                                                     : AUDIT_ERROR;
    out->status = ev->status;
    out->annot = ev->annot;
    out->masked = ev->masked;
    out->dropped = ev->dropped;
    out->tail = ev->status < 0 ? ev->reason : ev->tail;
    out->tunnel = ev->kind == AUDIT_EV_TUNNEL;
    return 0;
}

int audit_line_parse(const char *s, size_t len, audit_line_t *out)
{
    memset(out, 0, sizeof(*out));
    out->status = -1;
    audit_event_t ev;
    int rc = audit_event_parse(s, len, &ev);
    out->truncated = ev.truncated;
    if (rc != 0)
        return audit__fail(out, ev.why);
    out->kind = audit__kinds[ev.kind];
    if (out->kind == AUDIT_LINE_MALFORMED)
        return audit__fail(out, out->truncated ? "cut by the proxy's line cap"
                                               : "not a network-log line");
    out->method = ev.method;
    out->url_text = ev.url;
    out->url = ev.url_parts;
    switch (out->kind) {
    case AUDIT_LINE_ACCESS:
        rc = audit__access(&ev, out);
        break;
    case AUDIT_LINE_DNS:
        out->dns_type = ev.dns_type;
        out->dns_name = ev.host;
        out->dns_answer = ev.reason;
        break;
    case AUDIT_LINE_STRIPPED:
    case AUDIT_LINE_COLLAPSED:
        out->header = ev.header;
        out->count = ev.count;
        out->reason = ev.tail;
        break;
    case AUDIT_LINE_TASK_START:
        out->text = ev.text;
        break;
    case AUDIT_LINE_WARNING:
        out->text = ev.tail;
        break;
    case AUDIT_LINE_TLS_REJECTED:
        out->text = ev.host;
        out->reason = ev.tail;
        break;
    case AUDIT_LINE_DECISION:
        out->verdict = ev.verdict == AUDIT_EV_ALLOWED ? AUDIT_ALLOWED : AUDIT_BLOCKED;
        out->count = ev.count;
        out->text = ev.who;
        out->reason = ev.scope;
        break;
    default:
        break;
    }
    if (rc != 0 && out->truncated)
        out->why = "cut by the proxy's line cap";
    return rc;
}
