/* proxy/px_wsscrub: the upstream's WebSocket frames with every real value replaced. For each
 * case of a table (a value in one frame, split over fragments with a ping between them, in a
 * close frame, in 7-, 16- and 64-bit length frames, growing and shrinking, many values, none)
 * the input is fed whole, cut at every split point into two reads, and byte by byte: the
 * output must always be well-formed unmasked frames (shortest length form) whose messages and
 * control frames are the inputs' scrubbed as a whole (addon_scrub_once over each message),
 * in the same order, with no value left; a message without a value, unfragmented and within
 * PX_WSSCRUB_FRAME_MAX, goes out byte for byte. Compressed (RSV1), masked and broken frames
 * are refused at the first read that shows them, and nothing of the refused frame goes out.
 * `test_px_wsscrub --bench [MiB]` instead prints the rewriter's speed on the upstream's frames:
 * random text in 64 KiB binary frames without a value (1 GiB by default), in CPU time: each
 * frame in one read (scanned whole, handed on without a copy), then each in two reads (the
 * stream, which copies the payload into the frame it writes). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "addons/addon_scrub.h"
#include "base/px_err.h"
#include "base/px_wsframe.h"
#include "proxy/px_wsscrub.h"

#define V1 "REALVALUE-0123456789abcdef"
#define S1 "SURR-short"
#define V2 "ghp_anotherREALsecret42"
#define S2 "ghp_SURROGATE-that-is-quite-a-bit-longer-than-the-value"

typedef struct bytes {
    char *p;
    size_t len, cap;
} bytes_t;

static void add(bytes_t *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        assert_non_null(b->p);
    }
    if (n > 0)
        memcpy(b->p + b->len, p, n);
    b->len += n;
}

/* An unmasked frame (b0: FIN, RSV and opcode) in the given length form (0: shortest). */
static void frame(bytes_t *b, unsigned b0, const char *p, size_t n, int form)
{
    uint8_t h[10];
    size_t hl;
    h[0] = (uint8_t)b0;
    if (form == 7 || (form == 0 && n < 126)) {
        h[1] = (uint8_t)n;
        hl = 2;
    } else if (form == 16 || (form == 0 && n <= 0xFFFF)) {
        h[1] = 126;
        h[2] = (uint8_t)(n >> 8);
        h[3] = (uint8_t)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
        hl = 10;
    }
    add(b, h, hl);
    add(b, p, n);
}

static addon_scrub_t *matcher(void)
{
    addon_scrub_item_t items[2] = {
        {{"entry[0].value", 14}, {V1, sizeof(V1) - 1}, {S1, sizeof(S1) - 1}},
        {{"entry[1].value", 14}, {V2, sizeof(V2) - 1}, {S2, sizeof(S2) - 1}},
    };
    addon_scrub_t *m = NULL;
    assert_int_equal(addon_scrub_new(items, 2, &m, NULL, 0, NULL), 0);
    return m;
}

/* A message or a control frame, as the agent sees it. */
typedef struct unit {
    int opcode;
    bytes_t data;
} unit_t;

typedef struct units {
    unit_t u[64];
    size_t n;
} units_t;

static void units_free(units_t *us)
{
    for (size_t i = 0; i < us->n; i++)
        free(us->u[i].data.p);
    us->n = 0;
}

/* Reads frames (need not be scrubbed) into messages and control frames; checks the shortest
 * length form when strict. Returns 0, or -1 when they do not parse. */
static int read_units(const char *p, size_t len, units_t *us, int strict)
{
    px_wsframe_t fp;
    px_wsframe_init(&fp, 0);
    unit_t *msg = NULL;
    size_t at = 0, frame_at = 0;
    for (;;) {
        size_t used, rlen;
        const char *run;
        int ev = px_wsframe_next(&fp, p + at, len - at, &used, &run, &rlen);
        at += used;
        if (ev < 0)
            return -1;
        if (ev == PX_WSFRAME_MORE)
            return fp.hlen == 0 && msg == NULL ? 0 : -1;
        if (ev == PX_WSFRAME_HEAD) {
            size_t hl = at - frame_at;
            if (strict) {
                assert_false(fp.masked);
                assert_int_equal(hl, fp.len < 126 ? 2 : fp.len <= 0xFFFF ? 4 : 10);
            }
            if (px_wsframe_is_control(fp.opcode) || fp.opcode != PX_WSFRAME_CONT) {
                assert_true(us->n < 64);
                unit_t *u = &us->u[us->n++];
                memset(u, 0, sizeof(*u));
                u->opcode = fp.opcode;
                if (!px_wsframe_is_control(fp.opcode))
                    msg = u;
            }
        } else if (ev == PX_WSFRAME_DATA) {
            unit_t *u = px_wsframe_is_control(fp.opcode) ? &us->u[us->n - 1] : msg;
            add(&u->data, run, rlen);
        } else {
            if (!px_wsframe_is_control(fp.opcode) && fp.message_end)
                msg = NULL;
            frame_at = at;
        }
    }
}

