#include "audit/audit_jread.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit_event.h"
#include "audit/audit_json.h"

/* The string member k of o as a view (empty when absent or not a string). */
static audit_str_t aj_get(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    audit_str_t s = {"", 0};
    if (json_is_string(v)) {
        s.base = json_string_value(v);
        s.len = json_string_length(v);
    }
    return s;
}

static void aj_add(char *buf, size_t cap, size_t *len, const char *p, size_t n)
{
    if (*len + n > cap) {
        *len = cap + 1; /* over: the caller gives up */
        return;
    }
    memcpy(buf + *len, p, n);
    *len += n;
}

/* The annotations as the text line writes them: "annot_text" when given, else " [k: v]" per
 * member of "annotations" in order. Returns the length, or -1 when over cap. */
static long aj_annot(json_t *o, char *buf, size_t cap)
{
    audit_str_t t = aj_get(o, "annot_text");
    size_t len = 0;
    if (t.len > 0) {
        aj_add(buf, cap, &len, t.base, t.len);
        return len > cap ? -1 : (long)len;
    }
    json_t *a = json_object_get(o, "annotations");
    const char *k;
    json_t *v;
    json_object_foreach(a, k, v)
    {
        char num[24];
        const char *vs = num;
        size_t vl;
        if (json_is_integer(v)) {
            vl = (size_t)snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        } else if (json_is_string(v)) {
            vs = json_string_value(v);
            vl = json_string_length(v);
        } else {
            continue;
        }
        aj_add(buf, cap, &len, " [", 2);
        aj_add(buf, cap, &len, k, strlen(k));
        aj_add(buf, cap, &len, ": ", 2);
        aj_add(buf, cap, &len, vs, vl);
        aj_add(buf, cap, &len, "]", 1);
    }
    return len > cap ? -1 : (long)len;
}

/* A line that was not an event: its text, escaped again as the log writes it. */
static int aj_other(audit_str_t t, char *out, size_t cap)
{
    static const char hexd[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < t.len; i++) {
        unsigned char c = (unsigned char)t.base[i];
        if (o + 5 > cap)
            return -1;
        if (c >= 0x20 && c < 0x7f) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hexd[c >> 4];
            out[o++] = hexd[c & 15];
        }
    }
    out[o] = '\0';
    return (int)o;
}

static audit_event_kind_t aj_kind(audit_str_t name)
{
    for (int k = AUDIT_EV_TASK_START; k <= AUDIT_EV_KIND_LAST; k++) {
        const char *n = audit_json_kind_name((audit_event_kind_t)k);
        if (n != NULL && audit_str_eq(name, n))
            return (audit_event_kind_t)k;
    }
    return AUDIT_EV_NONE;
}

/* Member key of o as an integer in [0, max], or fallback when absent, not an integer or out
 * of range. */
static long long aj_int(json_t *o, const char *key, long long max, long long fallback)
{
    json_t *n = json_object_get(o, key);
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > max)
        return fallback;
    return (long long)json_integer_value(n);
}

/* A DECISION's own members: "hold" ("h7"), "by", "scope", "path", "requests". 0, or -1 when
 * the hold is not an ID. */
static int aj_held(json_t *o, audit_event_t *ev)
{
    audit_str_t h = aj_get(o, "hold");
    if (h.len < 2 || h.len > 21 || h.base[0] != 'h' || (h.len > 2 && h.base[1] == '0'))
        return -1;
    ev->hold = 0;
    for (size_t i = 1; i < h.len; i++) {
        unsigned d = (unsigned)(h.base[i] - '0');
        if (h.base[i] < '0' || h.base[i] > '9' || ev->hold > (UINT64_MAX - d) / 10)
            return -1;
        ev->hold = ev->hold * 10 + d;
    }
    ev->who = aj_get(o, "by");
    ev->scope = aj_get(o, "scope");
    ev->path = aj_get(o, "path");
    ev->count = (unsigned)aj_int(o, "requests", 1000000, 0);
    return 0;
}

/* Fills ev from the object (views into o). Returns 0, or -1 when it is not an event. */
static int aj_event(json_t *o, audit_event_t *ev, char *annot, size_t acap)
{
    memset(ev, 0, sizeof(*ev));
    ev->kind = aj_kind(aj_get(o, "kind"));
    if (ev->kind == AUDIT_EV_NONE)
        return -1;
    audit_str_t d = aj_get(o, "decision");
    int held = ev->kind == AUDIT_EV_DECISION; /* approved, denied: its ALLOWED, BLOCKED */
    ev->verdict = audit_str_eq(d, held ? "approved" : "allowed") ? AUDIT_EV_ALLOWED
                  : audit_str_eq(d, held ? "denied" : "blocked") ? AUDIT_EV_BLOCKED
                  : !held && audit_str_eq(d, "error")            ? AUDIT_EV_ERROR
                                                                 : AUDIT_EV_V_NONE;
    ev->method = aj_get(o, "method");
    ev->url = aj_get(o, "url");
    ev->status = (int)aj_int(o, "status", 999, -1);
    ev->reason = ev->kind == AUDIT_EV_DNS ? aj_get(o, "dns_answer") : aj_get(o, "reason");
    ev->tail = aj_get(o, "detail");
    ev->host = aj_get(o, "host");
    ev->dns_type = aj_get(o, "dns_type");
    ev->header = aj_get(o, "header");
    ev->text = aj_get(o, "started");
    ev->count = (unsigned)aj_int(o, "count", 1000000, 0);
    if (ev->kind == AUDIT_EV_DECISION && aj_held(o, ev) != 0)
        return -1;
    long al = aj_annot(o, annot, acap);
    if (al < 0)
        return -1;
    ev->annot = (audit_str_t){annot, (size_t)al};
    return 0;
}

int audit_jread_line(const char *s, size_t len, char *out, size_t cap)
{
    json_error_t jerr;
    json_t *o = json_loadb(s, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    int rc = -1;
    if (!json_is_object(o))
        goto done;
    json_t *v = json_object_get(o, "v");
    if (!json_is_integer(v) || json_integer_value(v) < 1 ||
        json_integer_value(v) > AUDIT_JSON_VERSION)
        goto done;
    if (audit_str_eq(aj_get(o, "kind"), "other")) {
        rc = aj_other(aj_get(o, "text"), out, cap);
        goto done;
    }
    char annot[AUDIT_EVENT_LINE_CAP];
    audit_event_t ev;
    if (aj_event(o, &ev, annot, sizeof(annot)) == 0)
        rc = audit_event_render(&ev, out, cap);
done:
    json_decref(o);
    return rc;
}
