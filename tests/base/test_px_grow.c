/* base/px_grow: the growth primitive (first size, doubling, the cap, overflow, failure leaves
 * the array as it was) and the capped byte buffer over it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/px_err.h"
#include "base/px_grow.h"

/* A realloc past PTRDIFF_MAX fails; ASan would abort on it instead of returning NULL. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

#define BIG ((size_t)PTRDIFF_MAX + 1)

static const struct {
    const char *what;
    size_t cap, need, elem, first, max;
    int rc;
    size_t want; /* capacity after */
} grow_cases[] = {
    {"first growth", 0, 1, 4, 16, 100, 0, 16},
    {"first growth, need above first", 0, 40, 4, 16, 100, 0, 64},
    {"room already", 16, 16, 4, 8, 100, 0, 16},
    {"nothing needed", 0, 0, 4, 8, 100, 0, 0},
    {"doubling", 16, 17, 4, 8, 100, 0, 32},
    {"need larger than double: doubles until it fits", 16, 65, 4, 8, 1000, 0, 128},
    {"doubling stops at max", 64, 65, 4, 8, 100, 0, 100},
    {"need == max", 64, 100, 4, 8, 100, 0, 100},
    {"need > max", 64, 101, 4, 8, 100, PX_ETOOBIG, 64},
    {"need > max, first growth", 0, 101, 4, 8, 100, PX_ETOOBIG, 0},
    {"first above max", 0, 1, 4, 64, 10, 0, 10},
    {"first 0 counts as 1", 0, 3, 4, 0, 100, 0, 4},
    {"need * elem overflows", 0, SIZE_MAX / 8 + 1, 8, 16, SIZE_MAX, PX_ENOMEM, 0},
    {"need * elem overflows, grown before", 16, SIZE_MAX / 8 + 1, 8, 16, SIZE_MAX, PX_ENOMEM, 16},
    {"elem 0", 0, 1, 0, 16, 100, PX_ENOMEM, 0},
    {"realloc fails", 16, BIG, 1, 16, SIZE_MAX, PX_ENOMEM, 16},
    {"doubled size overflows: clamped, realloc fails", 16, SIZE_MAX / 16 + 1, 8, 16, SIZE_MAX,
     PX_ENOMEM, 16},
};

static void test_px_grow_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(grow_cases) / sizeof(grow_cases[0]); i++) {
        const __typeof__(grow_cases[0]) *c = &grow_cases[i];
        print_message("%s\n", c->what);
        size_t cap = c->cap;
        size_t had = c->cap * c->elem;
        unsigned char *p = had ? malloc(had) : NULL;
        for (size_t k = 0; k < had; k++)
            p[k] = (unsigned char)(k * 7 + 1);
        unsigned char *before = p;
        int rc = px_grow(&p, &cap, c->need, c->elem, c->first, c->max);
        assert_int_equal(rc, c->rc);
        assert_int_equal(cap, c->want);
        if (rc != 0)
            assert_ptr_equal(p, before); /* the array is untouched */
        for (size_t k = 0; k < had; k++)
            assert_int_equal(p[k], (unsigned char)(k * 7 + 1));
        if (rc == 0 && cap > 0)
            memset(p, 0, cap * c->elem); /* all of it is ours (ASan checks) */
        free(p);
    }
}

/* Any element type: the pointer is read and written whole. */
static void test_px_grow_struct_array(void **state)
{
    (void)state;
    struct pt {
        int x, y;
    } *v = NULL;
    size_t cap = 0, n = 0;
    for (int i = 0; i < 1000; i++) {
        assert_int_equal(px_grow(&v, &cap, n + 1, sizeof(*v), 8, 1000), 0);
        v[n++] = (struct pt){i, -i};
    }
    assert_int_equal(cap, 1000); /* 8 .. 512, then the cap */
    assert_int_equal(px_grow(&v, &cap, n + 1, sizeof(*v), 8, 1000), PX_ETOOBIG);
    for (int i = 0; i < 1000; i++)
        assert_true(v[i].x == i && v[i].y == -i);
    free(v);
}

static void test_px_buf_append(void **state)
{
    (void)state;
    px_buf_t b;
    px_buf_init(&b, 4, 10);
    assert_int_equal(px_buf_append(&b, "", 0), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(px_buf_append(&b, "abc", 3), 0);
    assert_int_equal(b.cap, 4);
    assert_int_equal(px_buf_append(&b, "defg", 4), 0);
    assert_int_equal(b.cap, 8);
    /* past the cap: refused whole, nothing appended */
    assert_int_equal(px_buf_append(&b, "hijk", 4), PX_ETOOBIG);
    assert_int_equal(b.len, 7);
    assert_int_equal(px_buf_append(&b, "hij", 3), 0);
    assert_int_equal(b.cap, 10);
    assert_memory_equal(b.data, "abcdefghij", 10);
    assert_int_equal(px_buf_append(&b, "k", 1), PX_ETOOBIG);
    px_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len + b.cap, 0);
    assert_int_equal(px_buf_append(&b, "x", 1), 0); /* usable again */
    px_buf_free(&b);
}

static void test_px_buf_reserve_failures(void **state)
{
    (void)state;
    px_buf_t b;
    px_buf_init(&b, 16, SIZE_MAX);
    assert_int_equal(px_buf_append(&b, "keep", 4), 0);
    char *was = b.data;
    /* len + more overflows */
    assert_int_equal(px_buf_reserve(&b, SIZE_MAX - 1), PX_ETOOBIG);
    /* the allocation fails */
    assert_int_equal(px_buf_reserve(&b, BIG), PX_ENOMEM);
    assert_ptr_equal(b.data, was);
    assert_int_equal(b.len, 4);
    assert_int_equal(b.cap, 16);
    assert_memory_equal(b.data, "keep", 4);
    /* reserve then write in place */
    assert_int_equal(px_buf_reserve(&b, 20), 0);
    assert_int_equal(b.cap, 32);
    memset(b.data + b.len, 'z', 20);
    b.len += 20;
    assert_int_equal(b.len, 24);
    px_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_grow_cases),
        cmocka_unit_test(test_px_grow_struct_array),
        cmocka_unit_test(test_px_buf_append),
        cmocka_unit_test(test_px_buf_reserve_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
