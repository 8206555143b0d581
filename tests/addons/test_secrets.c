/* addon_secrets: the masked-secret pass, table-driven (secrets_cases.h: the reference's §10.4
 * catalogue and airlock's own cases), plus fail-closed errors, the counts, and the guarantee
 * that no real value reaches a log line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "audit/audit_note.h"
#include "addons/addon.h"
#include "addons/addon_replacements.h"
#include "addons/addon_secrets.h"
#include "base/px_err.h"
#include "tests/addons/secrets_cases.h"

typedef struct log_capture {
    char text[8192];
    size_t len;
    unsigned lines;
} log_capture_t;

static void on_test_log(void *data, const addon_note_t *note)
{
    /* the line as the proxy writes it: the note as its audit event, rendered */
    audit_event_t ev = audit_event_from_note(note);
    char line[AUDIT_EVENT_LINE_CAP];
    int rendered = audit_event_render(&ev, line, sizeof(line));
    size_t len = rendered > 0 ? (size_t)rendered : 0;
    log_capture_t *c = data;
    if (c->len + len + 2 > sizeof(c->text))
        fail_msg("log capture overflow");
    memcpy(c->text + c->len, line, len);
    c->len += len;
    c->text[c->len++] = '\n';
    c->text[c->len] = '\0';
    c->lines++;
}

static addon_str_t view(const char *s)
{
    addon_str_t v = {s, strlen(s)};
    return v;
}

/* Fills req for GET https://host/ with headers (borrowed, NULL name ends the list). */
static void req_init(addon_req_t *req, log_capture_t *log, const char *host, const sc_hdr_t *in,
                     size_t max)
{
    memset(req, 0, sizeof(*req));
    memset(log, 0, sizeof(*log));
    req->log_cb = on_test_log;
    req->log_data = log;
    req->method = view("GET");
    req->target = view("/");
    req->path = view("/");
    req->host = view(host);
    req->port = 443;
    req->tls = 1;
    for (size_t i = 0; i < max && in[i].name != NULL; i++) {
        req->headers[i].name = view(in[i].name);
        req->headers[i].value = view(in[i].value);
        req->nheaders++;
    }
}

static addon_replacements_t *load_map(const char *json)
{
    addon_replacements_t *r = NULL;
    char err[512] = "";
    int rc = addon_replacements_load_buffer("map.json", json, strlen(json), &r, err, sizeof(err));
    if (rc != 0)
        fail_msg("map does not load: %s\n%s", err, json);
    return r;
}

/* The live headers of req, one "name: value\n" each. */
static void dump_headers(const addon_req_t *req, char *out, size_t cap)
{
    size_t o = 0;
    out[0] = '\0';
    for (size_t i = 0; i < req->nheaders; i++) {
        const addon_header_t *h = &req->headers[i];
        if (h->removed)
            continue;
        int w = snprintf(out + o, cap - o, "%.*s: %.*s\n", (int)h->name.len, h->name.base,
                         (int)h->value.len, h->value.base);
        if (w < 0 || (size_t)w >= cap - o)
            fail_msg("header dump overflow");
        o += (size_t)w;
    }
}

static void want_headers(const sc_hdr_t *out, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < SC_MAX_HEADERS && out[i].name != NULL; i++) {
        int w = snprintf(buf + o, cap - o, "%s: %s\n", out[i].name, out[i].value);
        if (w < 0 || (size_t)w >= cap - o)
            fail_msg("header dump overflow");
        o += (size_t)w;
    }
}

