/* Egress budgets: the `budgets:` list of the YAML allowlist (sizes, rates, host patterns, every
 * error with its place), and the counters (requests, sent and received bytes cut at the
 * budget, the rate's token bucket and its resets_in, host patterns that do not count other
 * hosts, counters kept by identity across a reload, dropped ones, new ones at 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "addons/addon_budget.h"
#include "addons/addon_policy.h"
#include "base/px_err.h"

static addon_policy_t *load(const char *text)
{
    addon_policy_t *p = NULL;
    char err[512] = "";
    int rc = addon_policy_load_buffer("b.yaml", text, strlen(text), &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("load failed: %s", err);
    return p;
}

static addon_str_t S(const char *s)
{
    return (addon_str_t){s, strlen(s)};
}

/* ---- sizes and rates ------------------------------------------------------------------------- */

static void test_budget_sizes(void **state)
{
    static const struct {
        const char *in;
        int rc;
        uint64_t v;
    } cases[] = {
        {"0", 0, 0},
        {"1048576", 0, 1048576},
        {"512KB", 0, 512000},
        {"512 kb", 0, 512000},
        {"10MB", 0, 10000000},
        {"10MiB", 0, 10485760},
        {"1GiB", 0, 1073741824},
        {"2 TB", 0, 2000000000000ULL},
        {"7B", 0, 7},
        {"", PX_ECONFIG, 0},
        {"MB", PX_ECONFIG, 0},
        {"10 M", PX_ECONFIG, 0},
        {"10MBs", PX_ECONFIG, 0},
        {"-1", PX_ECONFIG, 0},
        {"1.5MB", PX_ECONFIG, 0},
        {"99999999999999999999", PX_ECONFIG, 0},
        {"999999999999TiB", PX_ECONFIG, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 0;
        int rc = addon_budget_parse_size(cases[i].in, strlen(cases[i].in), &v);
        if (rc != cases[i].rc)
            fail_msg("size '%s': rc %d, want %d", cases[i].in, rc, cases[i].rc);
        if (rc == 0 && v != cases[i].v)
            fail_msg("size '%s': %llu", cases[i].in, (unsigned long long)v);
    }
}

static void test_budget_rates(void **state)
{
    static const struct {
        const char *in;
        int rc;
        uint64_t n, per;
    } cases[] = {
        {"60/min", 0, 60, 60000},
        {"5/s", 0, 5, 1000},
        {"5 / second", 0, 5, 1000},
        {"1000/hour", 0, 1000, 3600000},
        {"3/h", 0, 3, 3600000},
        {"10/day", 0, 10, 86400000},
        {"0/min", PX_ECONFIG, 0, 0},
        {"60", PX_ECONFIG, 0, 0},
        {"60/fortnight", PX_ECONFIG, 0, 0},
        {"/min", PX_ECONFIG, 0, 0},
        {"1.5/s", PX_ECONFIG, 0, 0},
        {"2000000000/s", PX_ECONFIG, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t n = 0, per = 0;
        int rc = addon_budget_parse_rate(cases[i].in, strlen(cases[i].in), &n, &per);
        if (rc != cases[i].rc)
            fail_msg("rate '%s': rc %d, want %d", cases[i].in, rc, cases[i].rc);
        if (rc == 0 && (n != cases[i].n || per != cases[i].per))
            fail_msg("rate '%s': %llu per %llu ms", cases[i].in, (unsigned long long)n,
                     (unsigned long long)per);
    }
}

/* ---- the YAML -------------------------------------------------------------------------------- */

static void test_budget_parse(void **state)
{
    addon_policy_t *p = load("domains: [example.com]\n"
                             "budgets:\n"
                             "  - host: all\n"
                             "    requests: 100\n"
                             "    sent: 10MB\n"
                             "    received: 1GiB\n"
                             "    rate: 60/min\n"
                             "  - host: \"*.Paste.Example.\"\n"
                             "    sent: 1000\n"
                             "  - host: .github.com\n"
                             "    requests: 0\n");
    size_t n;
    const addon_budget_t *b = addon_policy_budgets(p, &n);
    assert_int_equal(n, 6);
    assert_int_equal(b[0].kind, ADDON_BUDGET_REQUESTS);
    assert_int_equal(b[0].limit, 100);
    assert_null(b[0].pattern);
    assert_string_equal(b[0].key, "requests all");
    assert_string_equal(b[0].src, "b.yaml:3");
    assert_int_equal(b[1].kind, ADDON_BUDGET_SENT);
    assert_int_equal(b[1].limit, 10000000);
    assert_int_equal(b[2].kind, ADDON_BUDGET_RECEIVED);
    assert_int_equal(b[2].limit, 1073741824);
    assert_int_equal(b[3].kind, ADDON_BUDGET_RATE);
    assert_int_equal(b[3].limit, 60);
    assert_int_equal(b[3].per_ms, 60000);
    char t[64];
    addon_budget_limit_text(&b[3], t, sizeof(t));
    assert_string_equal(t, "60/min");
    assert_string_equal(b[4].key, "sent *.paste.example.");
    assert_string_equal(b[5].key, "requests .github.com");
    assert_int_equal(b[5].limit, 0);
    /* matching: the entries' host syntax */
    assert_true(addon_budget_matches(&b[0], S("anything.test")));
    assert_true(addon_budget_matches(&b[5], S("github.com")));
    assert_true(addon_budget_matches(&b[5], S("API.GitHub.com.")));
    assert_false(addon_budget_matches(&b[5], S("notgithub.com")));
    addon_policy_unref(p);
    /* JSON too, and an empty list */
    p = load(
        "{\"domains\": [\"a.test\"], \"budgets\": [{\"host\": \"a.test\", \"rate\": \"5/s\"}]}");
    b = addon_policy_budgets(p, &n);
    assert_int_equal(n, 1);
    assert_int_equal(b[0].per_ms, 1000);
    addon_policy_unref(p);
    p = load("budgets: []\n");
    addon_policy_budgets(p, &n);
    assert_int_equal(n, 0);
    addon_policy_unref(p);
}

static void test_budget_parse_errors(void **state)
{
    static const struct {
        const char *text;
        const char *err;
    } cases[] = {
        {"budgets: 5\n", "b.yaml:1:10: budgets: expected a sequence"},
        {"budgets:\n  - all\n", "b.yaml:2:5: budgets[0]: expected a mapping"},
        {"budgets:\n  - requests: 5\n", "b.yaml:2:5: budgets[0]: missing required key 'host'"},
        {"budgets:\n  - host: all\n", "b.yaml:2:5: budgets[0]: sets no limit"},
        {"budgets:\n  - host: all\n    request: 5\n",
         "b.yaml:3:5: budgets[0]: unknown key 'request'"},
        {"budgets:\n  - host: all\n    requests: -1\n",
         "b.yaml:3:15: budgets[0].requests: expected a whole number"},
        {"budgets:\n  - host: all\n    requests: 1.5\n",
         "b.yaml:3:15: budgets[0].requests: expected a number, got"},
        {"budgets:\n  - host: all\n    sent: 10 megs\n",
         "b.yaml:3:11: budgets[0].sent: expected a size in bytes"},
        {"budgets:\n  - host: all\n    received: [1]\n",
         "b.yaml:3:15: budgets[0].received: expected a number, got"},
        {"budgets:\n  - host: all\n    rate: 60\n",
         "b.yaml:3:11: budgets[0].rate: expected COUNT/PERIOD"},
        {"budgets:\n  - host: a.test:443\n    rate: 1/s\n", "b.yaml:2:11: budgets[0].host: "},
        {"budgets:\n  - host: a.test\n    sent: 5\n  - host: A.test.\n    sent: 6\n",
         "b.yaml:4:5: budgets[1].sent: a 'sent' budget for a.test is already set at b.yaml:2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_policy_t *p = NULL;
        char err[512] = "";
        int rc = addon_policy_load_buffer("b.yaml", cases[i].text, strlen(cases[i].text), &p, err,
                                          sizeof(err));
        if (rc == 0)
            fail_msg("case %zu loaded", i);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: got '%s', want '%s...'", i, err, cases[i].err);
    }
    /* more than the cap */
    char text[8192] = "budgets:\n";
    for (int i = 0; i <= ADDON_BUDGETS_MAX; i++)
        snprintf(text + strlen(text), sizeof(text) - strlen(text),
                 "  - {host: h%d.test, requests: 1}\n", i);
    addon_policy_t *p = NULL;
    char err[512];
    assert_int_equal(addon_policy_load_buffer("b.yaml", text, strlen(text), &p, err, sizeof(err)),
                     PX_ECONFIG);
    assert_non_null(strstr(err, "more than 64 items"));
}

/* agentbox's config.toml: airlock's own [airlock] table, through the same builder */
static void test_budget_agentbox(void **state)
{
    static const char toml[] = "[network]\n"
                               "allow_hosts = [\"paste.example\"]\n"
                               "[[airlock.budgets]]\n"
                               "host = \"all\"\n"
                               "requests = 100\n"
                               "rate = \"60/min\"\n"
                               "[[airlock.budgets]]\n"
                               "host = \".Paste.example\"\n"
                               "sent = \"100KB\"\n";
    addon_policy_t *p = NULL;
    char err[512] = "";
    assert_int_equal(addon_policy_load_buffer_as("c.toml", toml, strlen(toml),
                                                 ADDON_POLICY_FORMAT_AUTO, &p, err, sizeof(err)),
                     0);
    assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_AGENTBOX);
    size_t n;
    const addon_budget_t *b = addon_policy_budgets(p, &n);
    assert_int_equal(n, 3);
    assert_string_equal(b[0].key, "requests all");
    assert_string_equal(b[0].src, "c.toml:3");
    assert_string_equal(b[1].key, "rate all");
    assert_string_equal(b[2].key, "sent .paste.example");
    assert_int_equal(b[2].limit, 100000);
    /* --print-effective writes them back: the text loads as the same budgets */
    char text[8192];
    addon_policy_print_effective(p, text, sizeof(text));
    addon_policy_t *q = load(text);
    size_t m;
    const addon_budget_t *c = addon_policy_budgets(q, &m);
    assert_int_equal(m, n);
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(c[i].key, b[i].key);
        assert_int_equal(c[i].limit, b[i].limit);
        assert_int_equal(c[i].per_ms, b[i].per_ms);
    }
    addon_policy_unref(q);
    addon_policy_unref(p);

    static const struct {
        const char *text;
        const char *err;
    } cases[] = {
        {"[network]\n[airlock]\nbudget = 1\n", "c.toml:3:1: airlock: unknown key 'budget'"},
        {"[network]\n[airlock]\nbudgets = 1\n", "c.toml:3:11: airlock.budgets: expected an array"},
        {"[network]\n[airlock]\nbudgets = [1]\n",
         "c.toml:3:12: airlock.budgets[0]: expected a table"},
        {"[network]\n[[airlock.budgets]]\nrequests = 5\n",
         "c.toml:2:1: airlock.budgets[0]: missing required key 'host'"},
        {"[network]\n[[airlock.budgets]]\nhost = \"all\"\n",
         "c.toml:2:1: airlock.budgets[0]: sets no limit"},
        {"[network]\n[[airlock.budgets]]\nhost = \"all\"\nsent = \"1 lot\"\n",
         "c.toml:4:8: airlock.budgets[0].sent: expected a size in bytes"},
        {"[network]\n[[airlock.budgets]]\nhost = \"all\"\nrequests = -2\n",
         "c.toml:4:12: airlock.budgets[0].requests: expected a whole number"},
        {"[network]\n[[airlock.budgets]]\nhost = \"all\"\nrate = [1]\n",
         "c.toml:4:8: airlock.budgets[0].rate: expected a number or a string"},
        {"[network]\n[[airlock.budgets]]\nhost = \"x/y\"\nrate = \"1/s\"\n",
         "c.toml:3:8: airlock.budgets[0].host: host pattern contains '/'"},
        {"[network]\n[[airlock.budgets]]\nhost = \"all\"\nrate = \"1/s\"\nsize = 1\n",
         "c.toml:5:1: airlock.budgets[0]: unknown key 'size'"},
        {"[network]\n[[airlock.budgets]]\nhost = \"a\"\nrate = \"1/s\"\n"
         "[[airlock.budgets]]\nhost = \"A.\"\nrate = \"2/s\"\n",
         "c.toml:5:1: airlock.budgets[1].rate: a 'rate' budget for a is already set at c.toml:2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        p = NULL;
        int rc = addon_policy_load_buffer_as("c.toml", cases[i].text, strlen(cases[i].text),
                                             ADDON_POLICY_FORMAT_AGENTBOX, &p, err, sizeof(err));
        if (rc == 0)
            fail_msg("case %zu loaded", i);
        if (strncmp(err, cases[i].err, strlen(cases[i].err)) != 0)
            fail_msg("case %zu: got '%s', want '%s...'", i, err, cases[i].err);
    }
}

/* ---- the counters ---------------------------------------------------------------------------- */

static void test_budget_requests(void **state)
{
    addon_policy_t *p = load("budgets:\n  - {host: \"*.example.com\", requests: 3}\n");
    addon_budget_table_t *t = addon_budget_table_new();
    addon_budget_req_t *r;
    addon_budget_over_t o;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(addon_budget_begin(t, p, S("a.example.com"), 0, 0, &r, &o), 0);
        assert_null(r); /* nothing to count after the head */
    }
    assert_int_equal(addon_budget_begin(t, p, S("b.example.com"), 0, 0, &r, &o), 1);
    assert_int_equal(o.used, 3);
    assert_int_equal(o.resets_in_ms, -1);
    char d[ADDON_BUDGET_DESC_MAX];
    addon_budget_describe(&o, d, sizeof(d));
    assert_string_equal(d, "requests for *.example.com, 3/3");
    /* another host is not counted, nor refused */
    for (int i = 0; i < 10; i++)
        assert_int_equal(addon_budget_begin(t, p, S("example.org"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_table_used(t, "requests *.example.com"), 3);
    addon_budget_table_free(t);
    addon_policy_unref(p);
}

static void test_budget_bytes(void **state)
{
    addon_policy_t *p = load("budgets:\n  - {host: all, sent: 100, received: 50}\n"
                             "  - {host: up.test, sent: 60}\n");
    addon_budget_table_t *t = addon_budget_table_new();
    addon_budget_req_t *r, *r2;
    addon_budget_over_t o;
    uint64_t fit = 99;
    assert_int_equal(addon_budget_begin(t, p, S("up.test"), 1, 0, &r, &o), 0);
    assert_non_null(r);
    assert_int_equal(addon_budget_count(r, ADDON_BUDGET_SENT, 40, &fit, &o), 0);
    /* the host's own budget (60) is the tighter one: 20 of 30 fit */
    assert_int_equal(addon_budget_count(r, ADDON_BUDGET_SENT, 30, &fit, &o), 1);
    assert_int_equal(fit, 20);
    assert_string_equal(o.b->key, "sent up.test");
    assert_int_equal(o.used, 60);
    assert_int_equal(addon_budget_table_used(t, "sent up.test"), 60);
    assert_int_equal(addon_budget_table_used(t, "sent all"), 60);
    assert_int_equal(addon_budget_count(r, ADDON_BUDGET_SENT, 1, &fit, &o), 1);
    assert_int_equal(fit, 0);
    /* received: cut at 50 */
    assert_int_equal(addon_budget_count(r, ADDON_BUDGET_RECEIVED, 50, &fit, &o), 0);
    assert_int_equal(addon_budget_count(r, ADDON_BUDGET_RECEIVED, 1, &fit, &o), 1);
    assert_int_equal(fit, 0);
    addon_budget_end(r);
    /* now: a bodiless request to up.test is refused by the received budget (all, used up) */
    assert_int_equal(addon_budget_begin(t, p, S("up.test"), 0, 0, &r, &o), 1);
    assert_string_equal(o.b->key, "received all");
    addon_policy_unref(p);
    /* a body that does not fit what is left is refused at the head */
    addon_policy_t *q = load("budgets:\n  - {host: all, sent: 100}\n");
    assert_int_equal(addon_budget_begin(t, q, S("x.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, q, S("x.test"), 40, 0, &r2, &o), 0);
    /* "sent all" was kept across the switch of policy: 60 used, 40 left */
    assert_int_equal(addon_budget_count(r2, ADDON_BUDGET_SENT, 40, &fit, &o), 0);
    addon_budget_end(r2);
    addon_budget_end(r);
    assert_int_equal(addon_budget_begin(t, q, S("x.test"), 1, 0, &r, &o), 1);
    assert_int_equal(o.used, 100);
    assert_int_equal(addon_budget_begin(t, q, S("x.test"), 0, 0, &r, &o), 0); /* no body: fine */
    addon_budget_end(r);
    addon_budget_table_free(t);
    addon_policy_unref(q);
}

static void test_budget_rate(void **state)
{
    addon_policy_t *p = load("budgets:\n  - {host: api.test, rate: 2/s}\n");
    addon_budget_table_t *t = addon_budget_table_new();
    addon_budget_req_t *r;
    addon_budget_over_t o;
    uint64_t now = 1000;
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 1);
    assert_int_equal(o.resets_in_ms, 500); /* one token every 500 ms */
    char d[ADDON_BUDGET_DESC_MAX];
    addon_budget_describe(&o, d, sizeof(d));
    assert_string_equal(d, "rate for api.test, 2/s");
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now + 200, &r, &o), 1);
    assert_int_equal(o.resets_in_ms, 300);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now + 500, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now + 500, &r, &o), 1);
    /* a long pause refills to the burst, never past it */
    now += 60000;
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p, S("api.test"), 0, now, &r, &o), 1);
    /* other hosts are not limited */
    assert_int_equal(addon_budget_begin(t, p, S("other.test"), 0, now, &r, &o), 0);
    addon_budget_table_free(t);
    addon_policy_unref(p);
}

