/* One JSON audit event (docs/events.md) as an OTLP LogRecord (docs/otel.md, "The record"):
 * run on the exporter's thread, never on a loop.
 *
 * The event is read by a small validating scanner of its own and the record written straight
 * into the caller's buffer: a string or a number is copied as the event spelled it (already
 * valid JSON), never decoded and encoded again, and nothing is allocated. Building the record
 * as a jansson tree cost about 4 times the instructions (tests/bench/otel_bench.sh). The text
 * line (the body) is the one the log wrote when the loop passed it (px_otel_push_line()), else
 * audit_jread_line()'s, which parses the event again (three quarters of what is left). */
#include "proxy/px_otel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audit/audit_event.h"
#include "audit/audit_jread.h"

#define PX__DEPTH_MAX 2048 /* nesting read (and skipped) at most: as deep as jansson reads */

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
    {"port", "server.port"},
};

/* HTTP methods the conventions know; any other is "_OTHER" plus the method as it was. */
static const char *const px__methods[] = {"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS",
                                          "PATCH",   "POST",   "PUT", "TRACE"};

/* A byte range of the event: a string's contents as spelled (escapes kept), a number, a
 * literal or a whole object. */
typedef struct px__tok {
    const char *p;
    size_t n;
    char type; /* 's' string, 'i' integer, 'b' an integer too long for one, 'd' other number,
                  't' true, 'f' false, 'o' object,
                  'x' anything else (null, array) */
} px__tok_t;

typedef struct px__in {
    const char *p, *end;
} px__in_t;

/* The output: a capped buffer; over is set once anything did not fit. */
typedef struct px__out {
    char *p;
    size_t len, cap;
    int over;
} px__out_t;

static void px__put(px__out_t *o, const char *s, size_t n)
{
    if (o->over || n > o->cap - o->len) {
        o->over = 1;
        return;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
}

#define PX__LIT(o, s) px__put((o), (s), sizeof(s) - 1)

static void px__ws(px__in_t *in)
{
    while (in->p < in->end && (*in->p == ' ' || *in->p == '\t' || *in->p == '\n' || *in->p == '\r'))
        in->p++;
}

static int px__eat(px__in_t *in, char c)
{
    px__ws(in);
    if (in->p < in->end && *in->p == c) {
        in->p++;
        return 1;
    }
    return 0;
}

/* The length of a valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t px__utf8(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (len == 0 || len > n || s[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
        return 0; /* overlong, a surrogate, or above U+10FFFF */
    return len;
}

static int px__hex4(const char *p)
{
    for (int i = 0; i < 4; i++)
        if (strchr("0123456789abcdefABCDEF", p[i]) == NULL || p[i] == '\0')
            return 0;
    return 1;
}

