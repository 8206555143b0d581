#include "audit/audit_annot.h"

#include <string.h>

/* Splits s at the first sep: *head before it, s after it. Returns 0 when sep was found. */
static int an_cut(audit_str_t *s, const char *sep, audit_str_t *head)
{
    long at = audit_str_find(*s, sep);
    if (at < 0)
        return -1;
    *head = (audit_str_t){s->base, (size_t)at};
    *s = audit_str_skip(*s, (size_t)at + strlen(sep));
    return 0;
}

/* The text up to "; " (what the tail adds after a leak or budget) or the end. */
static audit_str_t an_upto_semi(audit_str_t s)
{
    long at = audit_str_find(s, "; ");
    return (audit_str_t){s.base, at < 0 ? s.len : (size_t)at};
}

void audit_tail_parse(audit_str_t t, audit_tail_t *out)
{
    memset(out, 0, sizeof(*out));
    audit_str_t *p = out->part;
    if (audit_str_starts(t, "leak: ")) {
        audit_str_t r = audit_str_skip(t, 6);
        if (an_cut(&r, " ", &p[0]) != 0 || an_cut(&r, ", ", &p[1]) != 0 ||
            an_cut(&r, ", in ", &p[2]) != 0)
            return;
        p[3] = an_upto_semi(r);
        out->kind = AUDIT_TAIL_LEAK;
    } else if (audit_str_starts(t, "budget: ")) {
        audit_str_t r = audit_str_skip(t, 8);
        if (an_cut(&r, " for ", &p[0]) != 0 || an_cut(&r, ", ", &p[1]) != 0)
            return;
        p[2] = an_upto_semi(r);
        out->kind = AUDIT_TAIL_BUDGET;
    }
}

static int an_key_ok(audit_str_t k)
{
    if (k.len == 0 || k.len > 32)
        return 0;
    for (size_t i = 0; i < k.len; i++) {
        char c = k.base[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return 0;
    }
    return 1;
}

int audit_annot_count(audit_str_t v, long long *n)
{
    unsigned long u;
    if ((v.len > 1 && v.base[0] == '0') || audit_str_digits(v, 999999999, &u) != 0)
        return 0;
    *n = (long long)u;
    return 1;
}

int audit_annot_is_count(audit_str_t key)
{
    return audit_str_eq(key, "masked") || audit_str_eq(key, "dropped");
}

size_t audit_annot_split(audit_str_t s, audit_annot_t *a, int *exact)
{
    size_t n = 0;
    *exact = 1;
    while (s.len > 0) {
        if (!audit_str_starts(s, " [")) {
            *exact = 0;
            break;
        }
        size_t depth = 0, close = 0;
        for (size_t i = 1; i < s.len && close == 0; i++) {
            if (s.base[i] == '[')
                depth++;
            else if (s.base[i] == ']' && --depth == 0)
                close = i;
        }
        if (close == 0) {
            *exact = 0;
            break;
        }
        audit_str_t in = {s.base + 2, close - 2};
        s = audit_str_skip(s, close + 1);
        audit_annot_t x;
        if (an_cut(&in, ": ", &x.key) != 0 || !an_key_ok(x.key)) {
            *exact = 0;
            continue;
        }
        x.value = in;
        long long v;
        int dup = 0;
        for (size_t k = 0; k < n; k++)
            dup |= a[k].key.len == x.key.len && memcmp(a[k].key.base, x.key.base, x.key.len) == 0;
        if (dup || n == AUDIT_ANNOT_MAX ||
            (audit_annot_is_count(x.key) && !audit_annot_count(x.value, &v))) {
            *exact = 0;
            continue;
        }
        a[n++] = x;
    }
    return n;
}
