#include "base/px_sbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void px_sbuf_init(px_sbuf_t *b, char *mem, size_t cap)
{
    b->p = mem;
    b->len = 0;
    b->cap = cap;
    b->overflow = 0;
    if (cap > 0)
        mem[0] = '\0';
}

void px_sbuf_add(px_sbuf_t *b, const char *s, size_t len)
{
    if (b->overflow || b->cap - b->len <= len) {
        b->overflow = 1;
        return;
    }
    memcpy(b->p + b->len, s, len);
    b->len += len;
    b->p[b->len] = '\0';
}

void px_sbuf_adds(px_sbuf_t *b, const char *s)
{
    px_sbuf_add(b, s, strlen(s));
}

void px_sbuf_printf(px_sbuf_t *b, const char *fmt, ...)
{
    if (b->overflow)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= b->cap - b->len) {
        b->overflow = 1;
        return;
    }
    b->len += (size_t)n;
}

/* Decodes one UTF-8 code point at s (n bytes left); returns its length, 0 if invalid. */
static size_t px__utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        v = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        v = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        v = c & 0x07;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) ||
        (len == 4 && (v < 0x10000 || v > 0x10ffff)))
        return 0;
    *cp = v;
    return len;
}

void px_sbuf_json_str(px_sbuf_t *b, const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    px_sbuf_add(b, "\"", 1);
    size_t i = 0;
    while (i < len) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            size_t j = i + 1;
            while (j < len && u[j] >= 0x20 && u[j] < 0x7f && u[j] != '"' && u[j] != '\\')
                j++;
            px_sbuf_add(b, s + i, j - i);
            i = j;
            continue;
        }
        switch (c) {
        case '"':
            px_sbuf_add(b, "\\\"", 2);
            i++;
            continue;
        case '\\':
            px_sbuf_add(b, "\\\\", 2);
            i++;
            continue;
        case '\n':
            px_sbuf_add(b, "\\n", 2);
            i++;
            continue;
        case '\r':
            px_sbuf_add(b, "\\r", 2);
            i++;
            continue;
        case '\t':
            px_sbuf_add(b, "\\t", 2);
            i++;
            continue;
        default:
            break;
        }
        uint32_t cp;
        size_t n = px__utf8_next(u + i, len - i, &cp);
        if (n == 0) {
            cp = 0xfffd;
            n = 1;
        }
        if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            px_sbuf_printf(b, "\\u%04x\\u%04x", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
        } else {
            px_sbuf_printf(b, "\\u%04x", cp);
        }
        i += n;
    }
    px_sbuf_add(b, "\"", 1);
}