/* A JSON string (in->p at its opening quote): t gets its contents as spelled. 0 or -1. */
static int px__string(px__in_t *in, px__tok_t *t)
{
    const char *p = in->p + 1;
    while (p < in->end && *p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20)
            return -1;
        if (c == '\\') {
            if (p + 1 >= in->end)
                return -1;
            if (p[1] == 'u') {
                if (in->end - p < 6 || !px__hex4(p + 2))
                    return -1;
                unsigned u = (unsigned)strtoul((char[5]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
                if (u >= 0xdc00 && u <= 0xdfff)
                    return -1; /* a lone low surrogate: not text, and collectors refuse it */
                if (u >= 0xd800 && u <= 0xdbff) {
                    if (in->end - p < 12 || p[6] != '\\' || p[7] != 'u' || !px__hex4(p + 8) ||
                        strtoul((char[5]){p[8], p[9], p[10], p[11], 0}, NULL, 16) < 0xdc00 ||
                        strtoul((char[5]){p[8], p[9], p[10], p[11], 0}, NULL, 16) > 0xdfff)
                        return -1;
                    p += 6;
                }
                p += 6;
            } else if (strchr("\"\\/bfnrt", p[1]) != NULL && p[1] != '\0') {
                p += 2;
            } else {
                return -1;
            }
        } else if (c >= 0x80) {
            size_t n = px__utf8((const unsigned char *)p, (size_t)(in->end - p));
            if (n == 0)
                return -1;
            p += n;
        } else {
            p++;
        }
    }
    if (p >= in->end)
        return -1;
    *t = (px__tok_t){in->p + 1, (size_t)(p - in->p - 1), 's'};
    in->p = p + 1;
    return 0;
}

static int px__digits(px__in_t *in)
{
    const char *s = in->p;
    while (in->p < in->end && *in->p >= '0' && *in->p <= '9')
        in->p++;
    return in->p > s;
}

/* A JSON number: 'i' an integer that fits in 64 bits (at most 18 digits), 'b' a longer
 * integer, 'd' any other. 0 or -1. */
static int px__number(px__in_t *in, px__tok_t *t)
{
    const char *s = in->p;
    if (in->p < in->end && *in->p == '-')
        in->p++;
    const char *d = in->p;
    if (!px__digits(in) || (*d == '0' && in->p - d > 1))
        return -1;
    char type = in->p - d <= 18 ? 'i' : 'b';
    if (in->p < in->end && *in->p == '.') {
        in->p++;
        if (!px__digits(in))
            return -1;
        type = 'd';
    }
    if (in->p < in->end && (*in->p == 'e' || *in->p == 'E')) {
        in->p++;
        if (in->p < in->end && (*in->p == '+' || *in->p == '-'))
            in->p++;
        if (!px__digits(in))
            return -1;
        type = 'd';
    }
    *t = (px__tok_t){s, (size_t)(in->p - s), type};
    return 0;
}

static int px__value(px__in_t *in, px__tok_t *t, int depth);

/* An object or array (in->p at its opening bracket), checked and skipped. 0 or -1. */
static int px__compound(px__in_t *in, px__tok_t *t, int depth)
{
    char close = *in->p == '{' ? '}' : ']';
    const char *s = in->p++;
    if (depth >= PX__DEPTH_MAX)
        return -1;
    if (!px__eat(in, close)) {
        do {
            px__tok_t k, v;
            if (close == '}' &&
                (!px__eat(in, '"') || (in->p--, px__string(in, &k)) != 0 || !px__eat(in, ':')))
                return -1;
            if (px__value(in, &v, depth + 1) != 0)
                return -1;
        } while (px__eat(in, ','));
        if (!px__eat(in, close))
            return -1;
    }
    *t = (px__tok_t){s, (size_t)(in->p - s), close == '}' ? 'o' : 'x'};
    return 0;
}

static int px__value(px__in_t *in, px__tok_t *t, int depth)
{
    px__ws(in);
    if (in->p >= in->end)
        return -1;
    static const struct {
        const char *word;
        char type;
    } lits[] = {{"true", 't'}, {"false", 'f'}, {"null", 'x'}};
    switch (*in->p) {
    case '"':
        return px__string(in, t);
    case '{':
    case '[':
        return px__compound(in, t, depth);
    default:
        for (size_t i = 0; i < 3; i++) {
            size_t n = strlen(lits[i].word);
            if ((size_t)(in->end - in->p) >= n && memcmp(in->p, lits[i].word, n) == 0) {
                *t = (px__tok_t){in->p, n, lits[i].type};
                in->p += n;
                return 0;
            }
        }
        return px__number(in, t);
    }
}

static int px__is(const px__tok_t *t, const char *s)
{
    return t->n == strlen(s) && memcmp(t->p, s, t->n) == 0;
}

/* Writes s[0..n) as the contents of a JSON string: quotes, backslashes and controls escaped,
 * a byte that is not UTF-8 written as U+FFFD. */
static void px__esc(px__out_t *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && (unsigned char)s[run] >= 0x20 && (unsigned char)s[run] < 0x80 &&
               s[run] != '"' && s[run] != '\\')
            run++;
        px__put(o, s + i, run - i);
        if (run == n)
            break;
        unsigned char c = (unsigned char)s[run];
        size_t u = c >= 0x80 ? px__utf8((const unsigned char *)s + run, n - run) : 0;
        if (u > 0) {
            px__put(o, s + run, u);
            i = run + u;
            continue;
        }
        char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
        if (c == '"' || c == '\\')
            e[1] = (char)c, px__put(o, e, 2);
        else if (c >= 0x80)
            PX__LIT(o, "\\ufffd");
        else
            px__put(o, e, 6);
        i = run + 1;
    }
}