static int collect(void *arg, const char *data, size_t len)
{
    add(arg, data, len);
    return 0;
}

typedef struct wcase {
    const char *name;
    void (*make)(bytes_t *in);
} wcase_t;

static void mk_one(bytes_t *b)
{
    frame(b, 0x81, "hello " V1 " world", sizeof("hello " V1 " world") - 1, 0);
}
static void mk_clean(bytes_t *b)
{
    frame(b, 0x82, "\x00\x01no value here\xff", 16, 0);
    frame(b, 0x81, "", 0, 0);
}
static void mk_fragments(bytes_t *b)
{
    /* V2 spread over three fragments, a ping carrying V1 between them */
    frame(b, 0x01, "a:REAL", 6, 0);
    frame(b, 0x00, "VALUE-0123", 10, 0);
    frame(b, 0x89, "ping " V1, sizeof("ping " V1) - 1, 0);
    frame(b, 0x00, "456789abcdef ghp_anot", 21, 0);
    frame(b, 0x80, "herREALsecret42!", 16, 0);
}
static void mk_forms(bytes_t *b)
{
    /* a 16-bit frame that shrinks under 126, a 7-bit one that grows past 125 */
    char p[200];
    memset(p, 'x', sizeof(p));
    memcpy(p + 10, V1, sizeof(V1) - 1);
    memcpy(p + 60, V1, sizeof(V1) - 1);
    memcpy(p + 100, V1, sizeof(V1) - 1);
    memcpy(p + 150, V1, sizeof(V1) - 1);
    frame(b, 0x82, p, 130, 0);
    char q[142];
    memset(q, 'y', sizeof(q));
    memcpy(q + 5, V1, sizeof(V1) - 1); /* 16 bytes shorter: 124, 125 (7-bit) and 126 (16-bit) */
    frame(b, 0x82, q, 140, 0);
    frame(b, 0x82, q, 141, 0);
    frame(b, 0x82, q, 142, 0);
    frame(b, 0x81, V2 V2 V2 V2 "tail", sizeof(V2 V2 V2 V2 "tail") - 1, 0);
    frame(b, 0x81, "long form " V2, sizeof("long form " V2) - 1, 64);
    /* no value, lengths not in their shortest form: a read cut inside the header leaves as many
     * header bytes as the shortest form has (found by fuzz_wsscrub) */
    frame(b, 0x82, "", 0, 16);
    frame(b, 0x82, "abcdefgh", 8, 64);
}
static void mk_big(bytes_t *b)
{
    /* 70000 bytes in a 64-bit frame, values throughout: it goes out in fragments */
    size_t n = 70000;
    char *p = malloc(n);
    assert_non_null(p);
    for (size_t i = 0; i < n; i++)
        p[i] = (char)('a' + i % 26);
    for (size_t at = 5; at + sizeof(V2) < n; at += 4099)
        memcpy(p + at, V2, sizeof(V2) - 1);
    frame(b, 0x82, p, n, 0);
    free(p);
}
static void mk_close(bytes_t *b)
{
    frame(b, 0x8A, V2, sizeof(V2) - 1, 0); /* a pong that grows past 125: cut */
    char c[125];
    memset(c, 'r', sizeof(c));
    c[0] = 0x03;
    c[1] = (char)0xE8;
    memcpy(c + 40, V2, sizeof(V2) - 1);
    frame(b, 0x88, c, sizeof(c), 0);
}

static const wcase_t wcases[] = {
    {"one", mk_one},     {"clean", mk_clean}, {"fragments", mk_fragments},
    {"forms", mk_forms}, {"big", mk_big},     {"close", mk_close},
};

