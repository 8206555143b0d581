/* Internals of addons/addon_leak shared by its builder (addon_leak.c: patterns, automaton) and
 * its scanner (addon_leak_scan.c: the skip and sampling tables, feeding). */
#ifndef ADDON_LEAK_INT_H
#define ADDON_LEAK_INT_H

#include <stdint.h>
#include <string.h>

#include "addons/addon_leak.h"

#define ADDON__LEAK_ROOT 0u
#define ADDON__LEAK_NONE (-1)
#define ADDON__LEAK_GRAM 4 /* bytes the skip and sampling tables are indexed by (hashed) */

typedef struct addon__leak_pat {
    size_t off; /* in blob */
    size_t len;
    uint32_t item;
    addon_leak_enc_t enc;
} addon__leak_pat_t;

/* A 4-byte gram at offset off of pattern pat (the sampling table's exact second stage). */
typedef struct addon__leak_gram {
    uint32_t gram;
    uint32_t pat;
    uint32_t off;
} addon__leak_gram_t;

struct addon_leak {
    char **names;
    addon_leak_kind_t *kinds;
    size_t nitems;
    unsigned char *blob; /* every pattern's bytes, wiped on free */
    size_t bloblen, blobcap;
    addon__leak_pat_t *pats;
    size_t npats, patcap;
    size_t minlen, maxlen;
    /* The automaton, nodes numbered in BFS order so that a node's children are consecutive. */
    uint32_t nnodes;
    uint32_t *first; /* first child */
    uint32_t *cnt;   /* children */
    uint32_t *fail;
    uint32_t *depth; /* bytes from the root */
    int32_t *out;    /* pattern ending here (longest), or via the dictionary suffix; LEAK_NONE */
    unsigned char *label;
    uint32_t root[256];
    /* Short texts: the automaton with a Wu-Manber skip while it is at its root. */
    size_t win;           /* shift window, 0 when there is no pattern */
    unsigned char *shift; /* by a hash of the window's last 4 bytes: how far the window may move */
    size_t shift_size;
    unsigned shift_shr;
    /* Long pieces: a 4-byte gram sampled every `step` bytes (the shortest pattern less 3), a
     * bitmap of the hashed grams of every pattern's first minlen bytes, and the exact grams by
     * hash bucket (grams[gstart[b] .. gstart[b + 1])). */
    size_t step;
    uint64_t *bits; /* sbits_words words, indexed by a hash's top bits (>> sbits_wshr) */
    size_t sbits_words;
    unsigned sbits_wshr;
    uint64_t *bits2;    /* the same grams under a second hash: a sample's second stage */
    uint64_t *tailbits; /* every gram of every pattern (a piece's last 4 bytes looked up) */
    size_t bits_words;  /* bits2's and tailbits' */
    unsigned bits_shr;
    uint32_t *gstart;
    addon__leak_gram_t *grams;
    size_t ngrams;
    unsigned gslot_shr;
    int bmi2; /* the processor has BMI2: the samples test bits with shrx */
};

/* The hash of the 4 bytes at p (any alignment); its top bits index the tables. */
static inline uint32_t addon__leak_hash(const unsigned char *p)
{
    uint32_t g;
    memcpy(&g, p, sizeof(g));
    return g * 0x9e3779b1u;
}

/* One automaton transition (failure links followed). */
uint32_t addon__leak_step(const addon_leak_t *m, uint32_t s, unsigned char c);

/* The skip and sampling tables of a matcher whose patterns and automaton are built: 0 or
 * PX_ENOMEM. Freed (and wiped) by addon__leak_tables_free. */
int addon__leak_tables_build(addon_leak_t *m);
void addon__leak_tables_free(addon_leak_t *m);

#endif