/* One attribute: {"key":"<prefix><key>","value":{...}} with key as spelled in the event. */
static void px__key(px__out_t *o, int *first, const char *prefix, const char *key, size_t kn)
{
    if (!*first)
        PX__LIT(o, ",");
    *first = 0;
    PX__LIT(o, "{\"key\":\"");
    px__put(o, prefix, strlen(prefix));
    px__put(o, key, kn);
    PX__LIT(o, "\",\"value\":");
}

/* An AnyValue of a scalar (OTLP's JSON encoding: 64-bit integers as strings); 0 when the
 * token has none (null, an array, an object). */
static int px__any_ok(const px__tok_t *v)
{
    return v->type != 'x' && v->type != 'o';
}

/* A number that is not a 64-bit integer as a doubleValue, in the shortest form that reads
 * back the same; one no double holds (1e999) as the stringValue of its spelling, since a
 * collector that cannot read a number refuses the whole batch. */
static void px__double(px__out_t *o, const px__tok_t *v)
{
    char in[64], num[40];
    double d = HUGE_VAL;
    if (v->n < sizeof(in)) {
        memcpy(in, v->p, v->n);
        in[v->n] = '\0';
        d = strtod(in, NULL);
    }
    if (!isfinite(d)) {
        PX__LIT(o, "{\"stringValue\":\"");
        px__put(o, v->p, v->n);
        PX__LIT(o, "\"}}");
        return;
    }
    int n = 0;
    for (int prec = 15; prec <= 17; prec++) {
        n = snprintf(num, sizeof(num), "%.*g", prec, d);
        if (strtod(num, NULL) == d)
            break;
    }
    PX__LIT(o, "{\"doubleValue\":");
    px__put(o, num, (size_t)n);
    PX__LIT(o, "}}");
}

static void px__any(px__out_t *o, const px__tok_t *v)
{
    switch (v->type) {
    case 's':
        PX__LIT(o, "{\"stringValue\":\"");
        px__put(o, v->p, v->n);
        PX__LIT(o, "\"}}");
        return;
    case 'i':
        PX__LIT(o, "{\"intValue\":\"");
        px__put(o, v->p, v->n);
        PX__LIT(o, "\"}}");
        return;
    case 'd':
    case 'b':
        px__double(o, v);
        return;
    default:
        PX__LIT(o, "{\"boolValue\":");
        px__put(o, v->p, v->n);
        PX__LIT(o, "}}");
    }
}

static void px__attr(px__out_t *o, int *first, const char *prefix, const char *key, size_t kn,
                     const px__tok_t *v)
{
    if (!px__any_ok(v))
        return;
    px__key(o, first, prefix, key, kn);
    px__any(o, v);
}

static void px__attr_str(px__out_t *o, int *first, const char *key, const char *s, size_t n)
{
    px__tok_t v = {s, n, 's'};
    px__attr(o, first, "", key, strlen(key), &v);
}

