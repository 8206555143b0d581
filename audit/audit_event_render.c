/* audit_event_render() (audit_event.h): the one place that writes an event as its network-log
 * line; the reading is audit_event.c. */
#include "audit/audit_event.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The line being written: escapes as it goes, stops (cut) at the first unit over max. */
typedef struct audit__out {
    char *buf;
    size_t max; /* text bytes, before the mark */
    size_t len;
    int cut;
} audit__out_t;

static void audit__put(audit__out_t *o, const char *p, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    for (size_t i = 0; i < n && !o->cut; i++) {
        unsigned char c = (unsigned char)p[i];
        int plain = c >= 0x20 && c < 0x7f;
        size_t w = plain ? 1 : 4;
        if (o->len + w > o->max) {
            o->cut = 1;
            break;
        }
        if (plain) {
            o->buf[o->len++] = (char)c;
        } else {
            o->buf[o->len++] = '\\';
            o->buf[o->len++] = 'x';
            o->buf[o->len++] = hexd[c >> 4];
            o->buf[o->len++] = hexd[c & 15];
        }
    }
}

static void audit__puts(audit__out_t *o, const char *s)
{
    audit__put(o, s, strlen(s));
}

static void audit__putv(audit__out_t *o, audit_str_t v)
{
    if (v.base != NULL)
        audit__put(o, v.base, v.len);
}

/* A view, or "-" when it is empty. */
static void audit__put_or_dash(audit__out_t *o, audit_str_t v)
{
    if (v.len == 0)
        audit__puts(o, "-");
    else
        audit__putv(o, v);
}

static void audit__put_uint(audit__out_t *o, unsigned long v)
{
    char n[24];
    int k = snprintf(n, sizeof(n), "%lu", v);
    audit__put(o, n, (size_t)k);
}

/* " (tail)" when there is one; always for the shapes whose parentheses are not optional. */
static void audit__put_tail(audit__out_t *o, const audit_event_t *ev, int always)
{
    if (ev->tail.len == 0 && !always)
        return;
    audit__puts(o, " (");
    audit__putv(o, ev->tail);
    audit__puts(o, ")");
}

static void audit__render_access(audit__out_t *o, const audit_event_t *ev)
{
    audit__puts(o, audit_event_verdict_word(ev->verdict));
    audit__puts(o, " ");
    audit__put_or_dash(o, ev->method);
    audit__puts(o, " ");
    audit__put_or_dash(o, ev->url);
    audit__puts(o, " -> ");
    if (ev->status >= 0)
        audit__put_uint(o, (unsigned long)ev->status);
    else
        audit__putv(o, ev->reason);
    audit__putv(o, ev->annot);
    if (ev->kind == AUDIT_EV_TUNNEL)
        audit__puts(o, " tunnel");
    audit__put_tail(o, ev, 0);
}

/* "DECISION hID approved|denied METHOD host path by who ([scope S, ]N request[s])". */
static int audit__render_decision(audit__out_t *o, const audit_event_t *ev)
{
    if (ev->verdict != AUDIT_EV_ALLOWED && ev->verdict != AUDIT_EV_BLOCKED)
        return -1;
    char id[40];
    int k = snprintf(id, sizeof(id), "DECISION h%" PRIu64, ev->hold);
    audit__put(o, id, (size_t)k);
    audit__puts(o, ev->verdict == AUDIT_EV_ALLOWED ? " approved " : " denied ");
    audit__put_or_dash(o, ev->method);
    audit__puts(o, " ");
    audit__put_or_dash(o, ev->host);
    audit__puts(o, " ");
    audit__put_or_dash(o, ev->path);
    audit__puts(o, " by ");
    audit__put_or_dash(o, ev->who);
    audit__puts(o, " (");
    if (ev->scope.len > 0) {
        audit__puts(o, "scope ");
        audit__putv(o, ev->scope);
        audit__puts(o, ", ");
    }
    audit__put_uint(o, ev->count);
    audit__puts(o, ev->count == 1 ? " request)" : " requests)");
    return 0;
}

