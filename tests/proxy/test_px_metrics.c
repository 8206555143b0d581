/* The metrics (proxy/px_metrics.h): what each network-log event counts, how an upstream
 * failure's reason is classed, the histograms' buckets, and the Prometheus text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/px_metrics.h"

static void test_metrics_up_error(void **state)
{
    (void)state;
    static const struct {
        const char *why;
        px_metrics_uperr_t kind;
    } cases[] = {
        {"Connection failed: destination 10.99.0.5 is not allowed (private (RFC 1918))",
         PX_M_UP_DESTINATION},
        {"Connection failed: no usable address", PX_M_UP_DESTINATION},
        {"Connection failed: connect timed out", PX_M_UP_TIMEOUT},
        {"Connection failed: TLS handshake with upstream timed out", PX_M_UP_TIMEOUT},
        {"Connection failed: DNS server returned SERVFAIL", PX_M_UP_RESOLVE},
        {"Connection failed: lookup failed", PX_M_UP_RESOLVE},
        {"Connection failed: certificate verify failed", PX_M_UP_TLS},
        {"Connection failed: connection refused", PX_M_UP_CONNECT},
        {"Server disconnected before sending a response (connection reset by peer)",
         PX_M_UP_CONNECT},
        {"invalid response from upstream: 101 without an upgrade", PX_M_UP_PROTOCOL},
        {"out of memory", PX_M_UP_OTHER},
        {NULL, PX_M_UP_OTHER},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (px_metrics_up_error(cases[i].why) != cases[i].kind)
            fail_msg("'%s': %d, want %d", cases[i].why ? cases[i].why : "(null)",
                     px_metrics_up_error(cases[i].why), cases[i].kind);
}

static audit_str_t S(const char *s)
{
    return (audit_str_t){s, strlen(s)};
}

static void test_metrics_events(void **state)
{
    (void)state;
    px_metrics_t *m = px_metrics();
    memset(m, 0, sizeof(*m));
    audit_event_t ev = {.kind = AUDIT_EV_REQUEST, .verdict = AUDIT_EV_ALLOWED, .status = 200};
    px_metrics_event(&ev);
    px_metrics_event(&ev);
    ev.verdict = AUDIT_EV_BLOCKED;
    ev.status = 403;
    ev.tail = S("leak: secret entry[0].value, raw, in url");
    px_metrics_event(&ev);
    ev.tail = S("budget: api.test 1000 bytes sent per 60 s; the response was cut after 5 bytes");
    px_metrics_event(&ev);
    ev.tail = S("not a leak: the word appears later");
    px_metrics_event(&ev);
    audit_event_t dns = {.kind = AUDIT_EV_DNS};
    px_metrics_event(&dns);
    audit_event_t warn = {.kind = AUDIT_EV_REQUEST, .verdict = AUDIT_EV_WARN, .status = 200};
    px_metrics_event(&warn);
    assert_int_equal(m->events[AUDIT_EV_REQUEST][AUDIT_EV_ALLOWED], 2);
    assert_int_equal(m->events[AUDIT_EV_REQUEST][AUDIT_EV_BLOCKED], 3);
    assert_int_equal(m->events[AUDIT_EV_REQUEST][AUDIT_EV_WARN], 1);
    assert_int_equal(m->events[AUDIT_EV_DNS][AUDIT_EV_V_NONE], 1);
    assert_int_equal(m->leak_refusals, 1);
    assert_int_equal(m->budget_refusals, 1);
    memset(m, 0, sizeof(*m));
}

/* The text, whole: every series of the fixed set, cumulative buckets, +Inf, sum and count. */
static void test_metrics_render(void **state)
{
    (void)state;
    px_metrics_t m;
    memset(&m, 0, sizeof(m));
    m.events[AUDIT_EV_REQUEST][AUDIT_EV_ALLOWED] = 7;
    m.events[AUDIT_EV_CONNECT][AUDIT_EV_BLOCKED] = 1;
    m.upstream_errors[PX_M_UP_TLS] = 2;
    m.reloads_ok = 3;
    m.bytes_down = 1234;
    px_metrics_observe(&m.request_seconds, 0.004); /* le 0.005 */
    px_metrics_observe(&m.request_seconds, 0.2);   /* le 0.25 */
    px_metrics_observe(&m.request_seconds, 100.0); /* +Inf only */
    px_metrics_gauges_t g = {.connections = 4, .accepted = 9, .leaf_cache_hits = 5};
    char buf[16384];
    size_t n = px_metrics_render(&m, &g, buf, sizeof(buf));
    assert_true(n < sizeof(buf));
    assert_int_equal(strlen(buf), n);
    static const char *const want[] = {
        "# TYPE airlock_decisions_total counter\n",
        "airlock_decisions_total{kind=\"request\",verdict=\"allowed\"} 7\n",
        "airlock_decisions_total{kind=\"connect\",verdict=\"blocked\"} 1\n",
        "airlock_upstream_errors_total{kind=\"tls\"} 2\n",
        "airlock_upstream_errors_total{kind=\"destination\"} 0\n",
        "airlock_reloads_total{result=\"ok\"} 3\n",
        "airlock_reloads_total{result=\"failed\"} 0\n",
        "airlock_body_bytes_total{direction=\"down\"} 1234\n",
        "airlock_connections 4\n",
        "airlock_connections_total 9\n",
        "airlock_leaf_cache_total{result=\"hit\"} 5\n",
        "# TYPE airlock_request_duration_seconds histogram\n",
        "airlock_request_duration_seconds_bucket{le=\"0.005\"} 1\n",
        "airlock_request_duration_seconds_bucket{le=\"0.1\"} 1\n",
        "airlock_request_duration_seconds_bucket{le=\"0.25\"} 2\n",
        "airlock_request_duration_seconds_bucket{le=\"60\"} 2\n",
        "airlock_request_duration_seconds_bucket{le=\"+Inf\"} 3\n",
        "airlock_request_duration_seconds_sum 100.204000\n",
        "airlock_request_duration_seconds_count 3\n",
        "airlock_upstream_first_byte_seconds_count 0\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(buf, want[i]) == NULL)
            fail_msg("missing: %s", want[i]);
    /* a zero event counter is not written: the series appear as they happen */
    assert_null(strstr(buf, "verdict=\"warn\""));
    /* every line is a comment or "name{labels} value" */
    for (char *line = buf; *line != '\0';) {
        char *nl = strchr(line, '\n');
        assert_non_null(nl);
        if (line[0] != '#')
            assert_true(strncmp(line, "airlock_", 8) == 0 &&
                        memchr(line, ' ', (size_t)(nl - line)));
        line = nl + 1;
    }
    /* too small a buffer: the length it needed, and what fits is NUL-terminated */
    char small[64];
    assert_int_equal(px_metrics_render(&m, &g, small, sizeof(small)), n);
    assert_int_equal(strlen(small), sizeof(small) - 1);
}

/* Why a client's handshake failed, from the facts the connection has when it fails. */
static void test_metrics_tls_reason(void **state)
{
    (void)state;
    static const struct {
        int alert, sent_cert, has_sni;
        const char *err;
        px_metrics_tlsfail_t want;
    } cases[] = {
        /* the client refused airlock's certificate: an alert, or it closed after it */
        {48, 1, 1, "TLS handshake failed: error:0A000418:SSL routines::tlsv1 alert unknown ca",
         PX_M_TLS_UNTRUSTED},
        {42, 1, 0, "", PX_M_TLS_UNTRUSTED},
        {46, 1, 1, NULL, PX_M_TLS_UNTRUSTED},
        {-1, 1, 1, "TLS handshake failed: connection closed", PX_M_TLS_UNTRUSTED},
        /* airlock's certificate callback refused the name (OpenSSL: callback failed) */
        {-1, 0, 1, "TLS handshake failed: error:0A000086:SSL routines::callback failed",
         PX_M_TLS_UNKNOWN_NAME},
        {-1, 0, 0, "TLS handshake failed: error:0A000086:SSL routines::callback failed",
         PX_M_TLS_NO_SNI},
        /* versions, ciphers, records, another alert */
        {-1, 0, 1, "TLS handshake failed: error:0A0000C1:SSL routines::no shared cipher",
         PX_M_TLS_PROTOCOL},
        {-1, 0, 0, "TLS handshake failed: error:0A00010B:SSL routines::wrong version number",
         PX_M_TLS_PROTOCOL},
        {70, 0, 1, "", PX_M_TLS_PROTOCOL}, /* protocol_version */
        {40, 0, 1, "TLS handshake failed", PX_M_TLS_PROTOCOL},
        /* gone without a word */
        {-1, 0, 1, "TLS handshake failed: connection closed", PX_M_TLS_CLIENT_ABORTED},
        {-1, 0, 0, "", PX_M_TLS_CLIENT_ABORTED},
        {-1, 0, 1, NULL, PX_M_TLS_CLIENT_ABORTED},
        {-1, 0, 1, "TLS handshake failed: connection reset by peer", PX_M_TLS_CLIENT_ABORTED},
        {-1, 0, 1, "out of memory", PX_M_TLS_OTHER},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        px_metrics_tlsfail_t got = px_metrics_tls_reason(cases[i].alert, cases[i].sent_cert,
                                                         cases[i].has_sni, cases[i].err);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): %d, want %d", i, cases[i].err ? cases[i].err : "NULL",
                     (int)got, (int)cases[i].want);
    }
    px_metrics_t *m = px_metrics();
    memset(m, 0, sizeof(*m));
    px_metrics_tls_failed(PX_M_TLS_NO_SNI);
    px_metrics_tls_failed(PX_M_TLS_NO_SNI);
    px_metrics_tls_failed(PX_M_TLS_REASONS); /* out of range: ignored */
    assert_int_equal(m->tls_failures[PX_M_TLS_NO_SNI], 2);
    px_metrics_h2_stream(1);
    px_metrics_h2_stream(1);
    px_metrics_h2_stream(-1);
    assert_int_equal(m->h2_streams, 1);
    px_metrics_gauges_t g = {0};
    static char buf[128 * 1024];
    px_metrics_render(m, &g, buf, sizeof(buf));
    assert_non_null(strstr(buf, "airlock_tls_handshake_failures_total{reason=\"no_sni\"} 2\n"));
    assert_non_null(strstr(buf, "airlock_tls_handshake_failures_total{reason=\"untrusted\"} 0\n"));
    assert_non_null(strstr(buf, "# TYPE airlock_h2_streams gauge\nairlock_h2_streams 1\n"));
    px_metrics_h2_stream(-5); /* a stray close never makes the gauge negative */
    assert_int_equal(m->h2_streams, 0);
    memset(m, 0, sizeof(*m));
}