static void run_case(const secrets_case_t *c)
{
    addon_replacements_t *r = load_map(c->map);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    req_init(req, &log, c->host, c->in, SC_MAX_HEADERS);
    char url[256];
    snprintf(url, sizeof(url), "https://%s/", c->host);

    addon_secrets_result_t res;
    int rc = addon_secrets_apply(req, r, url, &res);
    char got[2048];
    char want[2048];
    dump_headers(req, got, sizeof(got));
    want_headers(c->out, want, sizeof(want));
    int ok = rc == 0 && strcmp(got, want) == 0 && strcmp(req->annot, c->annot) == 0 &&
             strcmp(log.text, c->log) == 0 && res.masked == c->masked &&
             res.dropped == c->dropped && res.collapsed == c->collapsed;
    if (!ok)
        fail_msg("case '%s': rc %d\n-- headers got:\n%s-- want:\n%s-- annot got '%s' want '%s'\n"
                 "-- log got:\n%s-- want:\n%s-- counts got %u/%u/%u want %u/%u/%u",
                 c->id, rc, got, want, req->annot, c->annot, log.text, c->log, res.masked,
                 res.dropped, res.collapsed, c->masked, c->dropped, c->collapsed);

    /* No real value ever reaches a log line. */
    for (size_t i = 0; i < addon_replacements_count(r); i++) {
        addon_str_t v = addon_replacements_value(r, i);
        if (v.len > 0 && memmem(log.text, log.len, v.base, v.len) != NULL)
            fail_msg("case '%s': a real value is in the log:\n%s", c->id, log.text);
    }
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

static void test_secrets_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(secrets_cases) / sizeof(secrets_cases[0]); i++)
        run_case(&secrets_cases[i]);
}

/* The table is large enough to mean something. */
static void test_secrets_table_size(void **state)
{
    (void)state;
    assert_true(sizeof(secrets_cases) / sizeof(secrets_cases[0]) >= 30);
}

/* A request the pass has already rewritten is left as it is by a second run with the same map
 * (the real values are not surrogates). */
static void test_secrets_run_once(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", "Bearer surr"}, {"X-Other", "surr"}};
    req_init(req, &log, "example.com", in, 2);
    assert_int_equal(addon_secrets_apply(req, r, "https://example.com/", NULL), 0);
    assert_string_equal(req->annot, " [masked: 1]");
    /* The second run finds "Bearer real": not the surrogate, so it strips it as foreign. That is
     * why the proxy runs the pass exactly once per request. */
    req->annot[0] = '\0';
    req->annot_len = 0;
    addon_secrets_result_t res;
    assert_int_equal(addon_secrets_apply(req, r, "https://example.com/", &res), 0);
    assert_int_equal(res.dropped, 1);
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

static void test_secrets_no_map(void **state)
{
    (void)state;
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", "Bearer surr"}};
    req_init(req, &log, "example.com", in, 1);
    addon_secrets_result_t res = {9, 9, 9, 9};
    assert_int_equal(addon_secrets_apply(req, NULL, "https://example.com/", &res), 0);
    assert_int_equal(res.masked + res.dropped + res.collapsed, 0);
    addon_replacements_t *empty = addon_replacements_new_empty("e");
    assert_int_equal(addon_secrets_apply(req, empty, NULL, NULL), 0);
    assert_string_equal(req->annot, "");
    assert_int_equal(log.lines, 0);
    assert_int_equal(req->headers[0].value.len, strlen("Bearer surr"));
    addon_replacements_unref(empty);
    free(req);
}

/* Plain http: a surrogate in scope is never replaced (the real value would cross the network
 * in clear) and is counted for the caller to refuse the request; Basic too; allow_plain_http
 * opts in; foreign credentials are still stripped. */
static void test_secrets_plain_http(void **state)
{
    (void)state;
    static const struct {
        const char *map;
        sc_hdr_t hdr;
        unsigned plain, masked, dropped;
        const char *value_after; /* NULL: header removed */
    } cases[] = {
        {MAP_D, {"Authorization", "Bearer surr"}, 1, 0, 0, "Bearer surr"},
        /* "user:surr" in Basic */
        {MAP_D, {"Authorization", "Basic dXNlcjpzdXJy"}, 1, 0, 0, "Basic dXNlcjpzdXJy"},
        {MAP_D, {"Authorization", "Bearer attacker"}, 0, 0, 1, NULL},
        {MAP(ENTRY("surr", "real", "[\"other.com\"]", "[\"Authorization\"]")),
         {"Authorization", "Bearer surr"}, 0, 0, 0, "Bearer surr"},
        {"{\"surr\": {\"value\": \"real\", \"scopes\": [\"example.com\"], \"headers\": "
         "[\"Authorization\"], \"allow_plain_http\": true}}",
         {"Authorization", "Bearer surr"}, 0, 1, 0, "Bearer real"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        addon_replacements_t *r = load_map(cases[i].map);
        addon_req_t *req = malloc(sizeof(*req));
        log_capture_t log;
        assert_non_null(req);
        req_init(req, &log, "example.com", &cases[i].hdr, 1);
        req->tls = 0;
        req->port = 80;
        addon_secrets_result_t res;
        assert_int_equal(addon_secrets_apply(req, r, "http://example.com/", &res), 0);
        assert_int_equal(res.plain_http, cases[i].plain);
        assert_int_equal(res.masked, cases[i].masked);
        assert_int_equal(res.dropped, cases[i].dropped);
        if (cases[i].value_after == NULL) {
            assert_true(req->headers[0].removed);
        } else {
            assert_false(req->headers[0].removed);
            assert_int_equal(req->headers[0].value.len, strlen(cases[i].value_after));
            assert_memory_equal(req->headers[0].value.base, cases[i].value_after,
                                req->headers[0].value.len);
        }
        addon_req_reset(req);
        free(req);
        addon_replacements_unref(r);
    }
}

/* url NULL: the log line still reads, with "-" for the URL; no log_cb is fine too. */
static void test_secrets_log_without_url(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", "Bearer x"}};
    req_init(req, &log, "example.com", in, 1);
    req->method = view("POST");
    assert_int_equal(addon_secrets_apply(req, r, NULL, NULL), 0);
    assert_string_equal(log.text, "STRIPPED header 'authorization' from POST - (foreign credential "
                                  "blocked)\n");
    req_init(req, &log, "example.com", in, 1);
    req->log_cb = NULL;
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), 0);
    assert_string_equal(req->annot, " [dropped: 1]");
    free(req);
    addon_replacements_unref(r);
}

