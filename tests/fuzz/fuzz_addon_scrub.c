/* Differential fuzzer for addon_scrub: a matcher is built from (value, surrogate) pairs taken
 * from the input; the rest of the input is a text with up to 4 generated patterns planted in
 * it (so that real matches, adjacent and overlapping ones, are met, not only near misses).
 * The one-shot output, the streaming output at input-chosen cuts, and (for texts up to 1 KiB)
 * the byte-by-byte streaming output must all equal a naive reference (at each position the
 * longest pattern, of equal bytes the first, replaced); the replacement counts must agree and
 * a stream never holds back max_pattern_len bytes or more.
 *
 * Input: byte 0 = number of values (1..8); per value a length byte (0..47) and that many
 * bytes, then a surrogate length byte (0..47) and that many bytes; a byte of cut count (0..15)
 * and one byte per cut; a plant byte (low 3 bits: plants, 0..4), then two bytes per plant
 * choosing a pattern and a position; then the text. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_scrub.h"

#define FUZZ_VALUES_MAX 8
#define FUZZ_VALUE_LEN 48
#define FUZZ_CUTS_MAX 16
#define FUZZ_PLANTS_MAX 4
#define FUZZ_BYTEWISE_MAX 1024

typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in_t;

typedef struct fuzz_out {
    uint8_t *p;
    size_t len, cap;
} fuzz_out_t;

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

static int on_emit(void *arg, const char *data, size_t len)
{
    fuzz_out_t *o = arg;
    if (len == 0 || len > o->cap - o->len)
        __builtin_trap(); /* empty emits are never made; the reference bounds the output */
    memcpy(o->p + o->len, data, len);
    o->len += len;
    return 0;
}

/* The reference output into out (room for len * the longest replacement + len); the
 * patterns tried at a position are those beginning with its byte, in pattern order. */
static size_t fuzz_naive(const addon_scrub_t *m, const uint8_t *t, size_t len, uint8_t *out,
                         uint64_t *count)
{
    size_t o = 0, np = addon_scrub_pattern_count(m);
    size_t start[257] = {0}, fill[256];
    size_t *by = malloc((np + 1) * sizeof(*by));
    if (by == NULL)
        abort();
    for (size_t k = 0; k < np; k++)
        start[(uint8_t)addon_scrub_pattern(m, k, NULL, NULL, NULL).base[0] + 1]++;
    for (size_t c = 1; c <= 256; c++)
        start[c] += start[c - 1];
    memcpy(fill, start, sizeof(fill));
    for (size_t k = 0; k < np; k++)
        by[fill[(uint8_t)addon_scrub_pattern(m, k, NULL, NULL, NULL).base[0]]++] = k;
    *count = 0;
    for (size_t i = 0; i < len;) {
        size_t best = SIZE_MAX, bestlen = 0;
        for (size_t j = start[t[i]]; j < start[t[i] + 1]; j++) {
            addon_str_t p = addon_scrub_pattern(m, by[j], NULL, NULL, NULL);
            if (p.len > bestlen && p.len <= len - i && memcmp(t + i, p.base, p.len) == 0) {
                best = by[j];
                bestlen = p.len;
            }
        }
        if (best == SIZE_MAX) {
            out[o++] = t[i++];
            continue;
        }
        addon_str_t r;
        addon_scrub_pattern(m, best, &r, NULL, NULL);
        memcpy(out + o, r.base, r.len);
        o += r.len;
        i += bestlen;
        (*count)++;
    }
    free(by);
    return o;
}

static void fuzz_values(fuzz_in_t *in, addon_scrub_item_t *items, size_t *n, char names[][4])
{
    uint8_t b = 0;
    fuzz_byte(in, &b);
    size_t want = (size_t)(b % FUZZ_VALUES_MAX) + 1;
    for (*n = 0; *n < want; (*n)++) {
        addon_str_t *f[2] = {&items[*n].value, &items[*n].surrogate};
        for (int k = 0; k < 2; k++) {
            uint8_t lb = 0;
            fuzz_byte(in, &lb);
            size_t len = (size_t)lb % FUZZ_VALUE_LEN;
            len = len > in->n ? in->n : len;
            f[k]->base = (const char *)in->p;
            f[k]->len = len;
            in->p += len;
            in->n -= len;
        }
        names[*n][0] = 'v';
        names[*n][1] = (char)('0' + *n);
        names[*n][2] = '\0';
        items[*n].name.base = names[*n];
        items[*n].name.len = 2;
    }
}

