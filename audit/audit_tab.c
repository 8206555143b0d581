#include "audit/audit_tab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_grow.h"

/* Keys and values live in chunks allocated as the table fills; the index is an open-addressing
 * array of entry numbers (plus one; 0 = empty) kept under half full. */
#define AUDIT__CHUNK (64 * 1024)

typedef struct audit__ent {
    const char *key;
    size_t klen;
    uint64_t hash;
    void *val;
} audit__ent_t;

typedef struct audit__chunk {
    struct audit__chunk *next;
    size_t used;
    size_t cap;
    char data[];
} audit__chunk_t;

struct audit_tab {
    size_t max;
    size_t vsize;
    audit__ent_t *ents;
    size_t n;
    size_t ents_cap;
    uint32_t *index;
    size_t index_cap; /* a power of two */
    audit__chunk_t *chunks;
    size_t bytes;
    unsigned long refused;
};

static uint64_t audit__hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

audit_tab_t *audit_tab_new(size_t max, size_t vsize)
{
    audit_tab_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->max = max;
    t->vsize = (vsize + 15) & ~(size_t)15;
    t->bytes = sizeof(*t);
    return t;
}

void audit_tab_free(audit_tab_t *t)
{
    if (t == NULL)
        return;
    audit__chunk_t *c = t->chunks;
    while (c != NULL) {
        audit__chunk_t *next = c->next;
        free(c);
        c = next;
    }
    free(t->ents);
    free(t->index);
    free(t);
}

static void *audit__alloc(audit_tab_t *t, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    audit__chunk_t *c = t->chunks;
    if (c == NULL || c->cap - c->used < n) {
        size_t cap = n > AUDIT__CHUNK ? n : AUDIT__CHUNK;
        c = malloc(sizeof(*c) + cap);
        if (c == NULL)
            return NULL;
        c->cap = cap;
        c->used = 0;
        c->next = t->chunks;
        t->chunks = c;
        t->bytes += sizeof(*c) + cap;
    }
    void *p = c->data + c->used;
    c->used += n;
    return p;
}

static int audit__reindex(audit_tab_t *t, size_t cap)
{
    uint32_t *idx = calloc(cap, sizeof(*idx));
    if (idx == NULL)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t k = (size_t)t->ents[i].hash & (cap - 1);
        while (idx[k] != 0)
            k = (k + 1) & (cap - 1);
        idx[k] = (uint32_t)(i + 1);
    }
    t->bytes += (cap - t->index_cap) * sizeof(*idx);
    free(t->index);
    t->index = idx;
    t->index_cap = cap;
    return 0;
}

void *audit_tab_get(audit_tab_t *t, const char *key, size_t klen, int create, int *created)
{
    if (created != NULL)
        *created = 0;
    uint64_t h = audit__hash(key, klen);
    if (t->index_cap > 0) {
        size_t k = (size_t)h & (t->index_cap - 1);
        while (t->index[k] != 0) {
            const audit__ent_t *e = &t->ents[t->index[k] - 1];
            if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
                return e->val;
            k = (k + 1) & (t->index_cap - 1);
        }
    }
    if (!create)
        return NULL;
    if (t->n >= t->max || klen > AUDIT_TAB_KEY_MAX) {
        t->refused++;
        return NULL;
    }
    if ((t->n + 1) * 2 > t->index_cap &&
        audit__reindex(t, t->index_cap ? t->index_cap * 2 : 64) != 0) {
        t->refused++;
        return NULL;
    }
    size_t had = t->ents_cap;
    if (px_grow(&t->ents, &t->ents_cap, t->n + 1, sizeof(*t->ents), 32, SIZE_MAX) != 0) {
        t->refused++;
        return NULL;
    }
    t->bytes += (t->ents_cap - had) * sizeof(*t->ents);
    char *kcopy = audit__alloc(t, klen + 1);
    void *val = audit__alloc(t, t->vsize ? t->vsize : 1);
    if (kcopy == NULL || val == NULL) {
        t->refused++;
        return NULL;
    }
    if (klen > 0)
        memcpy(kcopy, key, klen);
    kcopy[klen] = '\0';
    memset(val, 0, t->vsize ? t->vsize : 1);
    audit__ent_t *e = &t->ents[t->n];
    e->key = kcopy;
    e->klen = klen;
    e->hash = h;
    e->val = val;
    t->n++;
    size_t k = (size_t)h & (t->index_cap - 1);
    while (t->index[k] != 0)
        k = (k + 1) & (t->index_cap - 1);
    t->index[k] = (uint32_t)t->n;
    if (created != NULL)
        *created = 1;
    return val;
}

size_t audit_tab_max(const audit_tab_t *t)
{
    return t->max;
}

size_t audit_tab_count(const audit_tab_t *t)
{
    return t->n;
}

unsigned long audit_tab_refused(const audit_tab_t *t)
{
    return t->refused;
}

void *audit_tab_at(const audit_tab_t *t, size_t i, const char **key, size_t *klen)
{
    if (i >= t->n)
        return NULL;
    if (key != NULL)
        *key = t->ents[i].key;
    if (klen != NULL)
        *klen = t->ents[i].klen;
    return t->ents[i].val;
}

size_t audit_tab_bytes(const audit_tab_t *t)
{
    return t->bytes;
}
