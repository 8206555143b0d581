/* The OpenTelemetry exporter's pure parts (proxy/px_otel.h): the OTEL_* environment, the
 * key=value lists, the severity of a decision and the LogRecord of a JSON event. The thread,
 * the queue and the HTTP client are tested against a collector stand-in
 * (tests/integration/test_otel.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "proxy/px_otel.h"

/* The environment a case sees: "NAME=value" strings, NULL-terminated. */
static const char *const *px__env_now;

static const char *px__get(const char *name)
{
    size_t n = strlen(name);
    for (const char *const *e = px__env_now; *e != NULL; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

#define ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_px_otel_conf(void **state)
{
    (void)state;
    const struct {
        const char *const *env;
        int ok, enabled;
        const char *want; /* ok: "host port path", else a part of the error */
        const char *headers;
        unsigned timeout, delay, queue, batch, export_to;
    } cases[] = {
        {ENV("PATH=/bin"), 1, 0, NULL, "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT="), 1, 0, NULL, "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318"), 1, 1, "c 4318 /v1/logs", "", 10000, 1000,
         2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318/"), 1, 1, "c 4318 /v1/logs", "", 10000,
         1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c/base"), 1, 1, "c 80 /base/v1/logs", "", 10000,
         1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c/base/?t=1"), 1, 1, "c 80 /base/v1/logs?t=1", "",
         10000, 1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://[::1]:9/"), 1, 1, "::1 9 /v1/logs", "", 10000,
         1000, 2048, 512, 30000},
        /* the signal's endpoint is used as it is, and wins */
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://a:1",
             "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=http://b:2"),
         1, 1, "b 2 /", "", 10000, 1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=http://b:2/custom/logs"), 1, 1, "b 2 /custom/logs",
         "", 10000, 1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_SDK_DISABLED=true"), 1, 0, NULL, "",
         0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_LOGS_EXPORTER=none"), 1, 0, NULL,
         "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS=a=1,b=x%20y",
             "OTEL_EXPORTER_OTLP_LOGS_HEADERS= Authorization = Bearer%20t%2C1 "),
         1, 1, "c 4318 /v1/logs", "Authorization: Bearer t,1\r\n", 10000, 1000, 2048, 512, 30000},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT=500",
             "OTEL_EXPORTER_OTLP_LOGS_TIMEOUT=700", "OTEL_BLRP_SCHEDULE_DELAY=50",
             "OTEL_BLRP_MAX_QUEUE_SIZE=100", "OTEL_BLRP_MAX_EXPORT_BATCH_SIZE=400",
             "OTEL_BLRP_EXPORT_TIMEOUT=2000"),
         1, 1, "c 4318 /v1/logs", "", 700, 50, 100, 100, 2000},
        /* refused at start-up */
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=ftp://c"), 0, 0, "want http[s]://", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=httpss://c"), 0, 0, "want http[s]://", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://u:p@c:4318"), 0, 0, "not a usable", "", 0, 0, 0, 0,
         0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:99999"), 0, 0, "not a usable", "", 0, 0, 0, 0,
         0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c:"), 0, 0, "not a usable", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://"), 0, 0, "not a usable", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c x"), 0, 0, "not a usable", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"), 0, 0,
         "not supported", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_HEADERS=novalue"), 0, 0,
         "want name=value", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_HEADERS=a b=1"), 0, 0,
         "not a header name", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_HEADERS=x=a%0d%0aHost:y"),
         0, 0, "control character", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_HEADERS=host=y"), 0, 0,
         "set by airlock", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_HEADERS=x=%zz"), 0, 0,
         "want name=value", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_BLRP_MAX_QUEUE_SIZE=0"), 0, 0,
         "OTEL_BLRP_MAX_QUEUE_SIZE", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_EXPORTER_OTLP_TIMEOUT=10s"), 0, 0,
         "OTEL_EXPORTER_OTLP_TIMEOUT", "", 0, 0, 0, 0, 0},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_RESOURCE_ATTRIBUTES=a"), 0, 0,
         "OTEL_RESOURCE_ATTRIBUTES", "", 0, 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        px_otel_conf_t c;
        char err[256] = "";
        px__env_now = cases[i].env;
        int rc = px_otel_conf_load(&c, px__get, err, sizeof(err));
        if ((rc == 0) != cases[i].ok)
            fail_msg("case %zu: rc %d (%s)", i, rc, err);
        if (!cases[i].ok) {
            if (strstr(err, cases[i].want) == NULL)
                fail_msg("case %zu: error '%s', want '%s'", i, err, cases[i].want);
            if (strstr(err, "Bearer") != NULL || strstr(err, "a%0d") != NULL)
                fail_msg("case %zu: a header's value in the error", i);
            continue;
        }
        assert_int_equal(c.enabled, cases[i].enabled);
        if (!c.enabled)
            continue;
        char got[1400];
        snprintf(got, sizeof(got), "%s %s %s", c.host, c.port, c.path);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: '%s', want '%s'", i, got, cases[i].want);
        assert_string_equal(c.headers, cases[i].headers);
        assert_int_equal(c.timeout_ms, cases[i].timeout);
        assert_int_equal(c.delay_ms, cases[i].delay);
        assert_int_equal(c.max_queue, cases[i].queue);
        assert_int_equal(c.max_batch, cases[i].batch);
        assert_int_equal(c.export_timeout_ms, cases[i].export_to);
    }
}

