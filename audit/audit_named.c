#include "audit/audit_named.h"

#include <stdlib.h>
#include <string.h>

audit_tab_t *audit_named_new(size_t max)
{
    return audit_tab_new(max < 2 ? 2 : max, sizeof(audit_named_t));
}

static size_t audit_named_cap(const audit_tab_t *t)
{
    return audit_tab_max(t);
}

void audit_named_add(audit_tab_t *t, const char *reason, const char *file, unsigned long lineno,
                     const char *line, size_t len)
{
    int created = 0;
    audit_named_t *v = audit_tab_get(t, reason, strlen(reason), 0, NULL);
    if (v == NULL && audit_tab_count(t) + 1 < audit_named_cap(t))
        v = audit_tab_get(t, reason, strlen(reason), 1, &created);
    if (v == NULL) /* the last slot is kept for this */
        v = audit_tab_get(t, "other reasons", 13, 1, &created);
    if (v == NULL)
        return;
    if (created) {
        size_t n = len < AUDIT_NAMED_EXAMPLE_MAX ? len : AUDIT_NAMED_EXAMPLE_MAX;
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)line[i];
            v->example[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
        }
        v->example[n] = '\0';
        v->file = file;
        v->lineno = lineno;
    }
    v->count++;
}

unsigned long audit_named_total(const audit_tab_t *t)
{
    unsigned long n = 0;
    for (size_t i = 0; i < audit_tab_count(t); i++)
        n += ((const audit_named_t *)audit_tab_at(t, i, NULL, NULL))->count;
    return n;
}

static const audit_tab_t *audit__named_sort;

static int audit__by_count(const void *a, const void *b)
{
    const audit_named_t *x = audit_tab_at(audit__named_sort, *(const size_t *)a, NULL, NULL);
    const audit_named_t *y = audit_tab_at(audit__named_sort, *(const size_t *)b, NULL, NULL);
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

void audit_named_write(const audit_tab_t *t, FILE *out)
{
    size_t n = audit_tab_count(t);
    size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    if (idx == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    audit__named_sort = t;
    qsort(idx, n, sizeof(*idx), audit__by_count);
    for (size_t i = 0; i < n; i++) {
        const char *reason;
        const audit_named_t *v = audit_tab_at(t, idx[i], &reason, NULL);
        fprintf(out, "  %6lu  %s\n          e.g. %s:%lu: %s\n", v->count, reason,
                v->file != NULL ? v->file : "-", v->lineno, v->example);
    }
    free(idx);
}
