/* The leaf cache: a chained hash table keyed by the normalized name plus a doubly linked LRU
 * list threaded through the leaves themselves, so get, put and evict are O(1) and a cached
 * leaf costs no allocation beyond itself. The hash is SipHash-2-4 with a random key because
 * the names come from the agent, which could otherwise pile them into one bucket. */
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "ca/ca_int.h"
#include "base/px_err.h"

#define CA__ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define CA__SIPROUND                                                                               \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = CA__ROTL(v1, 13);                                                                     \
        v1 ^= v0;                                                                                  \
        v0 = CA__ROTL(v0, 32);                                                                     \
        v2 += v3;                                                                                  \
        v3 = CA__ROTL(v3, 16);                                                                     \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = CA__ROTL(v3, 21);                                                                     \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = CA__ROTL(v1, 17);                                                                     \
        v1 ^= v2;                                                                                  \
        v2 = CA__ROTL(v2, 32);                                                                     \
    } while (0)

static uint64_t load_le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint64_t siphash24(uint64_t k0, uint64_t k1, const unsigned char *p, size_t len)
{
    uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
    uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
    uint64_t v3 = k1 ^ 0x7465646279746573ULL;
    size_t full = len & ~(size_t)7;

    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = load_le64(p + i);
        v3 ^= m;
        CA__SIPROUND;
        CA__SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++) {
        b |= (uint64_t)p[full + i] << (8 * i);
    }
    v3 ^= b;
    CA__SIPROUND;
    CA__SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    CA__SIPROUND;
    CA__SIPROUND;
    CA__SIPROUND;
    CA__SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t ca__cache_hash(const ca__cache_t *c, const char *s, size_t len)
{
    return siphash24(c->k0, c->k1, (const unsigned char *)s, len);
}

int ca__cache_init(ca__cache_t *c, size_t cap)
{
    unsigned char key[16];
    size_t n = 16;

    memset(c, 0, sizeof(*c));
    if (cap == 0 || cap > CA_CACHE_MAX_CAP) {
        return PX_ECONFIG;
    }
    while (n < cap) {
        n <<= 1;
    }
    if (RAND_bytes(key, sizeof(key)) != 1) {
        return PX_ECRYPTO;
    }
    c->buckets = calloc(n, sizeof(*c->buckets));
    if (c->buckets == NULL) {
        return PX_ENOMEM;
    }
    c->mask = n - 1;
    c->cap = cap;
    c->k0 = load_le64(key);
    c->k1 = load_le64(key + 8);
    return 0;
}

static void lru_unlink(ca__cache_t *c, ca_leaf_t *leaf)
{
    if (leaf->prev != NULL) {
        leaf->prev->next = leaf->next;
    } else {
        c->head = leaf->next;
    }
    if (leaf->next != NULL) {
        leaf->next->prev = leaf->prev;
    } else {
        c->tail = leaf->prev;
    }
    leaf->prev = NULL;
    leaf->next = NULL;
}

static void lru_push_front(ca__cache_t *c, ca_leaf_t *leaf)
{
    leaf->prev = NULL;
    leaf->next = c->head;
    if (c->head != NULL) {
        c->head->prev = leaf;
    }
    c->head = leaf;
    if (c->tail == NULL) {
        c->tail = leaf;
    }
}

static void bucket_remove(ca__cache_t *c, ca_leaf_t *leaf)
{
    ca_leaf_t **pp = &c->buckets[leaf->hash & c->mask];

    while (*pp != NULL && *pp != leaf) {
        pp = &(*pp)->hnext;
    }
    if (*pp == leaf) {
        *pp = leaf->hnext;
    }
    leaf->hnext = NULL;
}

/* Unlinks leaf from table and list and drops the cache's reference. */
static void cache_drop(ca__cache_t *c, ca_leaf_t *leaf)
{
    bucket_remove(c, leaf);
    lru_unlink(c, leaf);
    leaf->cached = 0;
    c->count--;
    ca_leaf_release(leaf);
}

ca_leaf_t *ca__cache_find(ca__cache_t *c, const char *name, size_t len, uint64_t hash)
{
    ca_leaf_t *leaf = c->buckets[hash & c->mask];

    while (leaf != NULL) {
        if (leaf->hash == hash && leaf->name_len == len && memcmp(leaf->name, name, len) == 0) {
            if (c->head != leaf) {
                lru_unlink(c, leaf);
                lru_push_front(c, leaf);
            }
            return leaf;
        }
        leaf = leaf->hnext;
    }
    return NULL;
}

void ca__cache_insert(ca__cache_t *c, ca_leaf_t *leaf)
{
    size_t b = leaf->hash & c->mask;

    while (c->count >= c->cap && c->tail != NULL) {
        cache_drop(c, c->tail);
        c->evictions++;
    }
    ca_leaf_retain(leaf);
    leaf->cached = 1;
    leaf->hnext = c->buckets[b];
    c->buckets[b] = leaf;
    lru_push_front(c, leaf);
    c->count++;
}

void ca__cache_cleanup(ca__cache_t *c)
{
    while (c->tail != NULL) {
        cache_drop(c, c->tail);
    }
    free(c->buckets);
    c->buckets = NULL;
    c->mask = 0;
}