/* https: the scheme, its default port, the CA and client-certificate files (the signal's
 * variable wins), and the refusals. */
static void test_px_otel_tls(void **state)
{
    (void)state;
    const struct {
        const char *const *env;
        int ok;
        const char *want; /* ok: "tls host port path url|ca|cert|key", else a part of the error */
    } cases[] = {
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c"), 1, "1 c 443 /v1/logs https://c/v1/logs|||"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c:4318/base"), 1,
         "1 c 4318 /base/v1/logs https://c:4318/base/v1/logs|||"},
        {ENV("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT=https://[::1]/x"), 1,
         "1 ::1 443 /x https://[::1]/x|||"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c"), 1, "0 c 80 /v1/logs http://c/v1/logs|||"},
        /* the files: the signal's variables win; read (and unused) with http:// too */
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE=/a/ca.pem"),
         1, "1 c 443 /v1/logs https://c/v1/logs|/a/ca.pem||"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", "OTEL_EXPORTER_OTLP_CERTIFICATE=/a/ca.pem",
             "OTEL_EXPORTER_OTLP_LOGS_CERTIFICATE=/l/ca.pem",
             "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/a/c.pem",
             "OTEL_EXPORTER_OTLP_CLIENT_KEY=/a/c.key"),
         1, "1 c 443 /v1/logs https://c/v1/logs|/l/ca.pem|/a/c.pem|/a/c.key"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c",
             "OTEL_EXPORTER_OTLP_LOGS_CLIENT_CERTIFICATE=/l/c.pem",
             "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/a/c.pem",
             "OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY=/l/c.key"),
         1, "1 c 443 /v1/logs https://c/v1/logs||/l/c.pem|/l/c.key"},
        /* OTEL_EXPORTER_OTLP_INSECURE changes nothing: verification stays on */
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", "OTEL_EXPORTER_OTLP_INSECURE=true"), 1,
         "1 c 443 /v1/logs https://c/v1/logs|||"},
        /* refused */
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://"), 0, "not a usable http[s]:// URL"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://u@c"), 0, "not a usable"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c:0"), 0, "not a usable"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE=/c"),
         0, "OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: set without OTEL_EXPORTER_OTLP_CLIENT_KEY"},
        {ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", "OTEL_EXPORTER_OTLP_LOGS_CLIENT_KEY=/k"), 0,
         "OTEL_EXPORTER_OTLP_CLIENT_KEY: set without OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        px_otel_conf_t c;
        char err[256] = "";
        px__env_now = cases[i].env;
        int rc = px_otel_conf_load(&c, px__get, err, sizeof(err));
        if ((rc == 0) != cases[i].ok)
            fail_msg("case %zu: rc %d (%s)", i, rc, err);
        if (!cases[i].ok) {
            if (strstr(err, cases[i].want) == NULL)
                fail_msg("case %zu: error '%s', want '%s'", i, err, cases[i].want);
            continue;
        }
        char got[4 * PX_OTEL_PATH_MAX + 2048];
        snprintf(got, sizeof(got), "%d %s %s %s %s|%s|%s|%s", c.tls, c.host, c.port, c.path, c.url,
                 c.ca_file, c.cert_file, c.key_file);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: '%s', want '%s'", i, got, cases[i].want);
    }
    /* a file name too long for its buffer is refused, not cut */
    char longname[PX_OTEL_PATH_MAX + 64] = "OTEL_EXPORTER_OTLP_CERTIFICATE=/";
    memset(longname + strlen(longname), 'a', PX_OTEL_PATH_MAX);
    longname[sizeof(longname) - 1] = '\0';
    px__env_now = ENV("OTEL_EXPORTER_OTLP_ENDPOINT=https://c", longname);
    px_otel_conf_t c;
    char err[256] = "";
    assert_int_not_equal(px_otel_conf_load(&c, px__get, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "OTEL_EXPORTER_OTLP_CERTIFICATE: a file name over"));
}