/* A reload: kept by identity, dropped, new at 0; requests under way keep their counters. */
static void test_budget_reload(void **state)
{
    addon_policy_t *p1 = load("budgets:\n  - {host: a.test, requests: 10, sent: 1000}\n"
                              "  - {host: b.test, requests: 10}\n");
    addon_budget_table_t *t = addon_budget_table_new();
    addon_budget_req_t *r, *inflight;
    addon_budget_over_t o;
    uint64_t fit;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(addon_budget_begin(t, p1, S("a.test"), 0, 0, &r, &o), 0);
        addon_budget_end(r);
    }
    assert_int_equal(addon_budget_begin(t, p1, S("b.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p1, S("a.test"), 1, 0, &inflight, &o), 0);
    assert_int_equal(addon_budget_count(inflight, ADDON_BUDGET_SENT, 100, &fit, &o), 0);
    /* the new policy: a.test's requests kept (limit lowered to 6), its sent budget removed,
     * b.test removed, c.test new */
    addon_policy_t *p2 = load("budgets:\n  - {host: a.test, requests: 6}\n"
                              "  - {host: c.test, requests: 1}\n");
    assert_int_equal(addon_budget_table_sync(t, p2, 0), 0);
    assert_int_equal(addon_budget_table_used(t, "requests a.test"), 5);
    assert_int_equal(addon_budget_table_used(t, "requests b.test"), 0);
    assert_int_equal(addon_budget_table_used(t, "sent a.test"), 0);
    /* the request under way still counts on its (now dropped) counter, and ends cleanly */
    assert_int_equal(addon_budget_count(inflight, ADDON_BUDGET_SENT, 100, &fit, &o), 0);
    addon_budget_end(inflight);
    addon_policy_unref(p1); /* the request under way held it, as an exchange holds its snapshot */
    assert_int_equal(addon_budget_begin(t, p2, S("a.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p2, S("a.test"), 0, 0, &r, &o), 1);
    assert_int_equal(o.used, 6);
    assert_int_equal(addon_budget_begin(t, p2, S("c.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p2, S("c.test"), 0, 0, &r, &o), 1);
    /* b.test: no budget any more; and back again: starts at 0 */
    assert_int_equal(addon_budget_begin(t, p2, S("b.test"), 0, 0, &r, &o), 0);
    addon_policy_t *p3 = load("budgets:\n  - {host: b.test, requests: 1}\n");
    assert_int_equal(addon_budget_begin(t, p3, S("b.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_begin(t, p3, S("b.test"), 0, 0, &r, &o), 1);
    /* a policy without budgets empties the table */
    addon_policy_t *p4 = load("domains: [a.test]\n");
    assert_int_equal(addon_budget_begin(t, p4, S("b.test"), 0, 0, &r, &o), 0);
    assert_int_equal(addon_budget_table_used(t, "requests b.test"), 0);
    addon_budget_table_free(t);
    addon_policy_unref(p2);
    addon_policy_unref(p3);
    addon_policy_unref(p4);
}

/* `test_budget --bench [N]`: the per-request cost of the budgets of tests/bench/budget_bench.sh
 * (begin, count a 1 KiB response and a small body, end), N requests (default 2,000,000). */
static int bench(long n)
{
    addon_policy_t *p =
        load("budgets:\n"
             "  - {host: all, requests: 1000000000000, sent: 1000TB, "
             "received: 1000TB, rate: 1000000000/s}\n"
             "  - {host: \"*.test\", requests: 1000000000000, received: 1000TB}\n"
             "  - {host: bench.test, requests: 1000000000000, rate: 1000000000/s}\n");
    addon_budget_table_t *t = addon_budget_table_new();
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < n; i++) {
        addon_budget_req_t *r;
        addon_budget_over_t o;
        uint64_t fit;
        if (addon_budget_begin(t, p, S("Bench.test"), 0, (uint64_t)i / 1000, &r, &o) != 0)
            return 1;
        addon_budget_count(r, ADDON_BUDGET_SENT, 100, &fit, &o);
        addon_budget_count(r, ADDON_BUDGET_RECEIVED, 1024, &fit, &o);
        addon_budget_end(r);
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
    printf("%ld requests: %.0f ns per request (3 budget items, 6 limits, all matching)\n", n, ns);
    addon_budget_table_free(t);
    addon_policy_unref(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0)
        return bench(argc > 2 ? atol(argv[2]) : 2000000);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_budget_sizes),    cmocka_unit_test(test_budget_rates),
        cmocka_unit_test(test_budget_parse),    cmocka_unit_test(test_budget_parse_errors),
        cmocka_unit_test(test_budget_agentbox), cmocka_unit_test(test_budget_requests),
        cmocka_unit_test(test_budget_bytes),    cmocka_unit_test(test_budget_rate),
        cmocka_unit_test(test_budget_reload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
