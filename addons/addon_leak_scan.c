/* Leak scanning, the scanner: one automaton over every pattern, fed two ways.
 *
 * Short texts (a URL, a header value, a small piece of body) go through the automaton byte by
 * byte, with a Wu-Manber skip while it is at its root. Long pieces of a body are sampled: a
 * pattern of length >= minlen that lies wholly inside the piece covers minlen - 3 consecutive
 * 4-byte grams starting at its first minlen - 3 offsets, so one gram every step = minlen - 3
 * bytes is certain to fall on one of them. A bitmap of the hashed grams dismisses almost every
 * sample with one load; a sample whose bit is set is checked against the exact grams, and a
 * gram that is exact is checked against its pattern. The automaton only runs over the piece's
 * first and last maxlen bytes (matches that straddle the previous piece, and the state the
 * next piece needs), so the cost is one hash per step bytes rather than one table walk per
 * byte, and no sample depends on another (the loads overlap). When a sample finds a match, the
 * piece is fed through the automaton again to report the first match ending in it, exactly as
 * the byte-by-byte scan would: that happens once in a refused request's life. */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "addons/addon_leak_int.h"
#include "base/px_err.h"

#define LEAK_WIN_MAX 32 /* window of the shift table: at most the shortest pattern */
/* The shift table: 32 KiB fits L1 and measured fastest (at 64 KiB the table's load from L2 is
 * on every step's path); it grows with the pattern count so that at most a quarter of its
 * slots are taken, or text made of the patterns' alphabet (base64, hex) would shift little. A
 * hashed 4-byte gram rather than an exact 2-byte one: base64 text ran at 1.5 GB/s with the
 * exact bigram table (every alphanumeric bigram was taken), 3.2 GB/s with this one. */
#define LEAK_SHIFT_BITS_MIN 15
#define LEAK_SHIFT_BITS_MAX 22
/* The second-stage and tail bitmaps: 2^18 bits, 32 KiB each, off the hot path. */
#define LEAK_BITS_LOG 18
/* The sampling bitmap: 16 bits per gram (a random sample passes with a chance of 1 in 16 or
 * less), 2^15 to 2^20 bits. Smaller is faster even at a higher pass rate: the kernel's copies
 * of each piece push the bitmap out of L1, and each piece reloads the lines it touches. With
 * 32 secrets and 8 canaries (7,700 grams), 2^17 bits (16 KiB) took 3.6-4.1 % of airlock's CPU
 * in leak_bench.sh against 3.9-4.8 % with 2^18. */
#define LEAK_SBITS_MIN 15
#define LEAK_SBITS_MAX 20
#define LEAK_SBITS_PER_GRAM 16
/* Pieces shorter than this many times the longest pattern are fed byte by byte: the two
 * automaton passes of the sampled scan would cover most of them anyway. */
#define LEAK_SAMPLE_MIN_PIECES 4
/* A sample's word of the bitmap: the hash's top bits (wshr = 32 - log2 of its bits + 6); its
 * bit: the hash's low 6 bits, which hang on the low 6 bits of the gram's first byte only, but
 * cost no instruction (shrx takes a count modulo 64): one of seven per sample, 33 -> 40 GB/s.
 * Text drawn from the patterns' own alphabet passes a little more often (base64: 52 of the 64
 * bit values). */
#define LEAK_WORD(h, wshr) ((h) >> (wshr))
#define LEAK_BITNO(h) ((h)&63)

/* ---- the automaton -------------------------------------------------------------------- */

/* The child of s labelled c, or ADDON__LEAK_ROOT. */
static uint32_t leak_child(const addon_leak_t *m, uint32_t s, unsigned char c)
{
    if (s == ADDON__LEAK_ROOT)
        return m->root[c];
    uint32_t lo = m->first[s];
    uint32_t hi = lo + m->cnt[s];
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->label[mid] == c)
            return mid;
        if (m->label[mid] < c)
            lo = mid + 1;
        else
            hi = mid;
    }
    return ADDON__LEAK_ROOT;
}

uint32_t addon__leak_step(const addon_leak_t *m, uint32_t s, unsigned char c)
{
    while (s != ADDON__LEAK_ROOT) {
        uint32_t t = leak_child(m, s, c);
        if (t != ADDON__LEAK_ROOT)
            return t;
        s = m->fail[s];
    }
    return m->root[c];
}