/* Feeds in in pieces of `step` bytes (0: whole; SIZE_MAX - k: two reads cut at k). */
static void feed(const addon_scrub_t *m, const bytes_t *in, size_t cut, size_t step, bytes_t *out)
{
    px_wsscrub_t *w = px_wsscrub_new(m);
    assert_non_null(w);
    size_t from = 0;
    while (from < in->len) {
        size_t to = step ? (in->len - from < step ? in->len : from + step)
                         : (cut > from && cut < in->len ? cut : in->len);
        char *piece = malloc(to - from);
        memcpy(piece, in->p + from, to - from);
        assert_int_equal(px_wsscrub_feed(w, piece, to - from, collect, out), 0);
        free(piece);
        from = to;
    }
    uint64_t total;
    px_wsscrub_counts(w, &total);
    px_wsscrub_free(w);
}

static void expect_units(const addon_scrub_t *m, const bytes_t *in, const units_t *got)
{
    units_t want = {0};
    assert_int_equal(read_units(in->p, in->len, &want, 0), 0);
    assert_int_equal(got->n, want.n);
    for (size_t i = 0; i < want.n; i++) {
        unit_t *w = &want.u[i];
        char *s = NULL;
        size_t sl = 0;
        int rc = addon_scrub_once(m, w->data.p, w->data.len, &s, &sl, NULL);
        assert_true(rc >= 0);
        const char *e = rc == 1 ? s : w->data.p;
        size_t el = rc == 1 ? sl : w->data.len;
        if (px_wsframe_is_control(w->opcode) && el > 125)
            el = w->opcode == PX_WSFRAME_CLOSE ? 2 : 125;
        assert_int_equal(got->u[i].opcode, w->opcode);
        assert_int_equal(got->u[i].data.len, el);
        assert_memory_equal(got->u[i].data.p, e, el);
        free(s);
    }
    units_free(&want);
}

static void test_px_wsscrub_cases(void **state)
{
    (void)state;
    addon_scrub_t *m = matcher();
    for (size_t c = 0; c < sizeof(wcases) / sizeof(wcases[0]); c++) {
        bytes_t in = {0};
        wcases[c].make(&in);
        int big = in.len > 1000;
        /* whole, byte by byte, and every cut into two reads (every 97th for the big one) */
        for (size_t k = 0; k <= in.len + 1; k += big ? 97 : 1) {
            size_t step = k == in.len + 1 ? 1 : 0;
            if (big && step)
                step = 7;
            bytes_t out = {0};
            feed(m, &in, k, step, &out);
            units_t got = {0};
            if (read_units(out.p, out.len, &got, 1) != 0)
                fail_msg("case %s cut %zu: the output does not parse", wcases[c].name, k);
            expect_units(m, &in, &got);
            if (out.len > 0) {
                out.p[out.len] = '\0';
                assert_null(memmem(out.p, out.len, V1, sizeof(V1) - 1));
                assert_null(memmem(out.p, out.len, V2, sizeof(V2) - 1));
            }
            if (strcmp(wcases[c].name, "clean") == 0) {
                assert_int_equal(out.len, in.len);
                assert_memory_equal(out.p, in.p, in.len);
            }
            units_free(&got);
            free(out.p);
        }
        free(in.p);
    }
    addon_scrub_free(m);
}

/* Refused: each input, whole or cut anywhere, fails with PX_EPARSE, and only the frames
 * before the bad one went out. */