/* Annotations are appended after what earlier addons wrote. */
static void test_secrets_annotation_appends(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", "Bearer surr"}};
    req_init(req, &log, "example.com", in, 1);
    addon_req_annotate(req, "note");
    assert_int_equal(addon_secrets_apply(req, r, "https://example.com/", NULL), 0);
    assert_string_equal(req->annot, " [note] [masked: 1]");
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

/* Fail closed: an exhausted arena is an error, never a silent pass. */
static void test_secrets_arena_exhausted(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", "Bearer surr"}};
    req_init(req, &log, "example.com", in, 1);
    static char filler[ADDON_ARENA_MAX];
    assert_non_null(addon_req_dup(req, filler, ADDON_ARENA_MAX - 8));
    addon_secrets_result_t res;
    assert_int_equal(addon_secrets_apply(req, r, "https://example.com/", &res), PX_ENOMEM);
    assert_string_equal(req->annot, "");
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

/* Fail closed: a rewritten value over ADDON_SECRETS_VALUE_MAX is an error. */
static void test_secrets_value_too_big(void **state)
{
    (void)state;
    size_t vlen = ADDON_REPLACEMENTS_MAX_STRING;
    size_t cap = vlen + 256;
    char *map = malloc(cap);
    assert_non_null(map);
    int o = snprintf(map, cap, "{\"surr\": {\"value\": \"");
    memset(map + o, 'R', vlen);
    snprintf(map + o + vlen, cap - (size_t)o - vlen,
             "\", \"scopes\": [\"example.com\"], \"headers\": [\"*\"]}}");
    addon_replacements_t *r = load_map(map);
    free(map);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);

    /* two occurrences fit (2 * 8192 + 1 < 16384 is false: 16385), one does */
    sc_hdr_t one[] = {{"X-A", "surr"}};
    req_init(req, &log, "example.com", one, 1);
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), 0);
    assert_int_equal(req->headers[0].value.len, vlen);
    addon_req_reset(req);
    sc_hdr_t two[] = {{"X-A", "surr surr"}};
    req_init(req, &log, "example.com", two, 1);
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), PX_ETOOBIG);
    addon_req_reset(req);
    /* Basic: the re-encoded value would be over the cap */
    sc_hdr_t basic[] = {{"Authorization", "Basic c3VycjpzdXJy"}};
    req_init(req, &log, "example.com", basic, 1);
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), PX_ETOOBIG);
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