/* An object member (annotations, leak, budget) as one attribute per inner scalar member. */
static void px__flat(px__out_t *o, int *first, const px__tok_t *name, const px__tok_t *obj)
{
    char prefix[64];
    int pn = snprintf(prefix, sizeof(prefix), "airlock.%.*s.",
                      px__is(name, "annotations") ? 10 : (int)name->n, name->p);
    if (pn < 0 || (size_t)pn >= sizeof(prefix))
        return; /* no such member in the events: a name this long is not one of theirs */
    px__in_t in = {obj->p + 1, obj->p + obj->n - 1};
    if (px__eat(&in, '}') || in.p >= in.end)
        return;
    do {
        px__tok_t k, v;
        px__eat(&in, '"');
        in.p--;
        if (px__string(&in, &k) != 0 || !px__eat(&in, ':') || px__value(&in, &v, 1) != 0)
            return; /* not reached: the object was checked */
        px__attr(o, first, prefix, k.p, k.n, &v);
    } while (px__eat(&in, ','));
}

/* "ip:port" or "[ipv6]:port" as network.peer.address and network.peer.port. */
static void px__peer(px__out_t *o, int *first, const px__tok_t *v)
{
    const char *c = v->p + v->n;
    while (c > v->p && c[-1] != ':')
        c--;
    if (c <= v->p + 1) {
        px__attr(o, first, "airlock.", "upstream_addr", 13, v);
        return;
    }
    const char *a = v->p, *e = c - 1;
    if (*a == '[' && e[-1] == ']')
        a++, e--;
    px__attr_str(o, first, "network.peer.address", a, (size_t)(e - a));
    px__tok_t port = {c, (size_t)(v->p + v->n - c), 'i'};
    char num[16];
    /* the digits of the token only: the record's bytes are not NUL-terminated (strtol would
     * read on past them, and did, under ASan's strict string checks) */
    long pn = 0;
    for (const char *q = c; q < v->p + v->n && *q >= '0' && *q <= '9' && pn < 65536; q++)
        pn = pn * 10 + (*q - '0');
    port.n = (size_t)snprintf(num, sizeof(num), "%ld", pn > 0 && pn < 65536 ? pn : 0);
    port.p = num;
    px__attr(o, first, "", "network.peer.port", 17, &port);
}

/* What the members say that the record needs besides attributes. */
typedef struct px__ev {
    px__tok_t time, kind, decision, text, host;
} px__ev_t;

