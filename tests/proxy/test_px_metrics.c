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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_up_error),
        cmocka_unit_test(test_metrics_events),
        cmocka_unit_test(test_metrics_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
