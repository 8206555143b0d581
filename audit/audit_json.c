#include "audit/audit_json.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "audit/audit_annot.h"
#include "base/px_dec.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Room kept after the strings for the keys, numbers, fixed words and punctuation of one object
 * (about 1100 bytes at most, 16 annotations included): a long string is cut, never the object's
 * shape. */
#define AUDIT__JSON_RESERVE 2048
#define AUDIT__JSON_MIN_CAP 4096
#define AUDIT__JSON_TIME_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z */

typedef struct audit__json {
    char *buf;
    size_t cap;   /* bytes of the object (no NUL) */
    size_t limit; /* strings stop here */
    size_t len;
    int cut;     /* a string was cut: "truncated" */
    int escaped; /* the record's views hold \xNN */
    int first;   /* no comma before the next member */
} audit__json_t;

/* memcpy for the short strings of an event (most under 16 bytes), without a call: two
 * overlapping moves of a fixed size */
__attribute__((always_inline)) static inline void aj_copy(char *d, const char *s, size_t n)
{
    if (n > 16) {
        memcpy(d, s, n);
    } else if (n >= 8) {
        uint64_t a, b;
        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

static void aj_raw(audit__json_t *o, const char *p, size_t n)
{
    if (o->len + n > o->cap) { /* not reached: AUDIT__JSON_RESERVE covers the shape */
        o->cut = 1;
        return;
    }
    aj_copy(o->buf + o->len, p, n);
    o->len += n;
}

static void aj_raws(audit__json_t *o, const char *s)
{
    aj_raw(o, s, strlen(s));
}

static int aj_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The byte at *i (advanced past it). In the log's form, \xNN of a byte that is not printable
 * ASCII is that byte (audit_unescape()); any other backslash is itself. */
static unsigned char aj_byte(audit_str_t v, size_t *i, int escaped)
{
    unsigned char c = (unsigned char)v.base[*i];
    if (escaped && c == '\\' && *i + 3 < v.len && v.base[*i + 1] == 'x') {
        int h = aj_hex(v.base[*i + 2]), l = aj_hex(v.base[*i + 3]);
        if (h >= 0 && l >= 0 && (h * 16 + l < 0x20 || h * 16 + l >= 0x7f)) {
            *i += 4;
            return (unsigned char)(h * 16 + l);
        }
    }
    *i += 1;
    return c;
}

/* Length of the well-formed UTF-8 sequence starting with c0 whose continuation bytes are
 * next[0..have) (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF), or 0. */
static size_t aj_utf8_len(unsigned char c0, const unsigned char *next, size_t have)
{
    size_t n;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c0 >= 0xc2 && c0 <= 0xdf)
        n = 2;
    else if (c0 >= 0xe0 && c0 <= 0xef)
        n = 3;
    else if (c0 >= 0xf0 && c0 <= 0xf4)
        n = 4;
    else
        return 0;
    if (c0 == 0xe0)
        lo = 0xa0;
    else if (c0 == 0xed)
        hi = 0x9f;
    else if (c0 == 0xf0)
        lo = 0x90;
    else if (c0 == 0xf4)
        hi = 0x8f;
    if (have < n - 1 || next[0] < lo || next[0] > hi)
        return 0;
    for (size_t k = 1; k < n - 1; k++)
        if (next[k] < 0x80 || next[k] > 0xbf)
            return 0;
    return n;
}

/* A byte JSON and the log's escaping both leave as it is: printable ASCII but '"' and '\\'
 * (0x20..0x7e without 0x22 and 0x5c), one bit per byte. */
static const uint64_t aj_plain_bits[2] = {0xfffffffb00000000ULL, 0x7fffffffefffffffULL};

static int aj_plain(unsigned char c)
{
    return c < 0x80 && (aj_plain_bits[c >> 6] >> (c & 63)) & 1;
}

#define AJ_STR_(x) #x
#define AJ_STR(x) AJ_STR_(x)

/* A literal key and its length, counted by the compiler. */
#define AJ_K(lit) lit, (sizeof(lit) - 1)

#define AJ_ONES 0x0101010101010101ULL
#define AJ_HIGH 0x8080808080808080ULL

/* Whether none of 8 bytes is below 0x20 or 0x7f and up, '"' or '\\' (aj_plain of each, a word at
 * a time: (w - ONES * n) & ~w & HIGH is non-zero when a byte of w is below n, for n <= 0x80). */
static int aj_plain8(const char *p)
{
    uint64_t w, q, b, d;
    memcpy(&w, p, 8);
    q = w ^ (AJ_ONES * '"');
    b = w ^ (AJ_ONES * '\\');
    d = w ^ (AJ_ONES * 0x7f);
    return ((w & AJ_HIGH) | ((w - AJ_ONES * 0x20) & ~w & AJ_HIGH) | ((q - AJ_ONES) & ~q & AJ_HIGH) |
            ((b - AJ_ONES) & ~b & AJ_HIGH) | ((d - AJ_ONES) & ~d & AJ_HIGH)) == 0;
}

/* One JSON string of v's bytes, cut at a whole character at o->limit (aj_str's way for strings
 * with a byte to escape or too long to fit). */
static void aj_str_slow(audit__json_t *o, audit_str_t v)
{
    static const char hexd[] = "0123456789abcdef";
    aj_raw(o, "\"", 1);
    size_t i = 0;
    while (v.base != NULL && i < v.len && !o->cut) {
        /* a run of bytes written as they are, copied at once: cut where the per-byte rule below
         * would cut (each is a whole character) */
        size_t run = 0;
        while (i + run + 8 <= v.len && aj_plain8(v.base + i + run))
            run += 8;
        while (i + run < v.len && aj_plain((unsigned char)v.base[i + run]))
            run++;
        if (run > 0) {
            size_t room = o->limit > o->len + 1 ? o->limit - o->len - 1 : 0;
            size_t k = run < room ? run : room;
            aj_raw(o, v.base + i, k);
            i += k;
            if (k < run) {
                o->cut = 1;
                break;
            }
            continue;
        }
        size_t j = i;
        unsigned char c = aj_byte(v, &j, o->escaped);
        unsigned char next[3];
        size_t have = 0, after[3];
        for (size_t k = j; have < 3 && k < v.len; have++) {
            next[have] = aj_byte(v, &k, o->escaped);
            after[have] = k;
        }
        char unit[8];
        size_t ulen = 0;
        size_t n = c >= 0x80 ? aj_utf8_len(c, next, have) : 1;
        if (c == '"' || c == '\\') {
            unit[ulen++] = '\\';
            unit[ulen++] = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r' || c == '\b' || c == '\f') {
            unit[ulen++] = '\\';
            unit[ulen++] = c == '\n'   ? 'n'
                           : c == '\t' ? 't'
                           : c == '\r' ? 'r'
                           : c == '\b' ? 'b'
                                       : 'f';
        } else if (c == 0 || n == 0) {
            /* not UTF-8, or NUL (valid JSON as \u0000, but refused by PostgreSQL's jsonb and
             * jansson's default and cut at by C consumers: the event would be lost downstream):
             * the text log's \xNN, as four characters */
            memcpy(unit, "\\\\x", 3);
            ulen = 3;
            unit[ulen++] = hexd[c >> 4];
            unit[ulen++] = hexd[c & 15];
        } else if (c < 0x20 || c == 0x7f || (c == 0xc2 && n == 2 && next[0] < 0xa0)) {
            /* controls (C1 too, U+0080..U+009F) never reach a terminal raw */
            unsigned cp = c == 0xc2 ? next[0] : c;
            memcpy(unit, "\\u00", 4);
            ulen = 4;
            unit[ulen++] = hexd[cp >> 4];
            unit[ulen++] = hexd[cp & 15];
        } else {
            unit[ulen++] = (char)c;
            for (size_t k = 0; k + 1 < n; k++)
                unit[ulen++] = (char)next[k];
        }
        if (o->len + ulen + 1 > o->limit) {
            o->cut = 1;
            break;
        }
        aj_raw(o, unit, ulen);
        i = n > 1 ? after[n - 2] : j;
    }
    aj_raw(o, "\"", 1);
}

#if defined(__SSE2__)
/* Whether none of 16 bytes is below 0x20 or 0x7f and up, '"' or '\\' (a signed compare takes
 * the bytes from 0x80 as negative, below 0x20). */
static int aj_plain16(__m128i w)
{
    __m128i bad = _mm_or_si128(_mm_cmplt_epi8(w, _mm_set1_epi8(0x20)),
                               _mm_cmpeq_epi8(w, _mm_set1_epi8(0x7f)));
    bad = _mm_or_si128(bad, _mm_or_si128(_mm_cmpeq_epi8(w, _mm_set1_epi8('"')),
                                         _mm_cmpeq_epi8(w, _mm_set1_epi8('\\'))));
    return _mm_movemask_epi8(bad) == 0;
}
#endif

/* The length of v's leading run of aj_plain bytes, a word (16 bytes with SSE2, else 8) at a
 * time; the last partial word is read as the string's last word, overlapping, and a string
 * shorter than a word byte by byte (most strings of an event are plain: this answers them at
 * once). */
static size_t aj_plain_run(audit_str_t v)
{
    size_t i = 0;
#if defined(__SSE2__)
    if (v.len >= 16) {
        while (i + 16 <= v.len && aj_plain16(_mm_loadu_si128((const __m128i *)(v.base + i))))
            i += 16;
        if (i == v.len ||
            (i + 16 > v.len && aj_plain16(_mm_loadu_si128((const __m128i *)(v.base + v.len - 16)))))
            return v.len;
    } else if (v.len >= 8) { /* the first 8 bytes and the last 8, in one register */
        __m128i w = _mm_unpacklo_epi64(_mm_loadl_epi64((const __m128i *)v.base),
                                       _mm_loadl_epi64((const __m128i *)(v.base + v.len - 8)));
        if (aj_plain16(w))
            return v.len;
    }
#else
    while (i + 8 <= v.len && aj_plain8(v.base + i))
        i += 8;
    if (i < v.len && i + 8 > v.len && v.len >= 8 && aj_plain8(v.base + v.len - 8))
        return v.len; /* the last 8 bytes, overlapping the words already read */
#endif
    while (i < v.len && aj_plain((unsigned char)v.base[i]))
        i++;
    return i;
}

/* One JSON string of v's bytes, cut at a whole character at o->limit. Most strings (URLs,
 * names, addresses) need no escaping and fit: they are copied whole. */
static void aj_str(audit__json_t *o, audit_str_t v)
{
    if (v.base == NULL || o->cut || o->len + v.len + 2 > o->limit || aj_plain_run(v) != v.len) {
        aj_str_slow(o, v);
        return;
    }
    char *d = o->buf + o->len;
    d[0] = '"';
    memcpy(d + 1, v.base, v.len);
    d[v.len + 1] = '"';
    o->len += v.len + 2;
}

/* Writes ,"k": (no comma before the first member) at d, room checked by the caller; returns
 * the place after it. The one writer of a key: aj_key and the fast ways of a member. */
__attribute__((always_inline)) static inline char *aj_put_key(audit__json_t *o, char *d,
                                                              const char *k, size_t n)
{
    if (!o->first)
        *d++ = ',';
    o->first = 0;
    *d++ = '"';
    aj_copy(d, k, n);
    d += n;
    *d++ = '"';
    *d++ = ':';
    return d;
}

static void aj_key(audit__json_t *o, const char *k, size_t n)
{
    if (o->len + n + 4 > o->cap) { /* not reached: AUDIT__JSON_RESERVE covers the shape */
        o->cut = 1;
        return;
    }
    o->len = (size_t)(aj_put_key(o, o->buf + o->len, k, n) - o->buf);
}

/* "k": v, left out when v is empty. plain: v is known to need no escaping (a part of a string
 * that needed none), so it is not read twice. */
static void aj_kv_p(audit__json_t *o, const char *k, size_t kn, audit_str_t v, int plain)
{
    if (v.base == NULL || v.len == 0)
        return;
    /* the usual case at once: ,"k":"v" with nothing in v to escape, well inside the limit (the
     * check asks for the comma's byte even when there is none: the slow way writes the same) */
    if (!o->cut && o->len + kn + v.len + 6 <= o->limit && (plain || aj_plain_run(v) == v.len)) {
        char *d = aj_put_key(o, o->buf + o->len, k, kn);
        *d++ = '"';
        aj_copy(d, v.base, v.len);
        d += v.len;
        *d++ = '"';
        o->len = (size_t)(d - o->buf);
        return;
    }
    aj_key(o, k, kn);
    aj_str(o, v);
}

static void aj_kv(audit__json_t *o, const char *k, size_t kn, audit_str_t v)
{
    aj_kv_p(o, k, kn, v, 0);
}

/* "k": "w" for a word of the module's own, wn bytes (never cut). */
static void aj_kv_wordn(audit__json_t *o, const char *k, size_t kn, const char *w, size_t wn)
{
    aj_key(o, k, kn);
    if (o->len + wn + 2 > o->cap) { /* not reached: AUDIT__JSON_RESERVE covers the shape */
        o->cut = 1;
        return;
    }
    char *d = o->buf + o->len;
    d[0] = '"';
    aj_copy(d + 1, w, wn);
    d[wn + 1] = '"';
    o->len += wn + 2;
}

static void aj_kv_word(audit__json_t *o, const char *k, size_t kn, const char *w)
{
    aj_kv_wordn(o, k, kn, w, strlen(w));
}

/* ,"k":v at once: the key and the digits written in place (an event has five or six). */
static void aj_kv_int(audit__json_t *o, const char *k, size_t kn, long long v)
{
    if (o->len + kn + 28 > o->cap) { /* not reached: AUDIT__JSON_RESERVE covers the shape */
        o->cut = 1;
        return;
    }
    char n[PX_DEC_MAX + 1];
    char *p = px_dec(n + sizeof(n), v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v);
    if (v < 0)
        *--p = '-';
    char *d = aj_put_key(o, o->buf + o->len, k, kn);
    size_t dn = (size_t)(n + sizeof(n) - p);
    aj_copy(d, p, dn);
    o->len = (size_t)(d + dn - o->buf);
}

/* What an exchange relayed: the body bytes both ways, its duration (milliseconds with the
 * microseconds as decimals, so a fast answer on loopback is not written 0) and the upstream's
 * address; only in the events the exchange writes (ev->xfer). */
static void aj_xfer(audit__json_t *o, const audit_event_t *ev)
{
    if (!ev->xfer)
        return;
    aj_kv_int(o, AJ_K("bytes_up"),
              (long long)(ev->bytes_up > INT64_MAX ? INT64_MAX : ev->bytes_up));
    aj_kv_int(o, AJ_K("bytes_down"),
              (long long)(ev->bytes_down > INT64_MAX ? INT64_MAX : ev->bytes_down));
    char n[PX_DEC_MAX];
    unsigned frac = (unsigned)(ev->duration_us % 1000);
    char *p = px_dec(n + sizeof(n), (unsigned long long)(ev->duration_us / 1000));
    aj_key(o, AJ_K("duration_ms"));
    aj_raw(o, p, (size_t)(n + sizeof(n) - p));
    char f[4] = {'.', (char)('0' + frac / 100), (char)('0' + frac / 10 % 10),
                 (char)('0' + frac % 10)};
    aj_raw(o, f, sizeof(f));
    aj_kv(o, AJ_K("upstream_addr"), ev->upstream);
}

static void aj_time(audit__json_t *o, int64_t ms)
{
    if (ms < 0)
        ms = 0;
    if (ms > AUDIT__JSON_TIME_MAX)
        ms = AUDIT__JSON_TIME_MAX;
    /* the text of the second is made once per second and thread: events come thousands a
     * second, and gmtime_r with snprintf cost more than the rest of an event */
    static __thread int64_t last_s = -1;
    static __thread char last[64];
    int64_t sec = ms / 1000;
    if (sec != last_s) {
        time_t s = (time_t)sec;
        struct tm tm;
        if (gmtime_r(&s, &tm) != NULL)
            snprintf(last, sizeof(last), "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        else
            memcpy(last, "1970-01-01T00:00:00", 20);
        last_s = sec;
    }
    unsigned m = (unsigned)(ms % 1000);
    char ts[32];
    memcpy(ts, last, 19);
    char tail[6] = {
        '.', (char)('0' + m / 100), (char)('0' + m / 10 % 10), (char)('0' + m % 10), 'Z', '\0'};
    memcpy(ts + 19, tail, sizeof(tail));
    aj_kv_wordn(o, AJ_K("time"), ts, 24);
}

/* The leak and budget details of a tail (audit_tail_parse) as objects; anything else is left
 * to "detail". */
static void aj_tail_parts(audit__json_t *o, audit_str_t t)
{
    audit_tail_t tp;
    audit_tail_parse(t, &tp);
    if (tp.kind == AUDIT_TAIL_OTHER)
        return;
    if (tp.kind == AUDIT_TAIL_LEAK)
        aj_key(o, AJ_K("leak"));
    else
        aj_key(o, AJ_K("budget"));
    aj_raw(o, "{", 1);
    o->first = 1;
    aj_kv(o, AJ_K("kind"), tp.part[0]);
    if (tp.kind == AUDIT_TAIL_LEAK) {
        aj_kv(o, AJ_K("entry"), tp.part[1]);
        aj_kv(o, AJ_K("encoding"), tp.part[2]);
        aj_kv(o, AJ_K("where"), tp.part[3]);
    } else {
        aj_kv(o, AJ_K("for"), tp.part[1]);
        aj_kv(o, AJ_K("count"), tp.part[2]);
    }
    aj_raw(o, "}", 1);
    o->first = 0;
}

/* "annotations": {...} (audit_annot_split), and "annot_text" (the text as written) when the
 * object alone would not give it back. */
static void aj_annotations(audit__json_t *o, audit_str_t annot)
{
    if (annot.base == NULL || annot.len == 0)
        return;
    audit_annot_t a[AUDIT_ANNOT_MAX];
    int exact;
    size_t n = audit_annot_split(annot, a, &exact);
    if (n > 0) {
        aj_key(o, AJ_K("annotations"));
        aj_raw(o, "{", 1);
        o->first = 1;
        for (size_t i = 0; i < n; i++) {
            char key[40];
            memcpy(key, a[i].key.base, a[i].key.len);
            key[a[i].key.len] = '\0';
            long long v;
            if (audit_annot_is_count(a[i].key) && audit_annot_count(a[i].value, &v)) {
                aj_kv_int(o, key, a[i].key.len, v);
            } else {
                aj_key(o, key, a[i].key.len);
                aj_str(o, a[i].value);
            }
        }
        aj_raw(o, "}", 1);
        o->first = 0;
    }
    if (!exact)
        aj_kv(o, AJ_K("annot_text"), annot);
}

/* method, url and what the URL says (scheme, host, port, path). */
static void aj_target(audit__json_t *o, const audit_event_t *ev)
{
    if (!audit_str_eq(ev->method, "-"))
        aj_kv(o, AJ_K("method"), ev->method);
    if (ev->url.len == 0 || audit_str_eq(ev->url, "-"))
        return;
    int plain = aj_plain_run(ev->url) == ev->url.len; /* and so are its parts */
    aj_kv_p(o, AJ_K("url"), ev->url, plain);
    audit_url_t u;
    int authority = audit_str_eq(ev->method, "CONNECT") || audit_str_eq(ev->method, "SOCKS");
    if (audit_url_parse(ev->url, authority, &u) != 0)
        return;
    if (!authority)
        aj_kv_word(o, AJ_K("scheme"), u.tls ? "https" : "http");
    aj_kv_p(o, AJ_K("host"), u.host, plain);
    aj_kv_int(o, AJ_K("port"), u.port);
    if (!authority)
        aj_kv_p(o, AJ_K("path"), u.path, plain);
}

/* A DECISION's members: the hold, what was held, who decided, the approval's scope, how many
 * requests it answered. */
static void aj_held(audit__json_t *o, const audit_event_t *ev)
{
    char id[24];
    snprintf(id, sizeof(id), "h%llu", (unsigned long long)ev->hold);
    aj_kv_word(o, AJ_K("hold"), id);
    if (!audit_str_eq(ev->method, "-"))
        aj_kv(o, AJ_K("method"), ev->method);
    if (!audit_str_eq(ev->host, "-"))
        aj_kv(o, AJ_K("host"), ev->host);
    if (!audit_str_eq(ev->path, "-"))
        aj_kv(o, AJ_K("path"), ev->path);
    if (!audit_str_eq(ev->who, "-"))
        aj_kv(o, AJ_K("by"), ev->who);
    aj_kv(o, AJ_K("scope"), ev->scope);
    aj_kv_int(o, AJ_K("requests"), ev->count);
}

const char *audit_json_kind_name(audit_event_kind_t kind)
{
    switch (kind) {
    case AUDIT_EV_TASK_START:
        return "task_start";
    case AUDIT_EV_REQUEST:
        return "request";
    case AUDIT_EV_CONNECT:
        return "connect";
    case AUDIT_EV_TUNNEL:
        return "tunnel";
    case AUDIT_EV_CONNECTION:
        return "connection";
    case AUDIT_EV_DNS:
        return "dns";
    case AUDIT_EV_STRIPPED:
        return "stripped";
    case AUDIT_EV_COLLAPSED:
        return "collapsed";
    case AUDIT_EV_WARNING:
        return "warning";
    case AUDIT_EV_TLS_REJECTED:
        return "tls_rejected";
    case AUDIT_EV_GHAPP_TOKEN:
        return "ghapp_token";
    case AUDIT_EV_GHAPP_REPOS:
        return "ghapp_repos";
    case AUDIT_EV_GRAPHQL_SCOPE:
        return "graphql_scope";
    case AUDIT_EV_DECISION:
        return "decision";
    default:
        return NULL;
    }
}

/* The decision of a request-shaped event is its verdict; the other kinds imply theirs. */
static const char *aj_decision(const audit_event_t *ev)
{
    switch (ev->kind) {
    case AUDIT_EV_REQUEST:
    case AUDIT_EV_CONNECT:
    case AUDIT_EV_TUNNEL:
    case AUDIT_EV_CONNECTION:
        return ev->verdict == AUDIT_EV_ALLOWED   ? "allowed"
               : ev->verdict == AUDIT_EV_BLOCKED ? "blocked"
               : ev->verdict == AUDIT_EV_ERROR   ? "error"
                                                 : NULL;
    case AUDIT_EV_WARNING:
        return "warning";
    case AUDIT_EV_TLS_REJECTED:
        return "rejected";
    case AUDIT_EV_GHAPP_TOKEN:
    case AUDIT_EV_GHAPP_REPOS:
        return "error";
    case AUDIT_EV_GRAPHQL_SCOPE:
        return "blocked";
    case AUDIT_EV_DECISION: /* a person's or the webhook's answer to a held request */
        return ev->verdict == AUDIT_EV_ALLOWED   ? "approved"
               : ev->verdict == AUDIT_EV_BLOCKED ? "denied"
                                                 : NULL;
    default:
        return "";
    }
}

/* The members every object starts with. Returns -1 when cap is too small. */
static int aj_open(audit__json_t *o, const audit_json_ctx_t *ctx, char *buf, size_t cap)
{
    if (buf == NULL || cap < AUDIT__JSON_MIN_CAP)
        return -1;
    size_t usable = cap - 1 < AUDIT_JSON_LINE_MAX ? cap - 1 : AUDIT_JSON_LINE_MAX;
    *o = (audit__json_t){buf, usable, usable - AUDIT__JSON_RESERVE, 0, 0, 0, 1};
    aj_raw(o, AJ_K("{\"v\":" AJ_STR(AUDIT_JSON_VERSION)));
    o->first = 0;
    aj_time(o, ctx != NULL ? ctx->time_ms : 0);
    if (ctx != NULL)
        aj_kv(o, AJ_K("sandbox"), ctx->sandbox); /* the name is airlock's: written as it is */
    o->escaped = ctx != NULL && ctx->escaped;
    return 0;
}

static int aj_close(audit__json_t *o)
{
    if (o->cut) {
        aj_key(o, AJ_K("truncated"));
        aj_raws(o, "true");
    }
    aj_raw(o, "}", 1);
    o->buf[o->len] = '\0';
    return (int)o->len;
}

int audit_json_render(const audit_event_t *ev, const audit_json_ctx_t *ctx, char *buf, size_t cap)
{
    const char *kind = audit_json_kind_name(ev->kind);
    const char *decision = aj_decision(ev);
    audit__json_t o;
    if (kind == NULL || decision == NULL || aj_open(&o, ctx, buf, cap) != 0) {
        if (buf != NULL && cap > 0)
            buf[0] = '\0';
        return -1;
    }
    aj_kv_word(&o, AJ_K("kind"), kind);
    if (decision[0] != '\0')
        aj_kv_word(&o, AJ_K("decision"), decision);
    switch (ev->kind) {
    case AUDIT_EV_TASK_START:
        aj_kv(&o, AJ_K("started"), ev->text);
        break;
    case AUDIT_EV_DNS:
        aj_kv(&o, AJ_K("dns_type"), ev->dns_type);
        aj_kv(&o, AJ_K("host"), ev->host);
        aj_kv(&o, AJ_K("dns_answer"), ev->reason);
        break;
    case AUDIT_EV_TLS_REJECTED:
        aj_kv(&o, AJ_K("host"), ev->host);
        break;
    case AUDIT_EV_STRIPPED:
    case AUDIT_EV_COLLAPSED:
        aj_kv(&o, AJ_K("header"), ev->header);
        if (ev->kind == AUDIT_EV_COLLAPSED)
            aj_kv_int(&o, AJ_K("count"), ev->count);
        aj_target(&o, ev);
        break;
    case AUDIT_EV_GHAPP_TOKEN:
        aj_target(&o, ev);
        break;
    case AUDIT_EV_DECISION:
        aj_held(&o, ev);
        break;
    case AUDIT_EV_REQUEST:
    case AUDIT_EV_CONNECT:
    case AUDIT_EV_TUNNEL:
    case AUDIT_EV_CONNECTION:
        aj_target(&o, ev);
        if (ev->status >= 0)
            aj_kv_int(&o, AJ_K("status"), ev->status);
        else
            aj_kv(&o, AJ_K("reason"), ev->reason);
        aj_annotations(&o, ev->annot);
        break;
    default:
        break;
    }
    if (ev->kind != AUDIT_EV_TASK_START && ev->kind != AUDIT_EV_DNS) {
        aj_kv(&o, AJ_K("detail"), ev->tail);
        aj_tail_parts(&o, ev->tail);
    }
    aj_kv(&o, AJ_K("stage"), ev->stage);
    aj_kv(&o, AJ_K("entry"), ev->entry);
    aj_xfer(&o, ev);
    return aj_close(&o);
}

int audit_json_render_other(const char *line, size_t len, const audit_json_ctx_t *ctx, char *buf,
                            size_t cap)
{
    audit__json_t o;
    if (aj_open(&o, ctx, buf, cap) != 0) {
        if (buf != NULL && cap > 0)
            buf[0] = '\0';
        return -1;
    }
    o.escaped = 1; /* the line as the text log has it */
    aj_kv_word(&o, AJ_K("kind"), "other");
    aj_key(&o, AJ_K("text"));
    aj_str(&o, (audit_str_t){line, len});
    return aj_close(&o);
}
