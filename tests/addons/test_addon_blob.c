/* addons/addon_blob: the secret blob grows from ADDON_BLOB_FIRST by doubling, keeps the bytes
 * in use across every move, refuses to pass its cap (and a length that would overflow) without
 * touching the blob, and frees NULL. Table-driven: each row reserves `extra` more bytes after
 * `len` and expects the return and the capacity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_blob.h"
#include "base/px_err.h"

typedef struct brow {
    size_t len, extra, max;
    int rc;
    size_t cap; /* after */
} brow_t;

static const brow_t rows[] = {
    {0, 0, 1 << 20, 0, 0},                                          /* nothing asked: none */
    {0, 100, 1 << 20, 0, ADDON_BLOB_FIRST},                         /* the first block */
    {50, 100, 1 << 20, 0, ADDON_BLOB_FIRST},                        /* fits: kept */
    {100, ADDON_BLOB_FIRST, 1 << 20, 0, 2 * ADDON_BLOB_FIRST},      /* doubles */
    {4000, 9000, 1 << 20, 0, 4 * ADDON_BLOB_FIRST},                 /* doubles twice */
    {4000, 9000, 12000, PX_ETOOBIG, 4 * ADDON_BLOB_FIRST},          /* past the cap: unchanged */
    {10, SIZE_MAX - 5, SIZE_MAX, PX_ETOOBIG, 4 * ADDON_BLOB_FIRST}, /* would overflow */
    {12000, 5000, 16000, PX_ETOOBIG, 4 * ADDON_BLOB_FIRST},
};

static void test_addon_blob_grow(void **state)
{
    (void)state;
    unsigned char *blob = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const brow_t *r = &rows[i];
        unsigned char *before = blob;
        size_t keep = r->len < cap ? r->len : cap;
        for (size_t k = 0; k < keep; k++)
            blob[k] = (unsigned char)(k * 7 + i);
        int rc = addon_blob_reserve(&blob, &cap, keep, r->extra, r->max);
        assert_int_equal(rc, r->rc);
        assert_int_equal(cap, r->cap);
        if (rc != 0) {
            assert_ptr_equal(blob, before);
            continue;
        }
        assert_true(r->cap == 0 || blob != NULL);
        for (size_t k = 0; k < keep; k++)
            assert_int_equal(blob[k], (unsigned char)(k * 7 + i));
    }
    addon_blob_free(blob, cap);
    addon_blob_free(NULL, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addon_blob_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
