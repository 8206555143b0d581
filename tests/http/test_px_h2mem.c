/* px_h2mem: nghttp2's allocator for one session. Small blocks go to malloc; blocks of at least
 * PX_H2MEM_PAGED_MIN get pages of their own (zero, backed only once written), at most
 * PX_H2MEM_PAGED_MAX at once, then malloc again; realloc keeps a block where it fits and moves
 * it otherwise, its bytes intact; realloc(NULL, n) is a malloc (how nghttp2 makes its frame
 * buffer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "http/px_h2mem.h"

typedef struct step {
    const char *what;
    size_t size; /* asked for */
    int paged;   /* 1 when the block must be paged (in m's slots) */
} step_t;

static int is_paged(const px_h2mem_t *m, const void *p)
{
    for (int i = 0; i < PX_H2MEM_PAGED_MAX; i++)
        if (m->paged[i] == p)
            return 1;
    return 0;
}

/* Table: malloc, calloc and realloc(NULL, n) of each size; paged or not as the table says. */
static void test_px_h2mem_sizes(void **state)
{
    (void)state;
    static const step_t steps[] = {
        {"tiny", 1, 0},
        {"below the threshold", PX_H2MEM_PAGED_MIN - 1, 0},
        {"at the threshold", PX_H2MEM_PAGED_MIN, 1},
        {"nghttp2's frame buffer", 16394, 1},
        {"large", 1 << 20, 1},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        for (int how = 0; how < 3; how++) {
            px_h2mem_t m = {0};
            nghttp2_mem mem;
            px_h2mem_init(&m, &mem);
            unsigned char *p = how == 0   ? mem.malloc(steps[i].size, mem.mem_user_data)
                               : how == 1 ? mem.calloc(1, steps[i].size, mem.mem_user_data)
                                          : mem.realloc(NULL, steps[i].size, mem.mem_user_data);
            assert_non_null(p);
            if (is_paged(&m, p) != steps[i].paged)
                fail_msg("%s (%d): paged %d", steps[i].what, how, is_paged(&m, p));
            if (how == 1)
                for (size_t k = 0; k < steps[i].size; k++)
                    assert_int_equal(p[k], 0);
            memset(p, 0xab, steps[i].size);
            assert_int_equal(m.paged_bytes, steps[i].paged ? steps[i].size : 0);
            mem.free(p, mem.mem_user_data);
            assert_int_equal(m.npaged, 0);
            assert_int_equal(m.paged_bytes, 0);
        }
    }
}

/* Pages are backed only where written: one byte in a 64 KiB block costs one page. */
static void test_px_h2mem_resident(void **state)
{
    (void)state;
    px_h2mem_t m = {0};
    nghttp2_mem mem;
    px_h2mem_init(&m, &mem);
    char *p = mem.calloc(1, 64 * 1024, &m);
    assert_true(is_paged(&m, p));
    assert_int_equal(px_h2mem_resident(&m), 0);
    p[5000] = 1;
    assert_int_equal(px_h2mem_resident(&m), 4096);
    mem.free(p, &m);
    assert_int_equal(px_h2mem_resident(&m), 0);
}

/* More large blocks than slots: the rest come from malloc, and every one frees. */
static void test_px_h2mem_slots_full(void **state)
{
    (void)state;
    px_h2mem_t m = {0};
    nghttp2_mem mem;
    px_h2mem_init(&m, &mem);
    void *p[PX_H2MEM_PAGED_MAX + 2];
    for (int i = 0; i < PX_H2MEM_PAGED_MAX + 2; i++) {
        p[i] = mem.malloc(PX_H2MEM_PAGED_MIN, &m);
        assert_non_null(p[i]);
        assert_int_equal(is_paged(&m, p[i]), i < PX_H2MEM_PAGED_MAX);
    }
    assert_int_equal(m.npaged, PX_H2MEM_PAGED_MAX);
    mem.free(p[1], &m); /* a slot frees: the next large block is paged again */
    p[1] = mem.malloc(PX_H2MEM_PAGED_MIN, &m);
    assert_true(is_paged(&m, p[1]));
    for (int i = 0; i < PX_H2MEM_PAGED_MAX + 2; i++)
        mem.free(p[i], &m);
    assert_int_equal(m.npaged, 0);
    mem.free(NULL, &m);
}

/* realloc: a small block stays with malloc whatever it grows to; a paged one stays in place
 * while its size needs the same number of pages, moves otherwise (to malloc below the
 * threshold); the bytes survive every move. */
