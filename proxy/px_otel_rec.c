/* One JSON audit event (docs/events.md) as an OTLP LogRecord (docs/otel.md, "The record"):
 * run on the exporter's thread, never on a loop. */
#include "proxy/px_otel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "audit/audit_event.h"
#include "audit/audit_jread.h"

/* Members that become a semantic-convention attribute as they are; the rest (and those below
 * with a special form) are airlock.<member>. */
static const struct {
    const char *member, *attr;
} px__same[] = {
    {"url", "url.full"},
    {"scheme", "url.scheme"},
    {"status", "http.response.status_code"},
    {"bytes_up", "http.request.body.size"},
    {"bytes_down", "http.response.body.size"},
    {"kind", "airlock.kind"},
    {"v", "airlock.schema_version"},
};

/* HTTP methods the conventions know; any other is "_OTHER" plus the method as it was. */
static const char *const px__methods[] = {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS",
                                          "PATCH",   "POST",   "PUT", "TRACE"};

static void px__attr(json_t *arr, const char *key, json_t *value)
{
    if (value == NULL)
        return;
    json_t *a = json_pack("{s:s, s:o}", "key", key, "value", value);
    if (a != NULL)
        json_array_append_new(arr, a);
}

/* An AnyValue of a JSON member (OTLP's JSON encoding: 64-bit integers as strings). */
static json_t *px__any(json_t *v)
{
    char num[32];
    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_pack("{s:O}", "stringValue", v);
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        return json_pack("{s:s}", "intValue", num);
    case JSON_REAL:
        return json_pack("{s:f}", "doubleValue", json_real_value(v));
    case JSON_TRUE:
    case JSON_FALSE:
        return json_pack("{s:b}", "boolValue", json_is_true(v));
    default:
        return NULL;
    }
}

static json_t *px__str(const char *s, size_t n)
{
    json_t *v = json_stringn(s, n);
    json_t *any = v != NULL ? json_pack("{s:o}", "stringValue", v) : NULL;
    return any;
}

static json_t *px__int(long long n)
{
    char num[32];
    snprintf(num, sizeof(num), "%lld", n);
    return json_pack("{s:s}", "intValue", num);
}

/* "ip:port" or "[ipv6]:port" as network.peer.address and network.peer.port. */
static void px__peer(json_t *arr, const char *s)
{
    const char *c = strrchr(s, ':');
    if (c == NULL || c == s) {
        px__attr(arr, "airlock.upstream_addr", px__str(s, strlen(s)));
        return;
    }
    const char *a = s, *e = c;
    if (*s == '[' && c[-1] == ']')
        a = s + 1, e = c - 1;
    px__attr(arr, "network.peer.address", px__str(a, (size_t)(e - a)));
    px__attr(arr, "network.peer.port", px__int(strtol(c + 1, NULL, 10)));
}

/* An object member (annotations, leak, budget) as one attribute per inner member. */
static void px__flat(json_t *arr, const char *prefix, json_t *obj)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        char key[160];
        snprintf(key, sizeof(key), "airlock.%s.%s", prefix, k);
        px__attr(arr, key, px__any(v));
    }
}

/* The member's special forms; returns 1 when it took it. */
static int px__special(json_t *arr, const char *k, json_t *v, const char *kind)
{
    const char *s = json_string_value(v);
    if (strcmp(k, "time") == 0 || strcmp(k, "text") == 0 || strcmp(k, "decision") == 0)
        return 1; /* the record's time and body, and the severity (also airlock.decision) */
    if (json_is_object(v)) {
        px__flat(arr, strcmp(k, "annotations") == 0 ? "annotation" : k, v);
        return 1;
    }
    if (s == NULL)
        return 0;
    if (strcmp(k, "method") == 0) {
        for (size_t i = 0; i < sizeof(px__methods) / sizeof(px__methods[0]); i++)
            if (strcmp(s, px__methods[i]) == 0) {
                px__attr(arr, "http.request.method", px__any(v));
                return 1;
            }
        px__attr(arr, "http.request.method", px__str("_OTHER", 6));
        px__attr(arr, "http.request.method_original", px__any(v));
        return 1;
    }
    if (strcmp(k, "host") == 0) {
        px__attr(arr, strcmp(kind, "dns") == 0 ? "dns.question.name" : "server.address",
                 px__any(v));
        return 1;
    }
    if (strcmp(k, "path") == 0) {
        const char *q = strchr(s, '?');
        px__attr(arr, "url.path", px__str(s, q != NULL ? (size_t)(q - s) : strlen(s)));
        if (q != NULL)
            px__attr(arr, "url.query", px__str(q + 1, strlen(q + 1)));
        return 1;
    }
    if (strcmp(k, "upstream_addr") == 0) {
        px__peer(arr, s);
        return 1;
    }
    return 0;
}