/* ---- tables --------------------------------------------------------------------------- */

static int leak_shift_build(addon_leak_t *m)
{
    m->win = m->minlen < LEAK_WIN_MAX ? m->minlen : LEAK_WIN_MAX;
    unsigned bits = LEAK_SHIFT_BITS_MIN;
    while (bits < LEAK_SHIFT_BITS_MAX &&
           ((size_t)1 << bits) < 4 * m->npats * (m->win - ADDON__LEAK_GRAM + 1))
        bits++;
    m->shift_size = (size_t)1 << bits;
    m->shift_shr = 32 - bits;
    m->shift = malloc(m->shift_size);
    if (m->shift == NULL)
        return PX_ENOMEM;
    memset(m->shift, (int)(m->win - ADDON__LEAK_GRAM + 1), m->shift_size);
    for (size_t i = 0; i < m->npats; i++) {
        const unsigned char *p = m->blob + m->pats[i].off;
        for (size_t j = 0; j + ADDON__LEAK_GRAM <= m->win; j++) {
            unsigned g = addon__leak_hash(p + j) >> m->shift_shr;
            if (m->shift[g] > m->win - ADDON__LEAK_GRAM - j)
                m->shift[g] = (unsigned char)(m->win - ADDON__LEAK_GRAM - j);
        }
    }
    return 0;
}

/* A second hash of a gram, independent of addon__leak_hash's top bits. */
static inline uint32_t leak_hash2(uint32_t g)
{
    g ^= g >> 15;
    return g * 0x85ebca6bu;
}

static unsigned leak_log2_at_least(size_t want, unsigned lo, unsigned hi)
{
    unsigned b = lo;
    while (b < hi && ((size_t)1 << b) < want)
        b++;
    return b;
}

/* The grams at offsets 0 .. step - 1 of every pattern, in the bitmap and by bucket. */
static int leak_sample_build(addon_leak_t *m)
{
    m->step = m->minlen - ADDON__LEAK_GRAM + 1;
    m->ngrams = m->npats * m->step;
    unsigned gl = leak_log2_at_least(m->ngrams, 4, 30);
    unsigned sl =
        leak_log2_at_least(m->ngrams * LEAK_SBITS_PER_GRAM, LEAK_SBITS_MIN, LEAK_SBITS_MAX);
    m->sbits_words = ((size_t)1 << sl) / 64;
    m->sbits_wshr = 32 - sl + 6;
    m->bits_shr = 32 - LEAK_BITS_LOG;
    m->bits_words = ((size_t)1 << LEAK_BITS_LOG) / 64;
    m->gslot_shr = 32 - gl;
    m->bits = calloc(m->sbits_words, sizeof(*m->bits));
    m->bits2 = calloc(m->bits_words, sizeof(*m->bits2));
    m->tailbits = calloc(m->bits_words, sizeof(*m->tailbits));
    m->gstart = calloc(((size_t)1 << gl) + 1, sizeof(*m->gstart));
    m->grams = malloc(m->ngrams * sizeof(*m->grams));
    if (m->bits == NULL || m->bits2 == NULL || m->tailbits == NULL || m->gstart == NULL ||
        m->grams == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < m->npats; i++) { /* every gram of every pattern, for the tail */
        const unsigned char *p = m->blob + m->pats[i].off;
        for (size_t j = 0; j + ADDON__LEAK_GRAM <= m->pats[i].len; j++) {
            uint32_t h = addon__leak_hash(p + j) >> m->bits_shr;
            m->tailbits[h / 64] |= (uint64_t)1 << (h % 64);
        }
    }
    for (size_t i = 0; i < m->npats; i++) { /* bucket sizes, shifted up by one */
        const unsigned char *p = m->blob + m->pats[i].off;
        for (size_t j = 0; j < m->step; j++) {
            uint32_t h = addon__leak_hash(p + j);
            m->bits[LEAK_WORD(h, m->sbits_wshr)] |= (uint64_t)1 << LEAK_BITNO(h);
            uint32_t g, h2;
            memcpy(&g, p + j, sizeof(g));
            h2 = leak_hash2(g) >> m->bits_shr;
            m->bits2[h2 / 64] |= (uint64_t)1 << (h2 % 64);
            m->gstart[(h >> m->gslot_shr) + 1]++;
        }
    }
    for (size_t b = 1; b <= ((size_t)1 << gl); b++)
        m->gstart[b] += m->gstart[b - 1];
    for (size_t i = 0; i < m->npats; i++) { /* gstart[b] runs to bucket b's end, then is back */
        const unsigned char *p = m->blob + m->pats[i].off;
        for (size_t j = 0; j < m->step; j++) {
            uint32_t h = addon__leak_hash(p + j);
            addon__leak_gram_t *g = &m->grams[m->gstart[h >> m->gslot_shr]++];
            memcpy(&g->gram, p + j, sizeof(g->gram));
            g->pat = (uint32_t)i;
            g->off = (uint32_t)j;
        }
    }
    for (size_t b = (size_t)1 << gl; b > 0; b--)
        m->gstart[b] = m->gstart[b - 1];
    m->gstart[0] = 0;
    return 0;
}

