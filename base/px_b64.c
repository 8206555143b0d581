#include "base/px_b64.h"

int px_b64_value(unsigned char c, int url)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == (url ? '-' : '+'))
        return 62;
    if (c == (url ? '_' : '/'))
        return 63;
    return -1;
}

long px_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap)
{
    if (len == 0 || len % 4 != 0 || len / 4 * 3 > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        int pad = 0;
        for (size_t k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)s[i + k];
            if (c == '=' && i + 4 == len && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad > 0 || (v[k] = px_b64_value(c, 0)) < 0)
                return -1; /* data after '=', or outside the alphabet */
        }
        unsigned long q = ((unsigned long)v[0] << 18) | ((unsigned long)v[1] << 12) |
                          ((unsigned long)v[2] << 6) | (unsigned long)v[3];
        out[o++] = (unsigned char)(q >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(q >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)q;
    }
    return (long)o;
}

const char px_b64_std[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char px_b64_url[65] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

long px_b64_encode_as(const unsigned char *s, size_t len, int flags, char *out, size_t cap)
{
    const char *abc = flags & PX_B64_URL ? px_b64_url : px_b64_std;
    int pad = !(flags & PX_B64_NOPAD);
    size_t need = pad ? (len + 2) / 3 * 4 : (len * 4 + 2) / 3;
    if (need > cap)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        unsigned long q = (unsigned long)s[i] << 16;
        if (i + 1 < len)
            q |= (unsigned long)s[i + 1] << 8;
        if (i + 2 < len)
            q |= s[i + 2];
        out[o++] = abc[(q >> 18) & 63];
        out[o++] = abc[(q >> 12) & 63];
        if (i + 1 < len || pad)
            out[o++] = i + 1 < len ? abc[(q >> 6) & 63] : '=';
        if (i + 2 < len || pad)
            out[o++] = i + 2 < len ? abc[q & 63] : '=';
    }
    return (long)o;
}

long px_b64_encode(const unsigned char *s, size_t len, char *out, size_t cap)
{
    return px_b64_encode_as(s, len, 0, out, cap);
}
