/* base/px_wsframe: WebSocket frames read incrementally. Each case is fed whole, one byte at a
 * time and cut at every point in two; the events (headers, unmasked payload, ends, the error)
 * must be the same every way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "base/px_wsframe.h"

#define OUT_MAX (200 * 1024)

/* Appends one frame to buf at *n. */
static void put(uint8_t *buf, size_t *n, int fin, int rsv, int op, int masked, const char *pl,
                size_t len)
{
    static const uint8_t key[4] = {0x37, 0xfa, 0x21, 0x3d};
    buf[(*n)++] = (uint8_t)((fin ? 0x80 : 0) | rsv | op);
    uint8_t m = masked ? 0x80 : 0;
    if (len < 126) {
        buf[(*n)++] = (uint8_t)(m | len);
    } else if (len < 65536) {
        buf[(*n)++] = m | 126;
        buf[(*n)++] = (uint8_t)(len >> 8);
        buf[(*n)++] = (uint8_t)len;
    } else {
        buf[(*n)++] = m | 127;
        for (int i = 7; i >= 0; i--)
            buf[(*n)++] = (uint8_t)((uint64_t)len >> (8 * i));
    }
    if (masked) {
        memcpy(buf + *n, key, 4);
        *n += 4;
    }
    for (size_t i = 0; i < len; i++)
        buf[(*n)++] = (uint8_t)(pl[i] ^ (masked ? key[i % 4] : 0));
}

/* The events of input fed in pieces cut at the offsets in cuts[0..ncut), as text. */
static char *transcript(const uint8_t *in, size_t len, const size_t *cuts, size_t ncut,
                        int need_mask)
{
    char *out = calloc(1, OUT_MAX);
    size_t o = 0;
    px_wsframe_t p;
    px_wsframe_init(&p, need_mask);
    size_t from = 0;
    for (size_t c = 0; c <= ncut; c++) {
        size_t to = c < ncut ? cuts[c] : len;
        size_t at = from;
        for (;;) {
            size_t used, rlen;
            const char *run;
            int ev = px_wsframe_next(&p, (const char *)in + at, to - at, &used, &run, &rlen);
            at += used;
            if (ev < 0) {
                o += (size_t)snprintf(out + o, OUT_MAX - o, "X(%s)", p.why);
                return out;
            }
            if (ev == PX_WSFRAME_MORE)
                break;
            if (ev == PX_WSFRAME_HEAD)
                o += (size_t)snprintf(out + o, OUT_MAX - o, "H%d,%d,%llu[", p.opcode, p.fin,
                                      (unsigned long long)p.len);
            if (ev == PX_WSFRAME_DATA) {
                assert_true(run >= (const char *)in + at - used && rlen == used);
                assert_true(o + rlen < OUT_MAX);
                px_wsframe_unmask(p.key, p.off - rlen, run, out + o, rlen);
                o += rlen;
            }
            if (ev == PX_WSFRAME_END)
                o += (size_t)snprintf(out + o, OUT_MAX - o, "]%s", p.message_end ? "M" : "");
        }
        assert_int_equal(at, to);
        from = to;
    }
    return out;
}

/* Every way of feeding in gives want. */
static void check(const uint8_t *in, size_t len, int need_mask, const char *want)
{
    char *whole = transcript(in, len, NULL, 0, need_mask);
    assert_string_equal(whole, want);
    free(whole);
    size_t *cuts = calloc(len + 1, sizeof(size_t));
    for (size_t i = 0; i < len; i++)
        cuts[i] = i + 1;
    char *bytes = transcript(in, len, cuts, len > 0 ? len - 1 : 0, need_mask);
    assert_string_equal(bytes, want);
    free(bytes);
    for (size_t k = 0; k <= len && len < 400; k++) {
        char *two = transcript(in, len, &k, 1, need_mask);
        assert_string_equal(two, want);
        free(two);
    }
    free(cuts);
}

