#include "audit/audit_dns.h"

#include <math.h>
#include <string.h>

size_t audit_dns_parent(const char *name, size_t len)
{
    if (len > 0 && name[len - 1] == '.')
        len--;
    int dots = 0;
    for (size_t i = len; i > 0; i--) {
        if (name[i - 1] == '.' && ++dots == 2)
            return i;
    }
    return 0;
}

double audit_dns_entropy(const char *name, size_t len, size_t *n)
{
    if (len > 0 && name[len - 1] == '.')
        len--;
    size_t parent = audit_dns_parent(name, len);
    size_t end = parent > 0 ? parent - 1 : len;
    if (parent == 0) {
        const char *dot = memchr(name, '.', len);
        end = dot != NULL ? (size_t)(dot - name) : len;
    }
    unsigned long counts[256] = {0};
    size_t total = 0;
    for (size_t i = 0; i < end; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '.')
            continue;
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        counts[c]++;
        total++;
    }
    *n = total;
    if (total == 0)
        return 0.0;
    double h = 0.0;
    for (size_t c = 0; c < 256; c++) {
        if (counts[c] == 0)
            continue;
        double p = (double)counts[c] / (double)total;
        h -= p * log2(p);
    }
    return h;
}

int audit_dns_flags(const char *name, size_t len)
{
    int flags = 0;
    if (len >= AUDIT_DNS_LONG_NAME)
        flags |= AUDIT_DNS_FLAG_LONG;
    size_t label = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || name[i] == '.') {
            if (label >= AUDIT_DNS_LONG_LABEL)
                flags |= AUDIT_DNS_FLAG_LONG;
            label = 0;
        } else {
            label++;
        }
    }
    size_t n = 0;
    double h = audit_dns_entropy(name, len, &n);
    if (n >= AUDIT_DNS_ENTROPY_MIN && h >= AUDIT_DNS_ENTROPY_BITS)
        flags |= AUDIT_DNS_FLAG_ENTROPY;
    return flags;
}
