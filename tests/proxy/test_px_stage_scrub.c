/* proxy/px_stage_scrub: a response's trailer fields, scrubbed (px_scrub_fields). Table-driven:
 * trailers without a value come back untouched (no copy); a value raw, base64 or in several
 * fields is replaced in each value and counted; names are kept; fields after a change are
 * copied as they were; a field whose scrubbed value no longer fits the trailer buffer is left
 * out (its real value never goes); no trailers, no matcher: nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_scrub.h"
#include "proxy/px_stage_scrub.h"

#define REAL "ghp_REALVALUE0123456789abcdef"
#define REAL_B64 "Z2hwX1JFQUxWQUxVRTAxMjM0NTY3ODlhYmNkZWY="
#define SURR "ghp_SURROGATE"
#define SURR_B64 "Z2hwX1NVUlJPR0FURQ=="

static void fields(px_fields_t *f, const char *const *nv)
{
    memset(f, 0, sizeof(*f));
    for (size_t i = 0; nv[i] != NULL; i += 2) {
        size_t nl = strlen(nv[i]), vl = strlen(nv[i + 1]);
        assert_true(f->len + nl + vl <= sizeof(f->buf));
        memcpy(f->buf + f->len, nv[i], nl);
        f->names[f->n] = (px_span_t){(uint32_t)f->len, (uint32_t)nl};
        f->len += nl;
        memcpy(f->buf + f->len, nv[i + 1], vl);
        f->values[f->n] = (px_span_t){(uint32_t)f->len, (uint32_t)vl};
        f->len += vl;
        f->n++;
    }
}

typedef struct tcase {
    const char *name;
    const char *in[9];   /* name, value, ..., NULL */
    const char *want[9]; /* the same; want[0] NULL: no copy (unchanged) */
    uint64_t count;
} tcase_t;

static const tcase_t tcases[] = {
    {"clean", {"grpc-status", "0", "x-sum", "abc", NULL}, {NULL}, 0},
    {"raw",
     {"grpc-status", "0", "grpc-message", "bad token " REAL, NULL},
     {"grpc-status", "0", "grpc-message", "bad token " SURR, NULL},
     1},
    {"base64 and two fields",
     {"x-echo", REAL_B64, "x-a", "a", "x-b", REAL "," REAL, NULL},
     {"x-echo", SURR_B64, "x-a", "a", "x-b", SURR "," SURR, NULL},
     3},
    {"name kept", {REAL, "v", NULL}, {NULL}, 0},
};

static addon_scrub_t *matcher(void)
{
    addon_scrub_item_t it = {
        {"entry[0].value", 14}, {REAL, sizeof(REAL) - 1}, {SURR, sizeof(SURR) - 1}};
    addon_scrub_t *m = NULL;
    assert_int_equal(addon_scrub_new(&it, 1, &m, NULL, 0, NULL), 0);
    return m;
}

static void test_px_stage_scrub_trailers(void **state)
{
    (void)state;
    addon_scrub_t *m = matcher();
    for (size_t c = 0; c < sizeof(tcases) / sizeof(tcases[0]); c++) {
        const tcase_t *tc = &tcases[c];
        px_fields_t in;
        fields(&in, tc->in);
        px_fields_t *out = NULL;
        uint64_t counts[2] = {0, 0};
        assert_int_equal(px_scrub_fields(m, &in, &out, counts), 0);
        assert_int_equal(counts[0], tc->count);
        if (tc->want[0] == NULL) {
            assert_null(out);
            continue;
        }
        assert_non_null(out);
        px_fields_t want;
        fields(&want, tc->want);
        assert_int_equal(out->n, want.n);
        for (size_t i = 0; i < want.n; i++) {
            assert_int_equal(out->names[i].len, want.names[i].len);
            assert_memory_equal(out->buf + out->names[i].off, want.buf + want.names[i].off,
                                want.names[i].len);
            assert_int_equal(out->values[i].len, want.values[i].len);
            assert_memory_equal(out->buf + out->values[i].off, want.buf + want.values[i].off,
                                want.values[i].len);
        }
        free(out);
    }
    px_fields_t *out = (px_fields_t *)1;
    assert_int_equal(px_scrub_fields(m, NULL, &out, NULL), 0);
    assert_null(out);
    px_fields_t in;
    fields(&in, (const char *const[]){"a", REAL, NULL});
    out = (px_fields_t *)1;
    assert_int_equal(px_scrub_fields(NULL, &in, &out, NULL), 0);
    assert_null(out);
    addon_scrub_free(m);
}

/* A surrogate longer than the room left: that field is left out, the others stay. */
static void test_px_stage_scrub_trailers_overflow(void **state)
{
    (void)state;
    static char longs[PX_TRAILER_MAX];
    memset(longs, 's', sizeof(longs) - 1);
    addon_scrub_item_t it = {{"e", 1}, {REAL, sizeof(REAL) - 1}, {longs, sizeof(longs) - 1}};
    addon_scrub_t *m = NULL;
    assert_int_equal(addon_scrub_new(&it, 1, &m, NULL, 0, NULL), 0);
    px_fields_t in;
    fields(&in, (const char *const[]){"x-a", "1", "x-echo", REAL, "x-b", "2", NULL});
    px_fields_t *out = NULL;
    assert_int_equal(px_scrub_fields(m, &in, &out, NULL), 0);
    assert_non_null(out);
    assert_int_equal(out->n, 2);
    assert_memory_equal(out->buf + out->names[1].off, "x-b", 3);
    assert_null(memmem(out->buf, out->len, REAL, sizeof(REAL) - 1));
    free(out);
    addon_scrub_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_stage_scrub_trailers),
        cmocka_unit_test(test_px_stage_scrub_trailers_overflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
