/* Differential fuzzer for addon_leak: a matcher is built from values taken from the input,
 * the rest of the input is scanned in pieces cut at input-chosen positions (continuing after
 * each match), and every match end must be exactly where a naive search (memmem of every
 * generated pattern) finds one ending; the reported name and encoding must belong to a pattern
 * that really ends there.
 *
 * Input: byte 0 = number of values (1..8); per value a length byte (0..47; bit 7 = canary)
 * and that many bytes; a byte of cut count (0..15) and one byte per cut; a plant byte: with
 * bit 7 set, the next two bytes choose a pattern and a position and the pattern is inserted
 * into the text there (so that the fuzzer meets real matches, not only near misses); then the
 * text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_leak.h"

#define FUZZ_VALUES_MAX 8
#define FUZZ_VALUE_LEN 48
#define FUZZ_CUTS_MAX 16

typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in_t;

static int fuzz_byte(fuzz_in_t *in, uint8_t *b)
{
    if (in->n == 0)
        return 0;
    *b = *in->p++;
    in->n--;
    return 1;
}

static int fuzz_cmp(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* ends[e] = 1 when some pattern ends at offset e (one past its last byte). */
static void fuzz_naive(const addon_leak_t *m, const uint8_t *t, size_t len, uint8_t *ends)
{
    memset(ends, 0, len + 1);
    for (size_t i = 0; i < addon_leak_pattern_count(m); i++) {
        addon_str_t p = addon_leak_pattern(m, i, NULL, NULL);
        const uint8_t *from = t;
        const uint8_t *hit;
        while ((size_t)(t + len - from) >= p.len &&
               (hit = memmem(from, (size_t)(t + len - from), p.base, p.len)) != NULL) {
            ends[hit - t + p.len] = 1;
            from = hit + 1;
        }
    }
}

/* The reported match: a pattern with its name and encoding ends at mt->end. */
static int fuzz_match_real(const addon_leak_t *m, const uint8_t *t, const addon_leak_match_t *mt)
{
    for (size_t i = 0; i < addon_leak_pattern_count(m); i++) {
        addon_leak_enc_t enc;
        const char *name;
        addon_str_t p = addon_leak_pattern(m, i, &enc, &name);
        if (name == mt->name && enc == mt->enc && p.len <= mt->end &&
            memcmp(t + mt->end - p.len, p.base, p.len) == 0)
            return 1;
    }
    return 0;
}

/* Feeds t in the pieces between cuts, resuming after every match; checks against ends. */
static void fuzz_stream(const addon_leak_t *m, const uint8_t *t, size_t len, const size_t *cuts,
                        size_t ncuts, const uint8_t *ends)
{
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    size_t next_end = 1; /* every end below this was checked */
    size_t from = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t to = c < ncuts ? cuts[c] : len;
        while (from < to) {
            addon_leak_match_t mt;
            if (!addon_leak_feed(m, &st, t + from, to - from, &mt)) {
                from = to;
                break;
            }
            if (mt.end <= from || mt.end > to || !ends[mt.end] || !fuzz_match_real(m, t, &mt))
                __builtin_trap();
            for (size_t e = next_end; e < mt.end; e++) {
                if (ends[e])
                    __builtin_trap(); /* an earlier match was missed */
            }
            next_end = (size_t)mt.end + 1;
            from = (size_t)mt.end;
            if (st.pos != mt.end)
                __builtin_trap();
        }
    }
    for (size_t e = next_end; e <= len; e++) {
        if (ends[e])
            __builtin_trap();
    }
    if (st.pos != len)
        __builtin_trap();
}

static void fuzz_values(fuzz_in_t *in, addon_leak_item_t *items, size_t *n, char names[][4])
{
    uint8_t b = 0;
    fuzz_byte(in, &b);
    size_t want = (size_t)(b % FUZZ_VALUES_MAX) + 1;
    for (*n = 0; *n < want; (*n)++) {
        uint8_t lb;
        if (!fuzz_byte(in, &lb))
            break;
        size_t len = (size_t)(lb & 0x7f) % FUZZ_VALUE_LEN;
        len = len > in->n ? in->n : len;
        names[*n][0] = 'v';
        names[*n][1] = (char)('0' + *n);
        names[*n][2] = '\0';
        items[*n].name.base = names[*n];
        items[*n].name.len = 2;
        items[*n].value.base = (const char *)in->p;
        items[*n].value.len = len;
        items[*n].kind = lb & 0x80 ? ADDON_LEAK_CANARY : ADDON_LEAK_SECRET;
        in->p += len;
        in->n -= len;
    }
}

/* The text, with a pattern planted when the plant byte asks; t has room for it. */
static size_t fuzz_text(fuzz_in_t *in, const addon_leak_t *m, uint8_t *t)
{
    uint8_t plant = 0, which = 0, where = 0;
    fuzz_byte(in, &plant);
    if (plant & 0x80) {
        fuzz_byte(in, &which);
        fuzz_byte(in, &where);
    }
    memcpy(t, in->p, in->n);
    size_t len = in->n;
    size_t np = addon_leak_pattern_count(m);
    if ((plant & 0x80) && np > 0) {
        addon_str_t p = addon_leak_pattern(m, which % np, NULL, NULL);
        size_t at = len == 0 ? 0 : where % (len + 1);
        memmove(t + at + p.len, t + at, len - at);
        memcpy(t + at, p.base, p.len);
        len += p.len;
    }
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    addon_leak_item_t items[FUZZ_VALUES_MAX];
    char names[FUZZ_VALUES_MAX][4];
    size_t n = 0;
    fuzz_values(&in, items, &n, names);
    uint8_t nc = 0;
    fuzz_byte(&in, &nc);
    nc %= FUZZ_CUTS_MAX;
    uint8_t cutb[FUZZ_CUTS_MAX];
    size_t ncuts = 0;
    while (ncuts < nc && fuzz_byte(&in, &cutb[ncuts]))
        ncuts++;

    addon_leak_t *m = NULL;
    if (addon_leak_new(items, n, &m, NULL, 0, NULL) != 0)
        __builtin_trap();
    uint8_t *t = malloc(in.n + 4 * FUZZ_VALUE_LEN + 1);
    uint8_t *ends = malloc(in.n + 4 * FUZZ_VALUE_LEN + 2);
    if (t == NULL || ends == NULL)
        abort();
    size_t len = fuzz_text(&in, m, t);
    size_t cuts[FUZZ_CUTS_MAX];
    for (size_t i = 0; i < ncuts; i++)
        cuts[i] = len == 0 ? 0 : (size_t)cutb[i] * (len + 1) / 256;
    qsort(cuts, ncuts, sizeof(cuts[0]), fuzz_cmp);
    fuzz_naive(m, t, len, ends);
    fuzz_stream(m, t, len, cuts, ncuts, ends);

    addon_leak_match_t mt;
    int one = addon_leak_scan(m, t, len, &mt);
    size_t first = 1;
    while (first <= len && !ends[first])
        first++;
    if (one != (first <= len) || (one && mt.end != first))
        __builtin_trap();
    free(ends);
    free(t);
    addon_leak_free(m);
    return 0;
}
