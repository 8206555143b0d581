#include "addons/addon_out.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void addon_out_put(addon_out_t *o, const char *s, size_t n)
{
    if (o->len > 0 && o->pos < o->len - 1) {
        size_t room = o->len - 1 - o->pos;
        size_t w = n < room ? n : room;
        memcpy(o->buf + o->pos, s, w);
        o->buf[o->pos + w] = '\0';
    }
    o->pos += n;
}

void addon_out_fmt(addon_out_t *o, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n > 0)
        addon_out_put(o, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void addon_out_esc(addon_out_t *o, addon_str_t s)
{
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char)s.base[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            addon_out_put(o, (const char *)&s.base[i], 1);
        else if (c == '\\')
            addon_out_put(o, "\\\\", 2);
        else
            addon_out_fmt(o, "\\x%02x", c);
    }
}
