/* RFC 9113 errors the HTTP/2 server codec (px_h2.c) must give for frames on closed streams, on
 * stream ids a client skipped over, and for invalid PRIORITY frames (the cases h2spec found
 * ignored: tests/h2spec/README.md). Raw frames in, the first GOAWAY and RST_STREAM out; the
 * controls are frames that must stay no error (ids in order, a stream opened and still open). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>

#include "http/px_h2.h"

typedef struct srv {
    px_h2_t *h;
    int answer; /* answer each request at its end, ending the stream both ways */
} srv_t;

static void on_request(void *o, int32_t sid, px_msg_t *m, const px_h2_req_t *rq)
{
    (void)o, (void)sid, (void)rq;
    px_msg_free(m);
}

static void on_data(void *o, int32_t sid, const char *d, size_t len)
{
    (void)d;
    px_h2_consume(((srv_t *)o)->h, sid, len);
}

static void on_end(void *o, int32_t sid, const px_fields_t *t)
{
    srv_t *s = o;
    (void)t;
    if (!s->answer)
        return;
    assert_int_equal(px_h2_respond(s->h, sid, 200, NULL, 0, 1), 0);
    assert_int_equal(px_h2_end(s->h, sid, NULL), 0);
}

static void on_reset(void *o, int32_t sid, uint32_t code)
{
    (void)o, (void)sid, (void)code;
}
static void on_drain(void *o, int32_t sid)
{
    (void)o, (void)sid;
}
static void on_refused(void *o, int32_t sid, int status, const char *reason)
{
    (void)o, (void)sid, (void)status, (void)reason;
}

static const px_h2_cbs_t cbs = {on_request, on_data, on_end, on_reset, on_drain, on_refused};

/* ---- frames in ---- */
enum { F_DATA, F_HEADERS, F_HEADERS_OPEN, F_PRIORITY, F_PRIORITY_SELF, F_RST, F_END };
typedef struct step {
    int kind;
    uint32_t sid;
} step_t;

static size_t frame(uint8_t *out, uint8_t type, uint8_t flags, uint32_t sid, const void *p,
                    size_t len)
{
    const uint8_t hd[9] = {
        (uint8_t)(len >> 16), (uint8_t)(len >> 8),  (uint8_t)len,        type,        flags,
        (uint8_t)(sid >> 24), (uint8_t)(sid >> 16), (uint8_t)(sid >> 8), (uint8_t)sid};
    memcpy(out, hd, 9);
    if (len)
        memcpy(out + 9, p, len);
    return 9 + len;
}

static size_t headers(uint8_t *out, nghttp2_hd_deflater *d, uint32_t sid, int end)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"POST", 7, 4, 0},
        {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, 0},
        {(uint8_t *)":authority", (uint8_t *)"ok.test", 10, 7, 0},
        {(uint8_t *)":path", (uint8_t *)"/", 5, 1, 0},
    };
    uint8_t blk[256];
    ssize_t n = nghttp2_hd_deflate_hd(d, blk, sizeof(blk), nv, 4);
    assert_true(n > 0);
    return frame(out, 1, (uint8_t)(0x4 | (end ? 0x1 : 0)), sid, blk, (size_t)n);
}

static size_t step_bytes(uint8_t *out, nghttp2_hd_deflater *d, const step_t *st)
{
    static const uint8_t rst[4] = {0, 0, 0, 0x8}; /* CANCEL */
    uint8_t pri[5] = {0, 0, 0, 0, 15};            /* on stream 0, weight 16 */
    switch (st->kind) {
    case F_DATA:
        return frame(out, 0, 0, st->sid, "abc", 3);
    case F_HEADERS:
    case F_HEADERS_OPEN:
        return headers(out, d, st->sid, st->kind == F_HEADERS);
    case F_PRIORITY_SELF:
        pri[3] = (uint8_t)st->sid;
        /* fall through */
    case F_PRIORITY:
        return frame(out, 2, 0, st->sid, pri, sizeof(pri));
    default:
        return frame(out, 3, 0, st->sid, rst, sizeof(rst));
    }
}

/* ---- frames out: the first GOAWAY's and RST_STREAM's codes (-1: none) ---- */
static void take(srv_t *s, long *goaway, long *rst)
{
    static uint8_t buf[1 << 16];
    size_t have = 0;
    const char *o;
    size_t ol;
    while (px_h2_take_output(s->h, &o, &ol) == 0 && ol > 0) {
        assert_true(have + ol <= sizeof(buf));
        memcpy(buf + have, o, ol);
        have += ol;
    }
    for (size_t p = 0; p + 9 <= have;) {
        size_t len = (size_t)buf[p] << 16 | (size_t)buf[p + 1] << 8 | buf[p + 2];
        assert_true(p + 9 + len <= have);
        const uint8_t *pl = buf + p + 9;
        if (buf[p + 3] == 7 && *goaway < 0)
            *goaway = (long)pl[4] << 24 | pl[5] << 16 | pl[6] << 8 | pl[7];
        if (buf[p + 3] == 3 && *rst < 0)
            *rst = (long)pl[0] << 24 | pl[1] << 16 | pl[2] << 8 | pl[3];
        p += 9 + len;
    }
}

typedef struct conf_case {
    const char *name;
    int answer;
    step_t steps[12];
    long code; /* the error expected, as GOAWAY or RST_STREAM; -1: neither */
    int feed;  /* 0: each frame fed alone; 1: all in one buffer; 2: a byte at a time */
} conf_case_t;