/* A member's attribute(s). */
static void px__member(px__out_t *o, int *first, const px__tok_t *k, const px__tok_t *v,
                       px__ev_t *ev)
{
    int str = v->type == 's';
    if (px__is(k, "time") || px__is(k, "text") || (px__is(k, "decision") && !str)) {
        px__tok_t *keep = px__is(k, "time") ? &ev->time : px__is(k, "text") ? &ev->text : NULL;
        if (keep != NULL)
            *keep = *v;
        return; /* the record's time and body */
    }
    if (px__is(k, "decision")) {
        ev->decision = *v;
        px__attr(o, first, "", "airlock.decision", 16, v);
        return;
    }
    if (px__is(k, "kind"))
        ev->kind = *v;
    if (v->type == 'o') {
        px__flat(o, first, k, v);
        return;
    }
    if (str && px__is(k, "method")) {
        for (size_t i = 0; i < sizeof(px__methods) / sizeof(px__methods[0]); i++)
            if (px__is(v, px__methods[i])) {
                px__attr(o, first, "", "http.request.method", 19, v);
                return;
            }
        px__attr_str(o, first, "http.request.method", "_OTHER", 6);
        px__attr(o, first, "", "http.request.method_original", 28, v);
        return;
    }
    if (str && px__is(k, "host")) {
        ev->host = *v; /* its name depends on the kind, which may come later */
        return;
    }
    if (str && px__is(k, "path")) {
        const char *q = memchr(v->p, '?', v->n);
        size_t pl = q != NULL ? (size_t)(q - v->p) : v->n;
        px__attr_str(o, first, "url.path", v->p, pl);
        if (q != NULL)
            px__attr_str(o, first, "url.query", q + 1, v->n - pl - 1);
        return;
    }
    if (str && px__is(k, "upstream_addr")) {
        px__peer(o, first, v);
        return;
    }
    for (size_t i = 0; i < sizeof(px__same) / sizeof(px__same[0]); i++)
        if (px__is(k, px__same[i].member)) {
            px__attr(o, first, "", px__same[i].attr, strlen(px__same[i].attr), v);
            return;
        }
    px__attr(o, first, "airlock.", k->p, k->n, v);
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

/* A string token as a NUL-terminated C string in buf (cut to cap), or NULL when it is not a
 * string. Escapes are kept: the words compared (decisions, kinds, times) have none. */
static const char *px__cstr(const px__tok_t *t, char *buf, size_t cap)
{
    if (t->type != 's')
        return NULL;
    size_t n = t->n < cap - 1 ? t->n : cap - 1;
    memcpy(buf, t->p, n);
    buf[n] = '\0';
    return buf;
}

int px_otel_record_render(const char *json, size_t len, const char *line, size_t line_len,
                          uint64_t observed_ns, char *out, size_t cap)
{
    px__in_t in = {json, json + len};
    px__out_t o = {out, 0, cap > 0 ? cap - 1 : 0, 0};
    px__ev_t ev = {{"", 0, 'x'}, {"", 0, 'x'}, {"", 0, 'x'}, {"", 0, 'x'}, {"", 0, 'x'}};
    int first = 1;
    if (!px__eat(&in, '{'))
        return -1;
    PX__LIT(&o, "{\"attributes\":[");
    if (!px__eat(&in, '}')) {
        do {
            px__tok_t k, v;
            px__ws(&in);
            if (in.p >= in.end || *in.p != '"' || px__string(&in, &k) != 0 || !px__eat(&in, ':') ||
                px__value(&in, &v, 1) != 0)
                return -1;
            px__member(&o, &first, &k, &v, &ev);
        } while (px__eat(&in, ','));
        if (!px__eat(&in, '}'))
            return -1;
    }
    px__ws(&in);
    if (in.p != in.end)
        return -1; /* bytes after the object: not one event */
    char kind[32], dec[32], tbuf[40];
    const char *kd = px__cstr(&ev.kind, kind, sizeof(kind));
    if (ev.host.type == 's')
        px__attr(&o, &first, "",
                 kd != NULL && strcmp(kd, "dns") == 0 ? "dns.question.name" : "server.address",
                 kd != NULL && strcmp(kd, "dns") == 0 ? 17 : 14, &ev.host);
    const char *sevtext;
    int sev = px_otel_severity(px__cstr(&ev.decision, dec, sizeof(dec)), kd, &sevtext);
    uint64_t t = px__time_ns(px__cstr(&ev.time, tbuf, sizeof(tbuf)));
    char head[160];
    int hn = snprintf(head, sizeof(head),
                      "],\"timeUnixNano\":\"%llu\",\"observedTimeUnixNano\":\"%llu\","
                      "\"severityNumber\":%d,\"severityText\":\"%s\",\"body\":{\"stringValue\":\"",
                      (unsigned long long)(t != 0 ? t : observed_ns),
                      (unsigned long long)observed_ns, sev, sevtext);
    px__put(&o, head, (size_t)hn);
    /* the body: the text line; for a line that is not an event, its text; else the JSON */
    char back[AUDIT_EVENT_LINE_CAP];
    int n = line != NULL ? (int)line_len : audit_jread_line(json, len, back, sizeof(back));
    if (n >= 0)
        px__esc(&o, line != NULL ? line : back, (size_t)n);
    else if (ev.text.type == 's')
        px__put(&o, ev.text.p, ev.text.n); /* as spelled: already a JSON string's contents */
    else
        px__esc(&o, json, len);
    PX__LIT(&o, "\"}}");
    if (o.over)
        return -1;
    out[o.len] = '\0';
    return (int)o.len;
}