/* Per sandbox: request-shaped events by verdict, the host's log not counted, names escaped as
 * label values, and past PX_METRICS_SANDBOXES_MAX names one shared series: the text stays
 * bounded (the metrics listener's 128 KiB) however many sandboxes come and go. */
static void test_metrics_sandboxes(void **state)
{
    (void)state;
    px_metrics_t *m = px_metrics();
    memset(m, 0, sizeof(*m));
    audit_event_t ok =
        audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_ALLOWED, "GET", "http://h/", 200);
    audit_event_t no =
        audit_event_access(AUDIT_EV_CONNECT, AUDIT_EV_BLOCKED, "CONNECT", "h:443", 403);
    audit_event_t dns = {.kind = AUDIT_EV_DNS, .status = -1};
    px_metrics_sandbox_event("team-a", &ok);
    px_metrics_sandbox_event("team-a", &ok);
    px_metrics_sandbox_event("team-a", &no);
    px_metrics_sandbox_event("team-a", &dns); /* not request-shaped */
    px_metrics_sandbox_event("", &ok);        /* the host's log */
    px_metrics_sandbox_event(NULL, &ok);
    px_metrics_sandbox_event("q\"b\\n\n", &ok);
    px_metrics_gauges_t g = {0};
    static char buf[256 * 1024];
    size_t n = px_metrics_render(m, &g, buf, sizeof(buf));
    assert_true(n < sizeof(buf));
    assert_non_null(
        strstr(buf, "airlock_sandbox_requests_total{sandbox=\"team-a\",verdict=\"allowed\"} 2\n"));
    assert_non_null(
        strstr(buf, "airlock_sandbox_requests_total{sandbox=\"team-a\",verdict=\"blocked\"} 1\n"));
    assert_non_null(strstr(buf, "{sandbox=\"q\\\"b\\\\n\\n\",verdict=\"allowed\"} 1\n"));
    assert_null(strstr(buf, "sandbox=\"\""));
    assert_null(strstr(buf, "sandbox=\"_other\"")); /* nothing there yet */
    /* more sandboxes than named series, each name as long as the log allows, every verdict */
    audit_event_verdict_t vs[] = {AUDIT_EV_ALLOWED, AUDIT_EV_BLOCKED, AUDIT_EV_ERROR,
                                  AUDIT_EV_WARN};
    for (int i = 0; i < 3 * PX_METRICS_SANDBOXES_MAX; i++) {
        char name[PX_METRICS_SANDBOX_NAME_MAX];
        snprintf(name, sizeof(name), "%062d%c", i, 'x');
        for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++) {
            audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, vs[v], "GET", "http://h/", 200);
            px_metrics_sandbox_event(name, &ev);
        }
    }
    assert_int_equal(m->nsandboxes, PX_METRICS_SANDBOXES_MAX);
    /* 2 named above + 3 * MAX here: MAX named, the rest shared */
    assert_int_equal(m->sandbox_other.requests[AUDIT_EV_ALLOWED],
                     3 * PX_METRICS_SANDBOXES_MAX + 2 - PX_METRICS_SANDBOXES_MAX);
    char other[128];
    snprintf(other, sizeof(other), "{sandbox=\"_other\",verdict=\"warn\"} %d\n",
             3 * PX_METRICS_SANDBOXES_MAX + 2 - PX_METRICS_SANDBOXES_MAX);
    /* every other counter at its widest too: the largest text there can be */
    for (size_t k = 0; k <= AUDIT_EV_KIND_LAST; k++)
        for (size_t v = 0; v <= AUDIT_EV_REJECTED; v++)
            m->events[k][v] = UINT64_MAX;
    for (size_t k = 0; k < PX_M_DECIDE_OUTCOMES; k++)
        m->decide_calls[k] = UINT64_MAX;
    m->decide_breaker_open = 1;
    m->decide_in_flight = 64;
    n = px_metrics_render(m, &g, buf, sizeof(buf));
    assert_non_null(strstr(buf, other));
    assert_true(n < 128 * 1024); /* app/px_metrics_http.c's PX__METRICS_BODY_MAX */
    memset(m, 0, sizeof(*m));
}