static void test_px_wsframe_rfc_examples(void **state)
{
    (void)state;
    /* RFC 6455 section 5.7: a masked "Hello", an unmasked one, and "Hel" + "lo" */
    static const uint8_t masked[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                     0x7f, 0x9f, 0x4d, 0x51, 0x58};
    check(masked, sizeof(masked), 1, "H1,1,5[Hello]M");
    static const uint8_t plain[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
    check(plain, sizeof(plain), 0, "H1,1,5[Hello]M");
    static const uint8_t frags[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
    check(frags, sizeof(frags), 0, "H1,0,3[Hel]H0,1,2[lo]M");
}

static void test_px_wsframe_control_inside_fragments(void **state)
{
    (void)state;
    uint8_t b[256];
    size_t n = 0;
    put(b, &n, 0, 0, PX_WSFRAME_TEXT, 1, "frag-", 5);
    put(b, &n, 1, 0, PX_WSFRAME_PING, 1, "p1", 2);
    put(b, &n, 0, 0, PX_WSFRAME_CONT, 1, "", 0);
    put(b, &n, 1, 0, PX_WSFRAME_PONG, 1, "", 0);
    put(b, &n, 1, 0, PX_WSFRAME_CONT, 1, "ment", 4);
    put(b, &n, 1, 0, PX_WSFRAME_TEXT, 1, "", 0);
    put(b, &n, 1, 0, PX_WSFRAME_CLOSE, 1, "\x03\xe8", 2);
    check(b, n, 1,
          "H1,0,5[frag-]H9,1,2[p1]H0,0,0[]H10,1,0[]H0,1,4[ment]MH1,1,0[]MH8,1,2[\x03\xe8]");
}

static void test_px_wsframe_lengths(void **state)
{
    (void)state;
    size_t big = 70000;
    char *pl = malloc(big);
    for (size_t i = 0; i < big; i++)
        pl[i] = (char)('a' + i % 26);
    uint8_t *b = malloc(big + 600);
    size_t n = 0;
    put(b, &n, 1, 0, PX_WSFRAME_BINARY, 1, pl, 125);
    put(b, &n, 1, 0, PX_WSFRAME_BINARY, 1, pl, 126);
    put(b, &n, 1, 0, PX_WSFRAME_BINARY, 1, pl, 300);
    assert_int_equal(b[1] & 0x7f, 125);
    assert_int_equal(b[125 + 6 + 1] & 0x7f, 126);
    char *want = malloc(2 * big);
    int w =
        snprintf(want, 2 * big, "H2,1,125[%.125s]MH2,1,126[%.126s]MH2,1,300[%.300s]M", pl, pl, pl);
    assert_true(w > 0);
    check(b, n, 1, want);
    /* a 64-bit length, fed whole and byte by byte */
    n = 0;
    put(b, &n, 1, 0, PX_WSFRAME_BINARY, 1, pl, big);
    assert_int_equal(b[1] & 0x7f, 127);
    w = snprintf(want, 2 * big, "H2,1,%zu[%.*s]M", big, (int)big, pl);
    char *got = transcript(b, n, NULL, 0, 1);
    assert_string_equal(got, want);
    free(got);
    size_t cuts[] = {1, 2, 5, 9, 11, 13, 14, 15, 1000, 65550};
    got = transcript(b, n, cuts, sizeof(cuts) / sizeof(cuts[0]), 1);
    assert_string_equal(got, want);
    free(got);
    free(want);
    free(b);
    free(pl);
}

static void test_px_wsframe_refused(void **state)
{
    (void)state;
    static const struct {
        uint8_t in[16];
        size_t len;
        int need_mask;
        const char *want;
    } cases[] = {
        {{0xc1, 0x80, 0, 0, 0, 0},
         6,
         1,
         "X(a frame with RSV bits set (no extension was negotiated))"},
        {{0x91, 0x00}, 2, 0, "X(a frame with RSV bits set (no extension was negotiated))"},
        {{0x83, 0x80}, 2, 1, "X(a frame with a reserved opcode)"},
        {{0x8b, 0x80}, 2, 1, "X(a frame with a reserved opcode)"},
        {{0x81, 0x01, 'a'}, 3, 1, "X(a client frame without a mask)"},
        {{0x09, 0x80, 0, 0, 0, 0}, 6, 1, "X(a fragmented control frame)"},
        {{0x89, 0xfe, 0, 126}, 4, 1, "X(a control frame longer than 125 bytes)"},
        {{0x80, 0x80, 0, 0, 0, 0}, 6, 1, "X(a continuation frame outside a fragmented message)"},
        {{0x01, 0x80, 0, 0, 0, 0, 0x81, 0x80},
         8,
         1,
         "H1,0,0[]X(a new message inside a fragmented one)"},
        {{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0},
         10,
         1,
         "X(a 64-bit payload length with its top bit set)"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check(cases[i].in, cases[i].len, cases[i].need_mask, cases[i].want);
    /* an error sticks */
    px_wsframe_t p;
    px_wsframe_init(&p, 1);
    size_t used, rlen;
    const char *run;
    assert_int_equal(px_wsframe_next(&p, "\xc1\x80", 2, &used, &run, &rlen), PX_EPARSE);
    assert_int_equal(px_wsframe_next(&p, "\x81\x80", 2, &used, &run, &rlen), PX_EPARSE);
}

static void test_px_wsframe_unmask_offsets(void **state)
{
    (void)state;
    const uint8_t key[4] = {1, 2, 3, 4};
    char in[37], want[37], out[37];
    for (size_t i = 0; i < sizeof(in); i++) {
        in[i] = (char)(i * 7);
        want[i] = (char)(in[i] ^ key[i % 4]);
    }
    for (size_t off = 0; off < 9; off++) {
        for (size_t len = 0; off + len <= sizeof(in); len++) {
            px_wsframe_unmask(key, off, in + off, out, len);
            assert_memory_equal(out, want + off, len);
        }
    }
    memcpy(out, in, sizeof(in)); /* in place */
    px_wsframe_unmask(key, 0, out, out, sizeof(out));
    assert_memory_equal(out, want, sizeof(out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_wsframe_rfc_examples),
        cmocka_unit_test(test_px_wsframe_control_inside_fragments),
        cmocka_unit_test(test_px_wsframe_lengths),
        cmocka_unit_test(test_px_wsframe_refused),
        cmocka_unit_test(test_px_wsframe_unmask_offsets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