int addon__leak_tables_build(addon_leak_t *m)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    m->bmi2 = __builtin_cpu_supports("bmi2");
#endif
    int rc = leak_shift_build(m);
    return rc != 0 ? rc : leak_sample_build(m);
}

void addon__leak_tables_free(addon_leak_t *m)
{
    if (m->shift != NULL)
        OPENSSL_cleanse(m->shift, m->shift_size);
    free(m->shift);
    if (m->bits != NULL)
        OPENSSL_cleanse(m->bits, m->sbits_words * sizeof(*m->bits));
    free(m->bits);
    if (m->bits2 != NULL)
        OPENSSL_cleanse(m->bits2, m->bits_words * sizeof(*m->bits2));
    free(m->bits2);
    if (m->tailbits != NULL)
        OPENSSL_cleanse(m->tailbits, m->bits_words * sizeof(*m->tailbits));
    free(m->tailbits);
    free(m->gstart);
    if (m->grams != NULL)
        OPENSSL_cleanse(m->grams, m->ngrams * sizeof(*m->grams));
    free(m->grams);
}

/* ---- scanning ------------------------------------------------------------------------- */

void addon_leak_state_init(addon_leak_state_t *st)
{
    st->node = ADDON__LEAK_ROOT;
    st->pos = 0;
}

/* From window start i with the automaton at its root: the first window (win bytes, the
 * shortest pattern's length at most) whose last 4 bytes may lie in some pattern's first win
 * bytes, or the first window that does not fit in len. No pattern starts in a window skipped:
 * it would hold that window's last 4 bytes at an offset the table allows (Wu-Manber). */
static size_t leak_skip(const addon_leak_t *m, const unsigned char *p, size_t i, size_t len)
{
    const unsigned char *shift = m->shift;
    unsigned shr = m->shift_shr;
    if (len < m->win)
        return i;
    const unsigned char *q = p + m->win - ADDON__LEAK_GRAM; /* q + i: window i's last 4 bytes */
    size_t end = len - m->win;                              /* the last window start */
    while (i <= end) {
        unsigned s = shift[addon__leak_hash(q + i) >> shr];
        if (s == 0)
            break;
        i += s;
    }
    return i;
}

/* The automaton over p[0..len) from *node: 1 at the first match (*node and *used then stop
 * just past it), else 0 with *node at the end and *used = len. */
static int leak_run(const addon_leak_t *m, uint32_t *node, const unsigned char *p, size_t len,
                    size_t *used)
{
    uint32_t s = *node;
    size_t i = 0;
    while (i < len) {
        if (s == ADDON__LEAK_ROOT) {
            i = leak_skip(m, p, i, len);
            if (i >= len)
                break;
        }
        s = addon__leak_step(m, s, p[i++]);
        if (m->out[s] != ADDON__LEAK_NONE) {
            *node = s;
            *used = i;
            return 1;
        }
    }
    *node = s;
    *used = len;
    return 0;
}

/* leak_sample_check's exact stage, for a gram g found in both bitmaps; out of line, so that
 * the sampling loop around the inlined bitmap test stays small (47 -> 50 GB/s). */