static json_t *px__attributes(json_t *ev)
{
    json_t *arr = json_array();
    const char *kind = json_string_value(json_object_get(ev, "kind"));
    const char *dec = json_string_value(json_object_get(ev, "decision"));
    if (arr == NULL)
        return NULL;
    if (dec != NULL)
        px__attr(arr, "airlock.decision", px__str(dec, strlen(dec)));
    const char *k;
    json_t *v;
    json_object_foreach(ev, k, v)
    {
        if (px__special(arr, k, v, kind != NULL ? kind : ""))
            continue;
        if (strcmp(k, "port") == 0) {
            px__attr(arr, "server.port", px__any(v));
            continue;
        }
        size_t i = 0;
        while (i < sizeof(px__same) / sizeof(px__same[0]) && strcmp(k, px__same[i].member) != 0)
            i++;
        char key[160];
        if (i < sizeof(px__same) / sizeof(px__same[0]))
            snprintf(key, sizeof(key), "%s", px__same[i].attr);
        else
            snprintf(key, sizeof(key), "airlock.%s", k);
        px__attr(arr, key, px__any(v));
    }
    return arr;
}

int px_otel_severity(const char *decision, const char *kind, const char **text)
{
    int warn = kind != NULL && strcmp(kind, "warning") == 0;
    if (decision != NULL && strcmp(decision, "error") == 0) {
        *text = "ERROR";
        return 17;
    }
    if (warn || (decision != NULL &&
                 (strcmp(decision, "blocked") == 0 || strcmp(decision, "warning") == 0 ||
                  strcmp(decision, "rejected") == 0))) {
        *text = "WARN";
        return 13;
    }
    *text = "INFO";
    return 9;
}

/* "2026-02-03T12:34:56.789Z" as nanoseconds since the epoch (0 when unreadable). */
static uint64_t px__time_ns(const char *s)
{
    struct tm tm = {0};
    int ms = 0;
    if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%3dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                            &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7)
        return 0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t < 0)
        return 0;
    return (uint64_t)t * 1000000000u + (uint64_t)ms * 1000000u;
}

int px_otel_record_render(const char *json, size_t len, uint64_t observed_ns, char *out, size_t cap)
{
    json_t *ev = json_loadb(json, len, 0, NULL);
    if (!json_is_object(ev)) {
        json_decref(ev);
        return -1;
    }
    char line[AUDIT_EVENT_LINE_CAP];
    int n = audit_jread_line(json, len, line, sizeof(line));
    const char *text = json_string_value(json_object_get(ev, "text"));
    json_t *body = n >= 0         ? px__str(line, (size_t)n)
                   : text != NULL ? px__str(text, strlen(text))
                                  : px__str(json, len);
    if (body == NULL)
        body = px__str("?", 1);
    json_t *attrs = px__attributes(ev);
    if (attrs == NULL)
        attrs = json_array();
    const char *sevtext;
    int sev = px_otel_severity(json_string_value(json_object_get(ev, "decision")),
                               json_string_value(json_object_get(ev, "kind")), &sevtext);
    uint64_t t = px__time_ns(json_string_value(json_object_get(ev, "time")));
    char tbuf[24], obuf[24];
    snprintf(tbuf, sizeof(tbuf), "%llu", (unsigned long long)(t != 0 ? t : observed_ns));
    snprintf(obuf, sizeof(obuf), "%llu", (unsigned long long)observed_ns);
    json_t *rec = json_pack("{s:s, s:s, s:i, s:s, s:o, s:o}", "timeUnixNano", tbuf,
                            "observedTimeUnixNano", obuf, "severityNumber", sev, "severityText",
                            sevtext, "body", body, "attributes", attrs);
    json_decref(ev);
    if (rec == NULL)
        return -1;
    size_t w = json_dumpb(rec, out, cap > 0 ? cap - 1 : 0, JSON_COMPACT);
    json_decref(rec);
    if (w == 0 || w >= cap)
        return -1;
    out[w] = '\0';
    return (int)w;
}