static void test_px_otel_resource(void **state)
{
    (void)state;
    px_otel_conf_t c;
    char err[256];
    px__env_now = ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c",
                      "OTEL_RESOURCE_ATTRIBUTES=service.name=x,k8s.pod.name=p%C3%A9,team=a%2Cb",
                      "OTEL_SERVICE_NAME=gate");
    assert_int_equal(px_otel_conf_load(&c, px__get, err, sizeof(err)), 0);
    assert_string_equal(c.resource,
                        "[{\"key\":\"service.name\",\"value\":{\"stringValue\":\"gate\"}},"
                        "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"" AIRLOCK_VERSION
                        "\"}},{\"key\":\"k8s.pod.name\",\"value\":{\"stringValue\":\"p\xc3\xa9\"}},"
                        "{\"key\":\"team\",\"value\":{\"stringValue\":\"a,b\"}}]");
    px__env_now = ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c");
    assert_int_equal(px_otel_conf_load(&c, px__get, err, sizeof(err)), 0);
    assert_non_null(strstr(c.resource, "\"stringValue\":\"airlock\""));
    /* a value that is not UTF-8 once decoded: refused (OTLP strings are UTF-8) */
    px__env_now = ENV("OTEL_EXPORTER_OTLP_ENDPOINT=http://c", "OTEL_RESOURCE_ATTRIBUTES=a=%ff");
    assert_int_not_equal(px_otel_conf_load(&c, px__get, err, sizeof(err)), 0);
}

static int px__collect(void *arg, const char *key, const char *value)
{
    char *out = arg;
    size_t n = strlen(out);
    snprintf(out + n, 512 - n, "%s=%s|", key, value);
    return strcmp(key, "stop") == 0 ? 7 : 0;
}

static void test_px_otel_pairs(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        int rc;
        const char *out;
    } cases[] = {
        {"", 0, ""},
        {"a=1", 0, "a=1|"},
        {" a = 1 , b=2", 0, "a=1|b=2|"},
        {"a=1,,b=2,", 0, "a=1|b=2|"},
        {"a=", 0, "a=|"},
        {"a=x=y", 0, "a=x=y|"},
        {"k=%41%2c%2C%25", 0, "k=A,,%|"},
        {"a", -1, ""},
        {"=1", -1, ""},
        {"a=%4", -1, ""},
        {"a=%g0", -1, ""},
        {"a=1,b", -1, "a=1|"},
        {"a=1,stop=1,c=3", 7, "a=1|stop=1|"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[512] = "";
        int rc = px_otel_parse_pairs(cases[i].in, strlen(cases[i].in), px__collect, out);
        if (rc != cases[i].rc || strcmp(out, cases[i].out) != 0)
            fail_msg("'%s': %d '%s', want %d '%s'", cases[i].in, rc, out, cases[i].rc,
                     cases[i].out);
    }
    /* a value of 1025 bytes: refused */
    char big[1100] = "k=";
    memset(big + 2, 'v', 1025);
    char out[512] = "";
    assert_int_equal(px_otel_parse_pairs(big, strlen(big), px__collect, out), -1);
}

