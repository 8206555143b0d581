#include "base/px_host.h"

int px_host_norm(char *out, size_t cap, const char *h, size_t len)
{
    if (len >= 2 && h[0] == '[' && h[len - 1] == ']') {
        h++;
        len -= 2;
    } else if (len > 1 && h[len - 1] == '.') {
        len--;
    }
    if (len >= cap) {
        if (cap > 0)
            out[0] = '\0';
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        char ch = h[i];
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + ('a' - 'A')) : ch;
    }
    out[len] = '\0';
    return (int)len;
}