/* A Basic value longer than the decode cap is not Basic (so it is stripped, not forwarded). */
static void test_secrets_basic_too_long(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    size_t len = 6 + (ADDON_SECRETS_VALUE_MAX / 3 + 1) * 4;
    char *v = malloc(len + 1);
    assert_non_null(v);
    memcpy(v, "Basic ", 6);
    memset(v + 6, 'A', len - 6);
    v[len] = '\0';
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    sc_hdr_t in[] = {{"Authorization", v}};
    req_init(req, &log, "example.com", in, 1);
    addon_secrets_result_t res;
    assert_int_equal(addon_secrets_apply(req, r, "u", &res), 0);
    assert_int_equal(res.dropped, 1);
    assert_int_equal(req->headers[0].removed, 1);
    free(req);
    free(v);
    addon_replacements_unref(r);
}

/* A full header array: every one of them holds the surrogate under one name. */
static void test_secrets_many_duplicates(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_D);
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    req_init(req, &log, "example.com", NULL, 0);
    size_t cap = sizeof(req->headers) / sizeof(req->headers[0]);
    for (size_t i = 0; i < cap; i++) {
        req->headers[i].name = view(i % 2 ? "authorization" : "Authorization");
        req->headers[i].value = view(i == cap - 1 ? "Bearer surr" : "Bearer evil");
    }
    req->nheaders = cap;
    addon_secrets_result_t res;
    assert_int_equal(addon_secrets_apply(req, r, "https://example.com/", &res), 0);
    assert_int_equal(res.masked, 1);
    assert_int_equal(res.collapsed, 1);
    size_t live = 0;
    for (size_t i = 0; i < cap; i++)
        live += !req->headers[i].removed;
    assert_int_equal(live, 1);
    assert_false(req->headers[0].removed);
    assert_int_equal(req->headers[0].value.len, strlen("Bearer real"));
    assert_memory_equal(req->headers[0].value.base, "Bearer real", strlen("Bearer real"));
    char want[160];
    snprintf(want, sizeof(want),
             "COLLAPSED %zu duplicate 'authorization' headers in GET https://example.com/ "
             "(duplicate credential headers removed)\n",
             cap);
    assert_string_equal(log.text, want);
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

/* Values are byte ranges: no NUL terminator assumed, NUL bytes allowed around the surrogate. */
static void test_secrets_byte_ranges(void **state)
{
    (void)state;
    addon_replacements_t *r = load_map(MAP_HDRS("[\"X-*\"]"));
    addon_req_t *req = malloc(sizeof(*req));
    log_capture_t log;
    assert_non_null(req);
    req_init(req, &log, "example.com", NULL, 0);
    static const char buf[] = "X-Keyx\0surrsurrX";
    req->headers[0].name.base = buf;
    req->headers[0].name.len = 5; /* "X-Key" */
    req->headers[0].value.base = buf + 6;
    req->headers[0].value.len = 6; /* "\0surrs": one surrogate, then a byte past it */
    req->nheaders = 1;
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), 0);
    assert_int_equal(req->headers[0].value.len, 6);
    assert_memory_equal(req->headers[0].value.base, "\0reals", 6);
    /* a host as a byte range without NUL: "example.comX" cut at 11 */
    addon_req_reset(req);
    req_init(req, &log, "example.com", NULL, 0);
    req->host.base = "example.comX";
    req->host.len = 11;
    req->headers[0].name = view("X-A");
    req->headers[0].value = view("surr");
    req->nheaders = 1;
    assert_int_equal(addon_secrets_apply(req, r, "u", NULL), 0);
    assert_string_equal(req->annot, " [masked: 1]");
    addon_req_reset(req);
    free(req);
    addon_replacements_unref(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secrets_table),
        cmocka_unit_test(test_secrets_table_size),
        cmocka_unit_test(test_secrets_run_once),
        cmocka_unit_test(test_secrets_no_map),
        cmocka_unit_test(test_secrets_plain_http),
        cmocka_unit_test(test_secrets_log_without_url),
        cmocka_unit_test(test_secrets_annotation_appends),
        cmocka_unit_test(test_secrets_arena_exhausted),
        cmocka_unit_test(test_secrets_value_too_big),
        cmocka_unit_test(test_secrets_basic_too_long),
        cmocka_unit_test(test_secrets_many_duplicates),
        cmocka_unit_test(test_secrets_byte_ranges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