static void test_px_otel_severity(void **state)
{
    (void)state;
    static const struct {
        const char *decision, *kind;
        int num;
        const char *text;
    } cases[] = {
        {"allowed", "request", 9, "INFO"},
        {"blocked", "request", 13, "WARN"},
        {"error", "request", 17, "ERROR"},
        {"warning", "request", 13, "WARN"},
        {"rejected", "tls_rejected", 13, "WARN"},
        {NULL, "dns", 9, "INFO"},
        {NULL, "warning", 13, "WARN"},
        {NULL, NULL, 9, "INFO"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *t = NULL;
        assert_int_equal(px_otel_severity(cases[i].decision, cases[i].kind, &t), cases[i].num);
        assert_string_equal(t, cases[i].text);
    }
}

/* The attribute key's value in a rendered record, as compact JSON ("" when absent). */
static void px__attr_of(json_t *rec, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    json_t *a;
    size_t i;
    json_array_foreach(json_object_get(rec, "attributes"), i, a)
    {
        if (strcmp(json_string_value(json_object_get(a, "key")), key) == 0) {
            size_t n = json_dumpb(json_object_get(a, "value"), out, cap - 1, JSON_COMPACT);
            out[n] = '\0';
        }
    }
}

static void test_px_otel_record(void **state)
{
    (void)state;
    static const char allowed[] =
        "{\"v\":2,\"time\":\"2026-02-03T12:34:57.452Z\",\"sandbox\":\"conv1\",\"kind\":"
        "\"request\",\"decision\":\"allowed\",\"method\":\"GET\",\"url\":\"https://api.github.com"
        "/user?x=1\",\"scheme\":\"https\",\"host\":\"api.github.com\",\"port\":443,\"path\":"
        "\"/user?x=1\",\"status\":200,\"annotations\":{\"masked\":1,\"region\":\"eu\"},\"stage\":"
        "\"policy\",\"entry\":\"domains[2] a.yaml:4\",\"bytes_up\":0,\"bytes_down\":1532,"
        "\"duration_ms\":212.804,\"upstream_addr\":\"[2001:db8::1]:443\"}";
    static const char blocked[] =
        "{\"v\":2,\"time\":\"2026-02-03T12:34:58.566Z\",\"kind\":\"request\",\"decision\":"
        "\"blocked\",\"method\":\"FOO\",\"url\":\"http://x.test/a\",\"scheme\":\"http\",\"host\":"
        "\"x.test\",\"port\":80,\"path\":\"/a\",\"status\":403,\"detail\":\"leak: secret "
        "entry[0].value, raw, in url\",\"leak\":{\"kind\":\"secret\",\"entry\":\"entry[0].value\","
        "\"encoding\":\"raw\",\"where\":\"url\"},\"truncated\":true}";
    static const char dns[] = "{\"v\":2,\"time\":\"2026-02-03T12:34:57.301Z\",\"kind\":\"dns\","
                              "\"dns_type\":\"A\",\"host\":\"a.test\",\"dns_answer\":\"10.0.0.1\"}";
    static const char other[] =
        "{\"v\":2,\"time\":\"bad\",\"kind\":\"other\",\"text\":\"odd line\"}";
    static const struct {
        const char *json, *key, *want;
    } cases[] = {
        {allowed, "timeUnixNano", "\"1770122097452000000\""},
        {allowed, "observedTimeUnixNano", "\"1770122097999000001\""},
        {allowed, "severityNumber", "9"},
        {allowed, "severityText", "\"INFO\""},
        {allowed, "body",
         "{\"stringValue\":\"allowed GET https://api.github.com/user?x=1 -> 200 [masked: 1] "
         "[region: eu]\"}"},
        {allowed, "@http.request.method", "{\"stringValue\":\"GET\"}"},
        {allowed, "@url.full", "{\"stringValue\":\"https://api.github.com/user?x=1\"}"},
        {allowed, "@url.scheme", "{\"stringValue\":\"https\"}"},
        {allowed, "@url.path", "{\"stringValue\":\"/user\"}"},
        {allowed, "@url.query", "{\"stringValue\":\"x=1\"}"},
        {allowed, "@server.address", "{\"stringValue\":\"api.github.com\"}"},
        {allowed, "@server.port", "{\"intValue\":\"443\"}"},
        {allowed, "@http.response.status_code", "{\"intValue\":\"200\"}"},
        {allowed, "@http.request.body.size", "{\"intValue\":\"0\"}"},
        {allowed, "@http.response.body.size", "{\"intValue\":\"1532\"}"},
        {allowed, "@network.peer.address", "{\"stringValue\":\"2001:db8::1\"}"},
        {allowed, "@network.peer.port", "{\"intValue\":\"443\"}"},
        {allowed, "@airlock.decision", "{\"stringValue\":\"allowed\"}"},
        {allowed, "@airlock.kind", "{\"stringValue\":\"request\"}"},
        {allowed, "@airlock.sandbox", "{\"stringValue\":\"conv1\"}"},
        {allowed, "@airlock.annotation.masked", "{\"intValue\":\"1\"}"},
        {allowed, "@airlock.annotation.region", "{\"stringValue\":\"eu\"}"},
        {allowed, "@airlock.stage", "{\"stringValue\":\"policy\"}"},
        {allowed, "@airlock.entry", "{\"stringValue\":\"domains[2] a.yaml:4\"}"},
        {allowed, "@airlock.duration_ms", "{\"doubleValue\":212.804}"},
        {allowed, "@airlock.schema_version", "{\"intValue\":\"2\"}"},
        {allowed, "@time", ""},
        {allowed, "@airlock.time", ""},
        {blocked, "severityText", "\"WARN\""},
        {blocked, "severityNumber", "13"},
        {blocked, "@http.request.method", "{\"stringValue\":\"_OTHER\"}"},
        {blocked, "@http.request.method_original", "{\"stringValue\":\"FOO\"}"},
        {blocked, "@airlock.leak.entry", "{\"stringValue\":\"entry[0].value\"}"},
        {blocked, "@airlock.detail",
         "{\"stringValue\":\"leak: secret entry[0].value, raw, in url\"}"},
        {blocked, "@airlock.truncated", "{\"boolValue\":true}"},
        {blocked, "@url.query", ""},
        {dns, "@dns.question.name", "{\"stringValue\":\"a.test\"}"},
        {dns, "@server.address", ""},
        {dns, "@airlock.dns_type", "{\"stringValue\":\"A\"}"},
        {dns, "body", "{\"stringValue\":\"DNS A a.test -> 10.0.0.1\"}"},
        {other, "body", "{\"stringValue\":\"odd line\"}"},
        {other, "timeUnixNano", "\"1770122097999000001\""}, /* unreadable: the observed time */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[8192];
        int n = px_otel_record_render(cases[i].json, strlen(cases[i].json), NULL, 0,
                                      1770122097999000001ull, out, sizeof(out));
        if (n < 0)
            fail_msg("case %zu: not rendered", i);
        json_t *rec = json_loads(out, 0, NULL);
        assert_non_null(rec);
        char got[1024] = "";
        if (cases[i].key[0] == '@') {
            px__attr_of(rec, cases[i].key + 1, got, sizeof(got));
        } else if (json_object_get(rec, cases[i].key) != NULL) {
            size_t w = json_dumpb(json_object_get(rec, cases[i].key), got, sizeof(got) - 1,
                                  JSON_COMPACT | JSON_ENCODE_ANY);
            got[w] = '\0';
        }
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu (%s): '%s', want '%s'", i, cases[i].key, got, cases[i].want);
        json_decref(rec);
    }
    char small[64];
    assert_int_equal(
        px_otel_record_render(allowed, strlen(allowed), NULL, 0, 1, small, sizeof(small)), -1);
    assert_int_equal(px_otel_record_render("[1]", 3, NULL, 0, 1, small, sizeof(small)), -1);
    assert_int_equal(px_otel_record_render("{", 1, NULL, 0, 1, small, sizeof(small)), -1);
}

/* The body is the text line the log passed (px_otel_push_line()), escaped for JSON: quotes,
 * backslashes and controls escaped, UTF-8 kept, a byte that is not UTF-8 as U+FFFD. */
static void test_px_otel_record_line(void **state)
{
    (void)state;
    static const char ev[] = "{\"v\":2,\"kind\":\"dns\",\"host\":\"a.test\"}";
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"DNS A a.test -> 10.0.0.1", "DNS A a.test -> 10.0.0.1"},
        {"q\"b\\c\x01\t", "q\"b\\c\x01\t"},
        {"caf\xc3\xa9 \xff \xc3", "caf\xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[4096];
        int n = px_otel_record_render(ev, strlen(ev), cases[i].line, strlen(cases[i].line), 1, out,
                                      sizeof(out));
        assert_true(n > 0);
        json_t *rec = json_loads(out, 0, NULL);
        if (rec == NULL)
            fail_msg("case %zu: not JSON: %s", i, out);
        const char *body =
            json_string_value(json_object_get(json_object_get(rec, "body"), "stringValue"));
        if (body == NULL || strcmp(body, cases[i].want) != 0)
            fail_msg("case %zu: body '%s', want '%s'", i, body ? body : "(none)", cases[i].want);
        json_decref(rec);
    }
}

static void test_px_otel_off(void **state)
{
    (void)state;
    /* not started: a push is a no-op, nothing counted */
    assert_int_equal(px_otel_enabled(), 0);
    px_otel_push("{}", 2);
    px_otel_stats_t s;
    px_otel_stats(&s);
    assert_int_equal(s.exported + s.dropped_full + s.dropped_failed + s.retries, 0);
    px_otel_stop();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_otel_conf),        cmocka_unit_test(test_px_otel_tls),
        cmocka_unit_test(test_px_otel_resource),    cmocka_unit_test(test_px_otel_pairs),
        cmocka_unit_test(test_px_otel_severity),    cmocka_unit_test(test_px_otel_record),
        cmocka_unit_test(test_px_otel_record_line), cmocka_unit_test(test_px_otel_off),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