static void test_px_wsscrub_refused(void **state)
{
    (void)state;
    addon_scrub_t *m = matcher();
    static const struct {
        const char *name;
        unsigned b0;
        int mask;
    } bad[] = {{"rsv1 (compressed)", 0xC1, 0}, {"masked", 0x81, 1}, {"reserved opcode", 0x83, 0}};
    for (size_t c = 0; c < sizeof(bad) / sizeof(bad[0]); c++) {
        bytes_t in = {0};
        frame(&in, 0x81, "ok " V1, sizeof("ok " V1) - 1, 0);
        uint8_t h[6] = {(uint8_t)bad[c].b0, (uint8_t)(bad[c].mask ? 0x80 | 4 : 4), 1, 2, 3, 4};
        add(&in, h, bad[c].mask ? 6 : 2);
        add(&in, "abcd", 4);
        for (size_t k = 0; k <= in.len; k++) {
            px_wsscrub_t *w = px_wsscrub_new(m);
            bytes_t out = {0};
            int rc = px_wsscrub_feed(w, in.p, k, collect, &out);
            if (rc == 0)
                rc = px_wsscrub_feed(w, in.p + k, in.len - k, collect, &out);
            assert_int_equal(rc, PX_EPARSE);
            assert_non_null(px_wsscrub_why(w));
            assert_int_equal(px_wsscrub_feed(w, "", 0, collect, &out), PX_EPARSE);
            units_t got = {0};
            assert_int_equal(read_units(out.p, out.len, &got, 1), 0);
            assert_int_equal(got.n, 1);
            units_free(&got);
            free(out.p);
            px_wsscrub_free(w);
        }
        free(in.p);
    }
    addon_scrub_free(m);
}

/* The counts name what was replaced since the last take. */
static void test_px_wsscrub_counts(void **state)
{
    (void)state;
    addon_scrub_t *m = matcher();
    px_wsscrub_t *w = px_wsscrub_new(m);
    bytes_t in = {0}, out = {0};
    frame(&in, 0x81, V1 " " V2 " " V1, sizeof(V1 " " V2 " " V1) - 1, 0);
    frame(&in, 0x89, V2, sizeof(V2) - 1, 0);
    assert_int_equal(px_wsscrub_feed(w, in.p, in.len, collect, &out), 0);
    uint64_t total;
    const uint64_t *c = px_wsscrub_counts(w, &total);
    assert_int_equal(total, 4);
    assert_int_equal(c[0], 2);
    assert_int_equal(c[1], 2);
    char text[128];
    addon_scrub_describe(m, c, text, sizeof(text));
    assert_string_equal(text, "[scrubbed: 4 entry[0].value, entry[1].value]");
    px_wsscrub_take_counts(w);
    c = px_wsscrub_counts(w, &total);
    assert_int_equal(total, 0);
    free(in.p);
    free(out.p);
    px_wsscrub_free(w);
    addon_scrub_free(m);
}

static int discard(void *arg, const char *data, size_t len)
{
    (void)data;
    *(size_t *)arg += len;
    return 0;
}

/* split: each frame comes in two reads cut there (0: one read, the whole-frame path). */
static int bench(size_t mib, size_t split)
{
    addon_scrub_t *m = NULL;
    addon_scrub_item_t items[2] = {
        {{"entry[0].value", 14}, {V1, sizeof(V1) - 1}, {S1, sizeof(S1) - 1}},
        {{"entry[1].value", 14}, {V2, sizeof(V2) - 1}, {S2, sizeof(S2) - 1}},
    };
    if (addon_scrub_new(items, 2, &m, NULL, 0, NULL) != 0)
        return 1;
    size_t pl = 65536 - 4, flen = 65536; /* the 16-bit form, the shortest for this length */
    char *f = malloc(flen);
    f[0] = (char)0x82;
    f[1] = 126;
    f[2] = (char)(pl >> 8);
    f[3] = (char)pl;
    uint32_t x = 1;
    for (size_t i = 4; i < flen; i++) {
        x = x * 1103515245u + 12345u;
        f[i] = (char)(' ' + (x >> 16) % 95);
    }
    px_wsscrub_t *w = px_wsscrub_new(m);
    size_t out = 0, n = mib * 16;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (size_t i = 0; i < n; i++)
        if (px_wsscrub_feed(w, f, split, discard, &out) != 0 ||
            px_wsscrub_feed(w, f + split, flen - split, discard, &out) != 0)
            return 1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    printf("px_wsscrub: %zu MiB of frames in %s: %.3f s CPU, %.2f GB/s (out %zu bytes)\n", mib,
           split ? "two reads each (the stream)" : "one read each (whole)", s,
           (double)n * (double)flen / s / 1e9, out);
    px_wsscrub_free(w);
    free(f);
    addon_scrub_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
        size_t mib = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 1024;
        return bench(mib, 0) || bench(mib, 3);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_wsscrub_cases),
        cmocka_unit_test(test_px_wsscrub_refused),
        cmocka_unit_test(test_px_wsscrub_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
