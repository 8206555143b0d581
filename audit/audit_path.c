#include "audit/audit_path.h"

#include <string.h>

static int audit__is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int audit__id_segment(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    size_t digits = 0, letters = 0, hexish = 0, token = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= '0' && c <= '9')
            digits++;
        else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            letters++;
        if (audit__is_hex(c) || c == '-')
            hexish++;
        if (audit__is_hex(c) || (c >= 'g' && c <= 'z') || (c >= 'G' && c <= 'Z') ||
            strchr("-_=.%~", c) != NULL)
            token++;
    }
    if (digits == n)
        return 1;
    if (n >= 8 && hexish == n && digits > 0)
        return 1;
    if (n >= 20 && token == n && digits > 0 && letters > 0)
        return 1;
    return 0;
}

size_t audit_path_pattern(const char *path, size_t len, char *out, size_t cap)
{
    const char *q = memchr(path, '?', len);
    size_t plen = q != NULL ? (size_t)(q - path) : len;
    size_t o = 0;
    size_t room = cap - 4; /* for "...\0" */
    int cut = 0;
    size_t i = 0;
    while (i < plen && !cut) {
        size_t j = i;
        while (j < plen && path[j] != '/')
            j++;
        const char *seg = path + i;
        size_t n = j - i;
        if (audit__id_segment(seg, n)) {
            seg = "*";
            n = 1;
        }
        if (o + n > room) {
            n = room - o;
            cut = 1;
        }
        memcpy(out + o, seg, n);
        o += n;
        if (j < plen && !cut) {
            if (o + 1 > room) {
                cut = 1;
            } else {
                out[o++] = '/';
            }
        }
        i = j + 1;
    }
    if (!cut && q != NULL) {
        if (o + 2 <= room) {
            out[o++] = '?';
            out[o++] = '*';
        } else {
            cut = 1;
        }
    }
    if (cut) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o] = '\0';
    return o;
}
