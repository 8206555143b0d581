/* The OTEL_* environment of the OTLP exporter (OpenTelemetry's "OTLP Exporter" and "Environment
 * Variable" specifications), read once at start-up. */
#include "proxy/px_otel_conf.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "base/px_err.h"

#define PX__PAIR_MAX 1024 /* a key or a value, decoded */

/* An empty variable counts as unset (the specification says so). */
static const char *px__env(const char *(*get)(const char *), const char *name)
{
    const char *v = get(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* The signal's variable wins over the general one. */
static const char *px__env2(const char *(*get)(const char *), const char *logs, const char *all)
{
    const char *v = px__env(get, logs);
    return v != NULL ? v : px__env(get, all);
}

static int px__hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = tolower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Copies s[0..n) with blanks around it dropped and %XX decoded into out (PX__PAIR_MAX + 1).
 * Returns 0 or -1. */
static int px__decode(const char *s, size_t n, char *out)
{
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (c == '%') {
            int hi = i + 2 < n ? px__hexval((unsigned char)s[i + 1]) : -1;
            int lo = i + 2 < n ? px__hexval((unsigned char)s[i + 2]) : -1;
            if (hi < 0 || lo < 0)
                return -1;
            c = hi * 16 + lo;
            i += 2;
        }
        if (o == PX__PAIR_MAX)
            return -1;
        out[o++] = (char)c;
    }
    out[o] = '\0';
    return 0;
}

int px_otel_parse_pairs(const char *s, size_t len,
                        int (*on_pair)(void *arg, const char *key, const char *value), void *arg)
{
    char key[PX__PAIR_MAX + 1], val[PX__PAIR_MAX + 1];
    size_t i = 0;
    while (i < len) {
        size_t e = i;
        while (e < len && s[e] != ',')
            e++;
        const char *eq = memchr(s + i, '=', e - i);
        int blank = 1;
        for (size_t j = i; j < e; j++)
            blank &= s[j] == ' ' || s[j] == '\t';
        if (!blank) {
            if (eq == NULL)
                return -1;
            if (px__decode(s + i, (size_t)(eq - s - i), key) != 0 || key[0] == '\0' ||
                px__decode(eq + 1, (size_t)(s + e - eq - 1), val) != 0)
                return -1;
            int rc = on_pair(arg, key, val);
            if (rc != 0)
                return rc;
        }
        i = e + 1;
    }
    return 0;
}

/* An unsigned number of a variable (milliseconds or a count), within [lo, hi]; def when unset. */
static int px__num(const char *(*get)(const char *), const char *name, const char *fallback,
                   unsigned def, unsigned lo, unsigned hi, unsigned *out, char *err, size_t errlen)
{
    const char *v = px__env(get, name);
    if (v == NULL && fallback != NULL)
        v = px__env(get, fallback), name = fallback; /* the error names the one read */
    *out = def;
    if (v == NULL)
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end != '\0' || errno != 0 || n < lo || n > hi) {
        snprintf(err, errlen, "%s: want a whole number from %u to %u, not \"%.40s\"", name, lo, hi,
                 v);
        return PX_ECONFIG;
    }
    *out = (unsigned)n;
    return 0;
}