static int audit__render(audit__out_t *o, const audit_event_t *ev)
{
    switch (ev->kind) {
    case AUDIT_EV_TASK_START:
        audit__puts(o, "=== TASK START ");
        audit__putv(o, ev->text);
        audit__puts(o, " ===");
        return 0;
    case AUDIT_EV_REQUEST:
    case AUDIT_EV_CONNECT:
    case AUDIT_EV_TUNNEL:
    case AUDIT_EV_CONNECTION:
        if (audit_event_verdict_word(ev->verdict)[0] == '\0')
            return -1;
        audit__render_access(o, ev);
        return 0;
    case AUDIT_EV_DNS:
        audit__puts(o, "DNS ");
        audit__putv(o, ev->dns_type);
        audit__puts(o, " ");
        audit__putv(o, ev->host);
        audit__puts(o, " -> ");
        audit__putv(o, ev->reason);
        return 0;
    case AUDIT_EV_STRIPPED:
    case AUDIT_EV_COLLAPSED:
        if (ev->kind == AUDIT_EV_STRIPPED) {
            audit__puts(o, "STRIPPED header '");
        } else {
            audit__puts(o, "COLLAPSED ");
            audit__put_uint(o, ev->count);
            audit__puts(o, " duplicate '");
        }
        audit__putv(o, ev->header);
        audit__puts(o, ev->kind == AUDIT_EV_STRIPPED ? "' from " : "' headers in ");
        audit__put_or_dash(o, ev->method);
        audit__puts(o, " ");
        audit__put_or_dash(o, ev->url);
        audit__put_tail(o, ev, 1);
        return 0;
    case AUDIT_EV_WARNING:
        audit__puts(o, "WARNING: ");
        audit__putv(o, ev->tail);
        return 0;
    case AUDIT_EV_TLS_REJECTED:
        audit__puts(o, "TLS REJECTED ");
        audit__putv(o, ev->host);
        audit__put_tail(o, ev, 1);
        return 0;
    case AUDIT_EV_GHAPP_TOKEN:
        audit__puts(o, "GitHub App token refresh failed for ");
        audit__put_or_dash(o, ev->method);
        audit__puts(o, " ");
        audit__put_or_dash(o, ev->url);
        audit__puts(o, ": ");
        audit__putv(o, ev->tail);
        return 0;
    case AUDIT_EV_GHAPP_REPOS:
        audit__puts(o, "GitHub App repo node ID resolution failed: ");
        audit__putv(o, ev->tail);
        return 0;
    case AUDIT_EV_GRAPHQL_SCOPE:
        audit__puts(o, "GraphQL repo-scope check failed: ");
        audit__putv(o, ev->tail);
        return 0;
    case AUDIT_EV_DECISION:
        return audit__render_decision(o, ev);
    default:
        return -1;
    }
}

int audit_event_render(const audit_event_t *ev, char *buf, size_t cap)
{
    size_t mark = strlen(AUDIT_EVENT_TRUNC_MARK);
    if (buf == NULL || cap < mark + 1)
        return -1;
    /* room for the mark and the NUL whatever is cut */
    size_t max = cap - 1 - mark < AUDIT_EVENT_TEXT_MAX ? cap - 1 - mark : AUDIT_EVENT_TEXT_MAX;
    audit__out_t o = {buf, max, 0, 0};
    if (audit__render(&o, ev) != 0) {
        buf[0] = '\0';
        return -1;
    }
    if (o.cut) {
        memcpy(buf + o.len, AUDIT_EVENT_TRUNC_MARK, mark);
        o.len += mark;
    }
    buf[o.len] = '\0';
    return (int)o.len;
}

audit_event_t audit_event_access(audit_event_kind_t kind, audit_event_verdict_t verdict,
                                 const char *method, const char *url, int status)
{
    audit_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = kind;
    ev.verdict = verdict;
    ev.method = audit_s(method);
    ev.url = audit_s(url);
    ev.status = status;
    return ev;
}

const char *audit_event_verdict_word(audit_event_verdict_t v)
{
    switch (v) {
    case AUDIT_EV_ALLOWED:
        return "allowed";
    case AUDIT_EV_BLOCKED:
        return "BLOCKED";
    case AUDIT_EV_ERROR:
        return "ERROR";
    case AUDIT_EV_WARN:
        return "WARN";
    default:
        return "";
    }
}
