#include "base/px_pct.h"

/* Hex digit values plus one (0: not a hex digit). */
static const signed char px__hex[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int px_pct_at(const char *s, size_t len, size_t i)
{
    const unsigned char *u = (const unsigned char *)s;
    if (s[i] != '%' || i + 2 >= len || !px__hex[u[i + 1]] || !px__hex[u[i + 2]])
        return -1;
    return ((px__hex[u[i + 1]] - 1) << 4) | (px__hex[u[i + 2]] - 1);
}

size_t px_pct_unquote(const char *src, size_t len, char *dst)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        int b = px_pct_at(src, len, i);
        if (b >= 0) {
            dst[o++] = (char)b;
            i += 2;
        } else {
            dst[o++] = src[i];
        }
    }
    return o;
}