/* The endpoint: http[s]://host[:port][/path[?query]] into c's url parts. */
static int px__url(px_otel_conf_t *c, const char *url, int logs, char *err, size_t errlen)
{
    size_t n = strlen(url);
    const char *var = logs ? "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
    c->tls = strncmp(url, "https://", 8) == 0;
    if ((!c->tls && strncmp(url, "http://", 7) != 0) || n >= sizeof(c->url) - 8) {
        snprintf(err, errlen, "%s: want http[s]://host[:port][/path]", var);
        return PX_ECONFIG;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)url[i];
        if (ch <= 0x20 || ch >= 0x7f)
            goto bad;
    }
    const char *a = url + (c->tls ? 8 : 7);
    const char *slash = a + strcspn(a, "/?#");
    if (*slash == '#' || memchr(a, '@', (size_t)(slash - a)) != NULL || slash == a)
        goto bad; /* a fragment, or user:password in the URL: refused rather than sent */
    const char *h = a, *he, *colon;
    if (*a == '[') {
        he = memchr(a, ']', (size_t)(slash - a));
        if (he == NULL)
            goto bad;
        h = a + 1;
        colon = he + 1 < slash && he[1] == ':' ? he + 1 : NULL;
        if (he + 1 < slash && colon == NULL)
            goto bad;
    } else {
        colon = memchr(a, ':', (size_t)(slash - a));
        he = colon != NULL ? colon : slash;
    }
    if (he == h || (size_t)(he - h) >= sizeof(c->host))
        goto bad;
    memcpy(c->host, h, (size_t)(he - h));
    c->host[he - h] = '\0';
    snprintf(c->port, sizeof(c->port), "%s", c->tls ? "443" : "80");
    if (colon != NULL) {
        size_t pl = (size_t)(slash - colon - 1);
        unsigned long pn = pl > 0 && pl <= 5 ? strtoul(colon + 1, NULL, 10) : 0;
        if (strspn(colon + 1, "0123456789") < pl || pn == 0 || pn > 65535)
            goto bad;
        memcpy(c->port, colon + 1, pl);
        c->port[pl] = '\0';
    }
    snprintf(c->hostport, sizeof(c->hostport), "%.*s", (int)(slash - a), a);
    /* the general endpoint is a base: the logs path is appended to it; the logs endpoint is
     * used as it is, "/" when it has no path */
    const char *q = slash + strcspn(slash, "?");
    if (logs)
        snprintf(c->path, sizeof(c->path), "%s%s", *slash == '/' ? "" : "/", slash);
    else
        snprintf(c->path, sizeof(c->path), "%.*s%sv1/logs%s", (int)(q - slash), slash,
                 q > slash && q[-1] == '/' ? "" : "/", q);
    snprintf(c->url, sizeof(c->url), "%s://%s%s", c->tls ? "https" : "http", c->hostport, c->path);
    return 0;
bad:
    snprintf(err, errlen, "%s: not a usable http[s]:// URL", var);
    return PX_ECONFIG;
}

typedef struct px__hdrs {
    px_otel_conf_t *c;
    size_t len;
    char *err;
    size_t errlen;
    const char *var;
} px__hdrs_t;

static int px__token(const char *s)
{
    if (*s == '\0')
        return 0;
    for (; *s != '\0'; s++)
        if (!isalnum((unsigned char)*s) && strchr("!#$%&'*+-.^_`|~", *s) == NULL)
            return 0;
    return 1;
}

/* One header entry: a token name, a value without controls, not one the exporter sets. The
 * value is never quoted in an error: it is often a credential. */
static int px__on_header(void *arg, const char *key, const char *value)
{
    px__hdrs_t *h = arg;
    static const char *const ours[] = {
        "host", "content-length", "content-type", "transfer-encoding", "connection", "expect"};
    if (!px__token(key)) {
        snprintf(h->err, h->errlen, "%s: \"%.64s\" is not a header name", h->var, key);
        return PX_ECONFIG;
    }
    for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
        if (strcasecmp(key, ours[i]) == 0) {
            snprintf(h->err, h->errlen, "%s: %s is set by airlock itself", h->var, key);
            return PX_ECONFIG;
        }
    for (const char *v = value; *v != '\0'; v++)
        if (((unsigned char)*v < 0x20 && *v != '\t') || *v == 0x7f) {
            snprintf(h->err, h->errlen, "%s: the value of %s holds a control character", h->var,
                     key);
            return PX_ECONFIG;
        }
    size_t room = sizeof(h->c->headers) - h->len;
    int n = snprintf(h->c->headers + h->len, room, "%s: %s\r\n", key, value);
    if (n < 0 || (size_t)n >= room) {
        snprintf(h->err, h->errlen, "%s: over %d bytes", h->var, PX_OTEL_HEADERS_MAX);
        return PX_ECONFIG;
    }
    h->len += (size_t)n;
    return 0;
}