/* A hold's DECISION events count under their own kind (approved: allowed, denied: blocked), the
 * last kind has its slot; the decision webhook's series (calls by outcome, the breaker and
 * calls in flight gauges) are rendered, and summed from the engine's loop. */
static void test_metrics_decide(void **state)
{
    (void)state;
    px_metrics_t *m = px_metrics();
    memset(m, 0, sizeof(*m));
    audit_event_t ev = {.kind = AUDIT_EV_DECISION, .verdict = AUDIT_EV_ALLOWED, .status = -1};
    px_metrics_event(&ev);
    px_metrics_event(&ev);
    ev.verdict = AUDIT_EV_BLOCKED;
    px_metrics_event(&ev);
    assert_int_equal(m->events[AUDIT_EV_DECISION][AUDIT_EV_ALLOWED], 2);
    assert_int_equal(m->events[AUDIT_EV_DECISION][AUDIT_EV_BLOCKED], 1);
    m->decide_calls[PX_M_DECIDE_ALLOW] = 4;
    m->decide_calls[PX_M_DECIDE_DENY] = 3;
    m->decide_calls[PX_M_DECIDE_TIMEOUT] = 2;
    m->decide_calls[PX_M_DECIDE_MALFORMED] = 1;
    m->decide_breaker_open = 1;
    m->decide_in_flight = 5;
    px_metrics_t sum;
    px_metrics_sum(&sum);
    px_metrics_gauges_t g = {0};
    static char buf[64 * 1024];
    size_t n = px_metrics_render(&sum, &g, buf, sizeof(buf));
    assert_true(n < sizeof(buf));
    static const char *const want[] = {
        "airlock_decisions_total{kind=\"decision\",verdict=\"allowed\"} 2\n",
        "airlock_decisions_total{kind=\"decision\",verdict=\"blocked\"} 1\n",
        "# TYPE airlock_decide_calls_total counter\n",
        "airlock_decide_calls_total{outcome=\"allow\"} 4\n",
        "airlock_decide_calls_total{outcome=\"deny\"} 3\n",
        "airlock_decide_calls_total{outcome=\"timeout\"} 2\n",
        "airlock_decide_calls_total{outcome=\"error\"} 0\n",
        "airlock_decide_calls_total{outcome=\"malformed\"} 1\n",
        "# TYPE airlock_decide_breaker_open gauge\n",
        "airlock_decide_breaker_open 1\n",
        "# TYPE airlock_decide_calls_in_flight gauge\n",
        "airlock_decide_calls_in_flight 5\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (strstr(buf, want[i]) == NULL)
            fail_msg("missing: %s", want[i]);
    memset(m, 0, sizeof(*m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_up_error),  cmocka_unit_test(test_metrics_events),
        cmocka_unit_test(test_metrics_render),    cmocka_unit_test(test_metrics_tls_reason),
        cmocka_unit_test(test_metrics_sandboxes), cmocka_unit_test(test_metrics_decide),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
