/* Counters by reason with the first example line: how the audit tools name what they skipped
 * (lines not re-decided, lines not read) instead of dropping it silently. */
#ifndef AUDIT_NAMED_H
#define AUDIT_NAMED_H

#include <stdio.h>

#include "audit/audit_tab.h"

#define AUDIT_NAMED_EXAMPLE_MAX 240 /* bytes of the example line kept */

typedef struct audit_named {
    unsigned long count;
    const char *file; /* borrowed: the caller's file name, alive as long as the table */
    unsigned long lineno;
    char example[AUDIT_NAMED_EXAMPLE_MAX + 1];
} audit_named_t;

/* A table of at most max reasons. */
audit_tab_t *audit_named_new(size_t max);

/* Counts one line (borrowed) under reason (copied); the first one of a reason is kept as its
 * example. A reason beyond the table's cap is counted under "other reasons". */
void audit_named_add(audit_tab_t *t, const char *reason, const char *file, unsigned long lineno,
                     const char *line, size_t len);

/* Total count over every reason. */
unsigned long audit_named_total(const audit_tab_t *t);

/* Writes "  COUNT  reason\n      e.g. file:line: example\n" per reason (most frequent first). */
void audit_named_write(const audit_tab_t *t, FILE *out);

#endif