static int px__on_resource(void *arg, const char *key, const char *value)
{
    json_t *o = arg;
    return json_object_set_new(o, key, json_string(value)) == 0 ? 0 : PX_ECONFIG;
}

/* The resource's attributes: service.name and service.version, then OTEL_RESOURCE_ATTRIBUTES
 * (which may replace them), then OTEL_SERVICE_NAME (which wins), as an OTLP JSON array. */
static int px__resource(px_otel_conf_t *c, const char *(*get)(const char *), char *err,
                        size_t errlen)
{
    json_t *o = json_object(), *arr = json_array();
    int rc = PX_ENOMEM;
    if (o == NULL || arr == NULL)
        goto out;
    json_object_set_new(o, "service.name", json_string("airlock"));
    json_object_set_new(o, "service.version", json_string(AIRLOCK_VERSION));
    const char *ra = px__env(get, "OTEL_RESOURCE_ATTRIBUTES");
    if (ra != NULL && px_otel_parse_pairs(ra, strlen(ra), px__on_resource, o) != 0) {
        snprintf(err, errlen,
                 "OTEL_RESOURCE_ATTRIBUTES: want key=value,key=value (values "
                 "percent-encoded, UTF-8)");
        rc = PX_ECONFIG;
        goto out;
    }
    const char *sn = px__env(get, "OTEL_SERVICE_NAME");
    if (sn != NULL && json_object_set_new(o, "service.name", json_string(sn)) != 0) {
        snprintf(err, errlen, "OTEL_SERVICE_NAME: not UTF-8");
        rc = PX_ECONFIG;
        goto out;
    }
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        json_array_append_new(arr,
                              json_pack("{s:s, s:{s:O}}", "key", k, "value", "stringValue", v));
    }
    size_t n = json_dumpb(arr, c->resource, sizeof(c->resource) - 1, JSON_COMPACT);
    rc = PX_ECONFIG;
    if (n == 0 || n >= sizeof(c->resource) - 1) {
        snprintf(err, errlen, "OTEL_RESOURCE_ATTRIBUTES: over %d bytes", PX_OTEL_RESOURCE_MAX);
        goto out;
    }
    c->resource[n] = '\0';
    rc = 0;
out:
    json_decref(arr);
    json_decref(o);
    return rc;
}

/* The protocol: http/json; http/protobuf is taken too (sent as http/json, which every OTLP/HTTP
 * receiver accepts at the same path); grpc is refused. */
static int px__protocol(const char *(*get)(const char *), char *err, size_t errlen)
{
    const char *p =
        px__env2(get, "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL");
    if (p == NULL || strcmp(p, "http/json") == 0 || strcmp(p, "http/protobuf") == 0)
        return 0;
    snprintf(err, errlen, "OTEL_EXPORTER_OTLP_PROTOCOL: \"%.32s\" is not supported (http/json)", p);
    return PX_ECONFIG;
}

/* A file variable (the signal's wins) into out; "" when unset. */
static int px__file(const char *(*get)(const char *), const char *what, char *out, size_t cap,
                    char *err, size_t errlen)
{
    char logs[64], all[64];
    snprintf(logs, sizeof(logs), "OTEL_EXPORTER_OTLP_LOGS_%s", what);
    snprintf(all, sizeof(all), "OTEL_EXPORTER_OTLP_%s", what);
    const char *v = px__env2(get, logs, all);
    if (v == NULL)
        return 0;
    if (strlen(v) >= cap) {
        snprintf(err, errlen, "%s: a file name over %zu bytes", px__env(get, logs) ? logs : all,
                 cap - 1);
        return PX_ECONFIG;
    }
    memcpy(out, v, strlen(v) + 1);
    return 0;
}

