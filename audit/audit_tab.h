/* A bounded string-keyed table for the audit aggregates: at most `max` keys, each with a
 * fixed-size value zeroed on creation, kept in insertion order. Memory grows with the distinct
 * keys seen, never with the lines read, and stops at the cap: a full table refuses new keys
 * and counts them (the report says so). */
#ifndef AUDIT_TAB_H
#define AUDIT_TAB_H

#include <stddef.h>

typedef struct audit_tab audit_tab_t;

/* A table of at most max keys (each at most AUDIT_TAB_KEY_MAX bytes) with values of vsize
 * bytes. NULL when out of memory. */
#define AUDIT_TAB_KEY_MAX 4096
audit_tab_t *audit_tab_new(size_t max, size_t vsize);

/* Frees t and every key and value. NULL is a no-op. */
void audit_tab_free(audit_tab_t *t);

/* The value for key[0..klen) (borrowed; copied on creation). With create 0: NULL when absent.
 * With create 1: the value, new (zeroed; *created = 1 when created is not NULL) when absent;
 * NULL when the table is full, the key is over AUDIT_TAB_KEY_MAX, or memory ran out (the key
 * is then counted as refused). The pointer stays valid until audit_tab_free. */
void *audit_tab_get(audit_tab_t *t, const char *key, size_t klen, int create, int *created);

/* The cap given to audit_tab_new. */
size_t audit_tab_max(const audit_tab_t *t);

/* Number of keys; keys refused because the table was full. */
size_t audit_tab_count(const audit_tab_t *t);
unsigned long audit_tab_refused(const audit_tab_t *t);

/* The i-th key (insertion order, i < count) and its value. */
void *audit_tab_at(const audit_tab_t *t, size_t i, const char **key, size_t *klen);

/* Bytes held by the table (for the memory figures). */
size_t audit_tab_bytes(const audit_tab_t *t);

#endif