/* The text with the plants; t has room for the input and FUZZ_PLANTS_MAX longest patterns. */
static size_t fuzz_text(fuzz_in_t *in, const addon_scrub_t *m, uint8_t *t)
{
    uint8_t plant = 0, which[FUZZ_PLANTS_MAX] = {0}, where[FUZZ_PLANTS_MAX] = {0};
    fuzz_byte(in, &plant);
    size_t nplants = (size_t)(plant & 7) % (FUZZ_PLANTS_MAX + 1);
    for (size_t i = 0; i < nplants; i++) {
        fuzz_byte(in, &which[i]);
        fuzz_byte(in, &where[i]);
    }
    memcpy(t, in->p, in->n);
    size_t len = in->n;
    size_t np = addon_scrub_pattern_count(m);
    for (size_t i = 0; i < nplants && np > 0; i++) {
        addon_str_t p = addon_scrub_pattern(m, which[i] % np, NULL, NULL, NULL);
        size_t at = (size_t)where[i] * (len + 1) / 256;
        memmove(t + at + p.len, t + at, len - at);
        memcpy(t + at, p.base, p.len);
        len += p.len;
    }
    return len;
}

/* Streams t cut at cuts[0..ncuts) (ascending) into o; checks the held bound and the count. */
static void fuzz_stream(const addon_scrub_t *m, const uint8_t *t, size_t len, const size_t *cuts,
                        size_t ncuts, fuzz_out_t *o, uint64_t count)
{
    addon_scrub_stream_t *st = addon_scrub_stream_new(m);
    if (st == NULL)
        abort();
    size_t max = addon_scrub_max_pattern_len(m);
    size_t from = 0;
    for (size_t c = 0; c <= ncuts; c++) {
        size_t to = c < ncuts ? cuts[c] : len;
        if (addon_scrub_stream_feed(st, t + from, to - from, on_emit, o) != 0)
            __builtin_trap();
        if (addon_scrub_stream_held(st) > (max > 0 ? max - 1 : 0))
            __builtin_trap();
        from = to;
    }
    if (addon_scrub_stream_flush(st, on_emit, o) != 0 || addon_scrub_stream_held(st) != 0)
        __builtin_trap();
    if (addon_scrub_stream_total(st) != count)
        __builtin_trap();
    addon_scrub_stream_free(st);
}

static void fuzz_same(const fuzz_out_t *o, const uint8_t *want, size_t wl)
{
    if (o->len != wl || memcmp(o->p, want, wl) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    addon_scrub_item_t items[FUZZ_VALUES_MAX];
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

    addon_scrub_t *m = NULL;
    if (addon_scrub_new(items, n, &m, NULL, 0, NULL) != 0)
        __builtin_trap();
    size_t tcap = in.n + FUZZ_PLANTS_MAX * addon_scrub_max_pattern_len(m) + 1;
    uint8_t *t = malloc(tcap);
    /* every replacement is at most 4/3 * 3 * FUZZ_VALUE_LEN + 4 bytes, every pattern >= 1 */
    size_t ocap = tcap * (4 * FUZZ_VALUE_LEN + 8);
    uint8_t *want = malloc(ocap);
    fuzz_out_t o = {malloc(ocap), 0, ocap};
    if (t == NULL || want == NULL || o.p == NULL)
        abort();
    size_t len = fuzz_text(&in, m, t);
    size_t cuts[FUZZ_CUTS_MAX];
    for (size_t i = 0; i < ncuts; i++)
        cuts[i] = (size_t)cutb[i] * (len + 1) / 256;
    qsort(cuts, ncuts, sizeof(cuts[0]), fuzz_cmp);
    uint64_t count;
    size_t wl = fuzz_naive(m, t, len, want, &count);

    char *one = NULL;
    size_t olen = 0;
    uint64_t counts[FUZZ_VALUES_MAX] = {0}, sum = 0;
    int rc = addon_scrub_once(m, t, len, &one, &olen, counts);
    if (rc < 0 || (rc == 0) != (count == 0))
        __builtin_trap();
    if (rc == 1 && (olen != wl || memcmp(one, want, wl) != 0))
        __builtin_trap();
    if (rc == 0 && (wl != len || memcmp(t, want, len) != 0))
        __builtin_trap();
    for (size_t i = 0; i < n; i++)
        sum += counts[i];
    if (sum != count)
        __builtin_trap();
    free(one);

    fuzz_stream(m, t, len, cuts, ncuts, &o, count);
    fuzz_same(&o, want, wl);
    if (len <= FUZZ_BYTEWISE_MAX) {
        size_t *all = malloc((len + 1) * sizeof(*all));
        if (all == NULL)
            abort();
        for (size_t i = 0; i < len; i++)
            all[i] = i + 1;
        o.len = 0;
        fuzz_stream(m, t, len, all, len, &o, count);
        fuzz_same(&o, want, wl);
        free(all);
    }
    free(o.p);
    free(want);
    free(t);
    addon_scrub_free(m);
    return 0;
}