/* The TLS files: a CA bundle, a client certificate and its key (both or neither). */
static int px__tls_files(px_otel_conf_t *c, const char *(*get)(const char *), char *err,
                         size_t errlen)
{
    int rc = px__file(get, "CERTIFICATE", c->ca_file, sizeof(c->ca_file), err, errlen);
    if (rc == 0)
        rc = px__file(get, "CLIENT_CERTIFICATE", c->cert_file, sizeof(c->cert_file), err, errlen);
    if (rc == 0)
        rc = px__file(get, "CLIENT_KEY", c->key_file, sizeof(c->key_file), err, errlen);
    if (rc == 0 && (c->cert_file[0] == '\0') != (c->key_file[0] == '\0')) {
        snprintf(err, errlen, "OTEL_EXPORTER_OTLP_CLIENT_%s: set without %s",
                 c->cert_file[0] != '\0' ? "CERTIFICATE" : "KEY",
                 c->cert_file[0] != '\0' ? "OTEL_EXPORTER_OTLP_CLIENT_KEY"
                                         : "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE");
        rc = PX_ECONFIG;
    }
    return rc;
}

int px_otel_conf_load(px_otel_conf_t *c, const char *(*get)(const char *name), char *err,
                      size_t errlen)
{
    memset(c, 0, sizeof(*c));
    const char *off = px__env(get, "OTEL_SDK_DISABLED");
    const char *exp = px__env(get, "OTEL_LOGS_EXPORTER");
    if ((off != NULL && strcasecmp(off, "true") == 0) || (exp != NULL && strcmp(exp, "none") == 0))
        return 0;
    const char *logs = px__env(get, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT");
    const char *all = px__env(get, "OTEL_EXPORTER_OTLP_ENDPOINT");
    if (logs == NULL && all == NULL)
        return 0;
    if (exp != NULL && strcmp(exp, "otlp") != 0) {
        snprintf(err, errlen, "OTEL_LOGS_EXPORTER: \"%.32s\" is not supported (otlp, none)", exp);
        return PX_ECONFIG;
    }
    int rc = px__url(c, logs != NULL ? logs : all, logs != NULL, err, errlen);
    if (rc == 0)
        rc = px__protocol(get, err, errlen);
    if (rc == 0)
        rc = px__tls_files(c, get, err, errlen);
    const char *hv = "OTEL_EXPORTER_OTLP_LOGS_HEADERS";
    const char *hs = px__env(get, hv);
    if (hs == NULL)
        hv = "OTEL_EXPORTER_OTLP_HEADERS", hs = px__env(get, hv);
    if (rc == 0 && hs != NULL) {
        px__hdrs_t h = {c, 0, err, errlen, hv};
        rc = px_otel_parse_pairs(hs, strlen(hs), px__on_header, &h);
        if (rc == -1)
            snprintf(err, errlen, "%s: want name=value,name=value (values percent-encoded)", hv);
        if (rc != 0)
            rc = PX_ECONFIG;
    }
    if (rc == 0)
        rc = px__resource(c, get, err, errlen);
    if (rc == 0)
        rc = px__num(get, "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT", 10000, 1,
                     600000, &c->timeout_ms, err, errlen);
    if (rc == 0)
        rc = px__num(get, "OTEL_BLRP_SCHEDULE_DELAY", NULL, 1000, 1, 600000, &c->delay_ms, err,
                     errlen);
    if (rc == 0)
        rc = px__num(get, "OTEL_BLRP_EXPORT_TIMEOUT", NULL, 30000, 1, 600000, &c->export_timeout_ms,
                     err, errlen);
    if (rc == 0)
        rc = px__num(get, "OTEL_BLRP_MAX_QUEUE_SIZE", NULL, 2048, 1, PX_OTEL_QUEUE_SIZE_MAX,
                     &c->max_queue, err, errlen);
    if (rc == 0)
        rc = px__num(get, "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE", NULL, 512, 1, PX_OTEL_QUEUE_SIZE_MAX,
                     &c->max_batch, err, errlen);
    if (rc != 0)
        return rc;
    if (c->max_batch > c->max_queue) /* the specification: never above the queue */
        c->max_batch = c->max_queue;
    c->enabled = 1;
    return 0;
}