static __attribute__((noinline)) int
leak_sample_exact(const addon_leak_t *m, const unsigned char *p, size_t len, size_t q, uint32_t g)
{
    uint32_t b = addon__leak_hash(p + q) >> m->gslot_shr;
    for (uint32_t k = m->gstart[b]; k < m->gstart[b + 1]; k++) {
        const addon__leak_gram_t *e = &m->grams[k];
        if (e->gram != g || e->off > q)
            continue;
        const addon__leak_pat_t *pat = &m->pats[e->pat];
        size_t at = q - e->off;
        if (pat->len <= len - at && memcmp(p + at, m->blob + pat->off, pat->len) == 0)
            return 1;
    }
    return 0;
}

/* Whether the gram sampled at offset q of p[0..len) begins a pattern lying wholly in p. */
static inline int leak_sample_check(const addon_leak_t *m, const unsigned char *p, size_t len,
                                    size_t q)
{
    uint32_t g;
    memcpy(&g, p + q, sizeof(g));
    uint32_t h2 = leak_hash2(g) >> (32 - LEAK_BITS_LOG);
    if ((m->bits2[h2 >> 6] >> (h2 & 63) & 1) == 0)
        return 0; /* most samples past the first bitmap stop at the second */
    return leak_sample_exact(m, p, len, q, g);
}

/* Bit i alone, for testing a bitmap's bit without a shift by a variable count (below). */
static const uint64_t leak_mask[64] = {
#define LEAK_M4(i)                                                                                 \
    (uint64_t)1 << (i), (uint64_t)1 << ((i) + 1), (uint64_t)1 << ((i) + 2), (uint64_t)1 << ((i) + 3)
    LEAK_M4(0),  LEAK_M4(4),  LEAK_M4(8),  LEAK_M4(12), LEAK_M4(16), LEAK_M4(20),
    LEAK_M4(24), LEAK_M4(28), LEAK_M4(32), LEAK_M4(36), LEAK_M4(40), LEAK_M4(44),
    LEAK_M4(48), LEAK_M4(52), LEAK_M4(56), LEAK_M4(60),
#undef LEAK_M4
};

/* Whether some pattern lies wholly in p[0..len) (len >= minlen). Four samples per round, one
 * branch for the four: their loads do not depend on each other. shiftx: test a bit by a
 * shift by a variable count, for processors with BMI2's shrx (any register); otherwise by a
 * mask from a table, as x86 without it can only shift by the cl register, which four
 * samples in flight would fight over (the word's shift is the same count for all). */
__attribute__((always_inline)) static inline int
leak_sample_body(const addon_leak_t *m, const unsigned char *p, size_t len, int shiftx)
{
#define LEAK_BIT(h)                                                                                \
    (shiftx ? (bits[LEAK_WORD(h, wshr)] >> LEAK_BITNO(h)) & 1                                      \
            : bits[LEAK_WORD(h, wshr)] & leak_mask[LEAK_BITNO(h)])
    const uint64_t *bits = m->bits;
    const unsigned wshr = m->sbits_wshr;
    const size_t s1 = m->step;
    const unsigned char *a = p;
    const unsigned char *last = p + len - ADDON__LEAK_GRAM; /* the last place a gram fits */
    if (len - ADDON__LEAK_GRAM >= 3 * s1) {
        const unsigned char *end = last - 3 * s1; /* the last round's first sample */
        while (a <= end) {
            /* the rounds as a tight loop of their own (nothing else live in registers) */
            for (; a <= end; a += 4 * s1) {
                uint32_t h0 = addon__leak_hash(a);
                uint32_t h1 = addon__leak_hash(a + s1);
                uint32_t h2 = addon__leak_hash(a + 2 * s1);
                uint32_t h3 = addon__leak_hash(a + 3 * s1);
                if ((LEAK_BIT(h0) | LEAK_BIT(h1) | LEAK_BIT(h2) | LEAK_BIT(h3)) != 0)
                    break;
            }
            if (a > end)
                break;
            /* only the samples that passed go on (checking all four: 40 GB/s, not 47) */
            for (size_t k = 0; k < 4; k++) {
                uint32_t h = addon__leak_hash(a + k * s1);
                if (LEAK_BIT(h) != 0 && leak_sample_check(m, p, len, (size_t)(a - p) + k * s1))
                    return 1;
            }
            a += 4 * s1;
        }
    }
    for (; a <= last; a += s1) {
        uint32_t h = addon__leak_hash(a);
        if (LEAK_BIT(h) != 0 && leak_sample_check(m, p, len, (size_t)(a - p)))
            return 1;
    }
    return 0;
#undef LEAK_BIT
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define LEAK_HAVE_BMI2 1
__attribute__((target("bmi2"))) static int leak_sample_bmi2(const addon_leak_t *m,
                                                            const unsigned char *p, size_t len)
{
    return leak_sample_body(m, p, len, 1);
}
#endif

static int leak_sample(const addon_leak_t *m, const unsigned char *p, size_t len)
{
#ifdef LEAK_HAVE_BMI2
    if (m->bmi2)
        return leak_sample_bmi2(m, p, len);
#endif
    return leak_sample_body(m, p, len, 0);
}

/* The automaton from node (the stream's state) over the piece's first bytes while a pattern
 * begun before the piece may still end in it, that is while the state reaches back past the
 * piece's start: 1 at a match. Usually no byte at all (the state is at the root). */
static int leak_seam(const addon_leak_t *m, uint32_t node, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len && m->depth[node] > i; i++) {
        node = addon__leak_step(m, node, p[i]);
        if (m->out[node] != ADDON__LEAK_NONE)
            return 1;
    }
    return 0;
}

