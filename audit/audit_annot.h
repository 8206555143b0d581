/* A record's tail and annotations as the text log writes them (docs/network-log.md), read back
 * into parts: the " [key: value]" annotations of a request line, and the leak and budget
 * details of its tail. audit_json.c writes the parts as JSON members.
 *
 * Pure: views into the caller's text; no I/O, no allocation. */
#ifndef AUDIT_ANNOT_H
#define AUDIT_ANNOT_H

#include <stddef.h>

#include "audit/audit_event.h"

#define AUDIT_ANNOT_MAX 16 /* annotations a record carries at most */

/* One annotation: "[key: value]" (value may hold nested brackets). */
typedef struct audit_annot {
    audit_str_t key, value;
} audit_annot_t;

/* Splits " [k: v] [k: v]..." into a[] (room for AUDIT_ANNOT_MAX). Returns how many; *exact is
 * 1 when the object {k: v...} gives the text back exactly (each key once, nothing else in the
 * text, the counts masked and dropped in their integer form). A key is 1 to 32 of [a-z0-9-]. */
size_t audit_annot_split(audit_str_t s, audit_annot_t *a, int *exact);

/* 1 and *n when v is a count as the addons write it (%u): digits, no leading zero, at most
 * 9; else 0. */
int audit_annot_count(audit_str_t v, long long *n);

/* 1 when key names an annotation whose value is a count (masked, dropped). */
int audit_annot_is_count(audit_str_t key);

typedef enum { AUDIT_TAIL_OTHER = 0, AUDIT_TAIL_LEAK, AUDIT_TAIL_BUDGET } audit_tail_kind_t;

/* A tail's details: "leak: KIND NAME, ENCODING, in WHERE[; ...]" gives kind, entry,
 * encoding, where; "budget: KIND for SCOPE, COUNT[; ...]" gives kind, for, count (part[3]
 * empty). Anything else is OTHER (the caller keeps the text as it is). */
typedef struct audit_tail {
    audit_tail_kind_t kind;
    audit_str_t part[4];
} audit_tail_t;

void audit_tail_parse(audit_str_t t, audit_tail_t *out);

#endif