static const conf_case_t cases[] = {
    {"PRIORITY on stream 0 (h2spec 6.3/1)",
     0,
     {{F_PRIORITY, 0}, {F_END, 0}},
     NGHTTP2_PROTOCOL_ERROR,
     0},
    {"PRIORITY on itself (h2spec 5.3.1/2)",
     0,
     {{F_PRIORITY_SELF, 1}, {F_END, 0}},
     NGHTTP2_PROTOCOL_ERROR,
     0},
    {"HEADERS on a skipped id (h2spec 5.1.1/2)",
     0,
     {{F_HEADERS, 5}, {F_HEADERS, 3}, {F_END, 0}},
     NGHTTP2_PROTOCOL_ERROR,
     0},
    {"DATA after the client's RST_STREAM (h2spec 5.1/8)",
     0,
     {{F_HEADERS_OPEN, 1}, {F_RST, 1}, {F_DATA, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     0},
    {"HEADERS after the client's RST_STREAM (h2spec 5.1/9)",
     0,
     {{F_HEADERS_OPEN, 1}, {F_RST, 1}, {F_HEADERS, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     0},
    {"DATA on a stream closed both ways (h2spec 5.1/11)",
     1,
     {{F_HEADERS, 1}, {F_DATA, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     0},
    {"DATA after the client's RST_STREAM, one buffer",
     0,
     {{F_HEADERS_OPEN, 1}, {F_RST, 1}, {F_DATA, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     1},
    {"HEADERS after the client's RST_STREAM, a byte at a time",
     0,
     {{F_HEADERS_OPEN, 1}, {F_RST, 1}, {F_HEADERS, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     2},
    {"DATA on a stream closed both ways, one buffer",
     1,
     {{F_HEADERS, 1}, {F_HEADERS, 3}, {F_DATA, 1}, {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     1},
    {"DATA on the 8th-last stream the client closed",
     1,
     {{F_HEADERS, 1},
      {F_HEADERS, 3},
      {F_HEADERS, 5},
      {F_HEADERS, 7},
      {F_HEADERS, 9},
      {F_HEADERS, 11},
      {F_HEADERS, 13},
      {F_HEADERS, 15},
      {F_DATA, 1},
      {F_END, 0}},
     NGHTTP2_STREAM_CLOSED,
     0},
    {"control: DATA on the 9th-last stream closed (forgotten: ignored)",
     1,
     {{F_HEADERS, 1},
      {F_HEADERS, 3},
      {F_HEADERS, 5},
      {F_HEADERS, 7},
      {F_HEADERS, 9},
      {F_HEADERS, 11},
      {F_HEADERS, 13},
      {F_HEADERS, 15},
      {F_HEADERS, 17},
      {F_DATA, 1},
      {F_END, 0}},
     -1,
     0},
    {"control: PRIORITY and RST_STREAM on a closed stream",
     1,
     {{F_HEADERS, 1}, {F_PRIORITY, 1}, {F_RST, 1}, {F_HEADERS, 3}, {F_END, 0}},
     -1,
     0},
    {"control: ids in order",
     0,
     {{F_HEADERS, 1}, {F_HEADERS, 3}, {F_HEADERS, 9}, {F_END, 0}},
     -1,
     0},
    {"control: DATA on an open stream", 0, {{F_HEADERS_OPEN, 1}, {F_DATA, 1}, {F_END, 0}}, -1, 0},
    {"control: PRIORITY on an idle stream",
     0,
     {{F_PRIORITY, 7}, {F_HEADERS, 1}, {F_END, 0}},
     -1,
     0},
};

static void test_px_h2_conform(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const conf_case_t *c = &cases[i];
        srv_t s = {NULL, c->answer};
        s.h = px_h2_new(&cbs, &s);
        assert_non_null(s.h);
        nghttp2_hd_deflater *d;
        assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
        static uint8_t b[4096];
        memcpy(b, NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
        size_t n = NGHTTP2_CLIENT_MAGIC_LEN;
        n += frame(b + n, 4, 0, 0, NULL, 0);
        n += frame(b + n, 4, 0x1, 0, NULL, 0); /* the server's SETTINGS acknowledged */
        px_h2_feed(s.h, (const char *)b, n);
        long goaway = -1, rst = -1;
        n = 0;
        for (const step_t *st = c->steps; st->kind != F_END; st++) {
            n += step_bytes(b + n, d, st);
            if (c->feed == 0) {
                px_h2_feed(s.h, (const char *)b, n); /* an error shows as frames */
                take(&s, &goaway, &rst);
                n = 0;
            }
        }
        for (size_t k = 0; k < n; k += c->feed == 2 ? 1 : n)
            px_h2_feed(s.h, (const char *)b + k, c->feed == 2 ? 1 : n);
        take(&s, &goaway, &rst);
        long got = goaway >= 0 ? goaway : rst;
        print_message("%-52s GOAWAY %ld RST_STREAM %ld %s\n", c->name, goaway, rst,
                      px_h2_reason(s.h));
        if (goaway > 0) /* a GOAWAY with an error says why (made when it was sent) */
            assert_true(strncmp(px_h2_reason(s.h), "GOAWAY ", 7) == 0);
        if (got != c->code)
            fail_msg("%s: expected %ld, got GOAWAY %ld RST_STREAM %ld", c->name, c->code, goaway,
                     rst);
        nghttp2_hd_deflate_del(d);
        px_h2_free(s.h);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_h2_conform),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