static void leak_report(const addon_leak_t *m, uint32_t node, uint64_t end,
                        addon_leak_match_t *match)
{
    const addon__leak_pat_t *pat = &m->pats[m->out[node]];
    match->name = m->names[pat->item];
    match->kind = m->kinds[pat->item];
    match->enc = pat->enc;
    match->end = end;
}

/* The byte-by-byte feed. */
static int leak_feed_run(const addon_leak_t *m, addon_leak_state_t *st, const unsigned char *p,
                         size_t len, addon_leak_match_t *match)
{
    size_t used;
    int hit = leak_run(m, &st->node, p, len, &used);
    st->pos += used;
    if (hit)
        leak_report(m, st->node, st->pos, match); /* the rest is the next feed's */
    return hit;
}

int addon_leak_feed(const addon_leak_t *m, addon_leak_state_t *st, const void *data, size_t len,
                    addon_leak_match_t *match)
{
    if (m == NULL || m->npats == 0) {
        st->pos += len;
        return 0;
    }
    const unsigned char *p = data;
    size_t edge = m->maxlen;
    if (len < LEAK_SAMPLE_MIN_PIECES * edge) /* also >= 4 samples: maxlen >= minlen > step */
        return leak_feed_run(m, st, p, len, match);
    /* The tail's bit (below) is fetched now, while the samples run: one bit of a table that
     * nothing else touches is out of every cache by the next piece (a stall of hundreds of
     * cycles once per piece, measured as a sixth of the guard's time in the proxy). */
    uint32_t h = addon__leak_hash(p + len - ADDON__LEAK_GRAM) >> (32 - LEAK_BITS_LOG);
    __builtin_prefetch(&m->tailbits[h >> 6]);
    /* A match begun in an earlier piece is found by the automaton from the stream's state (the
     * seam); one lying wholly in the piece, by the samples; the state at the end depends only
     * on the last maxlen bytes, as no trie node is deeper and a node maxlen deep is a match. */
    if (leak_seam(m, st->node, p, len) || leak_sample(m, p, len))
        return leak_feed_run(m, st, p, len, match);
    /* A state 4 or more bytes deep would end in a 4-byte gram of some pattern; when the last
     * 4 bytes are none, the state is at most 3 deep and the last 3 bytes give it. */
    size_t tail = (m->tailbits[h >> 6] >> (h & 63) & 1) != 0 ? edge : ADDON__LEAK_GRAM - 1;
    uint32_t node = ADDON__LEAK_ROOT;
    size_t used;
    if (leak_run(m, &node, p + len - tail, tail, &used))
        return leak_feed_run(m, st, p, len, match); /* never: the samples would have seen it */
    st->node = node;
    st->pos += len;
    return 0;
}

int addon_leak_scan(const addon_leak_t *m, const void *data, size_t len, addon_leak_match_t *match)
{
    addon_leak_state_t st;
    addon_leak_state_init(&st);
    return addon_leak_feed(m, &st, data, len, match);
}

size_t addon_leak_pending(const addon_leak_t *m, const addon_leak_state_t *st)
{
    return m != NULL && m->npats > 0 ? m->depth[st->node] : 0;
}