static void test_px_h2mem_realloc(void **state)
{
    (void)state;
    static const struct {
        size_t from, to;
        int paged_after, same_place;
    } steps[] = {
        {100, 200, 0, -1},
        {100, 20000, 0, -1},                                 /* born small: stays with malloc */
        {PX_H2MEM_PAGED_MIN, PX_H2MEM_PAGED_MIN + 10, 1, 0}, /* a second page: moves */
        {16394, 16390, 1, 1},                                /* the same pages: stays */
        {16394, 16000, 1, 0}, /* fewer pages: moves (the mapping's length follows the size) */
        {16394, 100, 0, 0},   /* below the threshold: malloc */
        {16394, 1 << 20, 1, 0},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        px_h2mem_t m = {0};
        nghttp2_mem mem;
        px_h2mem_init(&m, &mem);
        unsigned char *p = mem.malloc(steps[i].from, &m);
        assert_non_null(p);
        for (size_t k = 0; k < steps[i].from; k++)
            p[k] = (unsigned char)(k * 7);
        unsigned char *q = mem.realloc(p, steps[i].to, &m);
        assert_non_null(q);
        if (is_paged(&m, q) != steps[i].paged_after)
            fail_msg("step %zu: paged %d", i, is_paged(&m, q));
        if (steps[i].same_place >= 0)
            assert_int_equal(q == p, steps[i].same_place);
        size_t keep = steps[i].from < steps[i].to ? steps[i].from : steps[i].to;
        for (size_t k = 0; k < keep; k++)
            if (q[k] != (unsigned char)(k * 7))
                fail_msg("step %zu: byte %zu lost", i, k);
        assert_int_equal(m.paged_bytes, steps[i].paged_after ? steps[i].to : 0);
        mem.free(q, &m);
        assert_int_equal(m.npaged, 0);
    }
}

/* Table: what px_h2mem_trim() gives back of three blocks (a frame buffer made with the
 * session, a 4-page table, the encoder's ring), written as each row says, with and without
 * frames_dead. Only zero pages go, and the frame buffer's pages only when frames_dead; what
 * stays reads as written. */
static void test_px_h2mem_trim(void **state)
{
    (void)state;
    static const struct {
        const char *what;
        int frames_dead;
        size_t fb_bytes;   /* bytes of 'x' written at the frame buffer's start */
        int zero_page;     /* the table's page 1 written with zeros only */
        size_t given_back; /* pages */
        size_t resident;   /* pages after */
    } rows[] = {
        {"nothing written", 1, 0, 0, 0, 1},
        {"a short frame, frames in hand", 0, 100, 0, 0, 2},
        {"a short frame, none in hand", 1, 100, 0, 1, 1},
        {"a large frame, none in hand", 1, 16394, 0, 5, 1},
        {"a zero page in the table", 0, 0, 1, 1, 1},
        {"both", 1, 16394, 1, 6, 1},
    };
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        px_h2mem_t m = {0};
        nghttp2_mem mem;
        px_h2mem_init(&m, &mem);
        m.deflate_unused = 1;
        char *ring = mem.malloc(PX_H2MEM_RING, mem.mem_user_data);
        char *fb = mem.realloc(NULL, PX_H2MEM_FRAMEBUF, mem.mem_user_data);
        px_h2mem_made(&m);
        char *tab = mem.calloc(4, 4096, mem.mem_user_data);
        assert_true(is_paged(&m, ring) && is_paged(&m, fb) && is_paged(&m, tab));
        tab[0] = 't'; /* page 0 of the table: live */
        if (rows[r].zero_page)
            memset(tab + 4096, 0, 4096);
        memset(fb, 'x', rows[r].fb_bytes);
        size_t given = px_h2mem_trim(&m, rows[r].frames_dead);
        print_message("%-32s gave %zu pages, %zu left\n", rows[r].what, given / 4096,
                      px_h2mem_resident(&m) / 4096);
        assert_int_equal(given, rows[r].given_back * 4096);
        assert_int_equal(px_h2mem_resident(&m), rows[r].resident * 4096);
        assert_int_equal(tab[0], 't');
        if (!rows[r].frames_dead && rows[r].fb_bytes > 0)
            assert_int_equal(fb[rows[r].fb_bytes - 1], 'x');
        mem.free(ring, mem.mem_user_data);
        mem.free(fb, mem.mem_user_data);
        mem.free(tab, mem.mem_user_data);
        assert_int_equal(m.npaged, 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_h2mem_sizes),      cmocka_unit_test(test_px_h2mem_resident),
        cmocka_unit_test(test_px_h2mem_slots_full), cmocka_unit_test(test_px_h2mem_realloc),
        cmocka_unit_test(test_px_h2mem_trim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
