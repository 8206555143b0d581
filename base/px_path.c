#include "base/px_path.h"

#include <string.h>
#include <strings.h>

#include "base/px_pct.h"

unsigned px_path_changes(const char *d, size_t len)
{
    /* dropping a ";parameters" tail can leave an empty or a "." segment: every reading */
    if (memchr(d, ';', len) != NULL)
        return PX_PATH_ALL;
    unsigned c = 0;
    size_t seg = 0; /* where the current segment starts */
    for (size_t i = 0; i <= len; i++) {
        if (i < len && d[i] != '/')
            continue;
        if (i == seg && i < len && i > 0)
            c |= PX_PATH_MERGE; /* an empty segment between two '/' */
        if (i - seg == 1 && d[seg] == '.')
            c |= PX_PATH_DOTS;
        seg = i + 1;
    }
    return c;
}

size_t px_path_reading(const char *d, size_t len, unsigned how, char *out)
{
    size_t o = 0;
    size_t emitted = 0; /* segments written (a '/' goes before every one but the first) */
    size_t seg = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && d[i] != '/')
            continue;
        int last = i == len;
        size_t slen = i - seg;
        if (how & PX_PATH_PARAMS) {
            const char *semi = memchr(d + seg, ';', slen);
            if (semi != NULL)
                slen = (size_t)(semi - (d + seg));
        }
        int drop = 0;
        if ((how & PX_PATH_DOTS) && slen == 1 && d[seg] == '.') {
            if (last)
                slen = 0; /* "/a/." reads as "/a/" */
            else
                drop = 1;
        }
        /* empty segments between two '/' go; the leading one (the root) and a trailing one
         * (the final '/') stay */
        if ((how & PX_PATH_MERGE) && slen == 0 && emitted > 0 && !last)
            drop = 1;
        if (!drop) {
            if (emitted++ > 0)
                out[o++] = '/';
            memmove(out + o, d + seg, slen);
            o += slen;
        }
        seg = i + 1;
    }
    return o;
}

int px_path_any(const char *raw, size_t len, int (*pred)(const char *path, size_t len, void *ctx),
                void *ctx)
{
    const char *q = memchr(raw, '?', len);
    size_t rlen = q != NULL ? (size_t)(q - raw) : len;
    if (rlen > PX_PATH_ANY_MAX)
        return 1;
    char dec[PX_PATH_ANY_MAX];
    char reading[PX_PATH_ANY_MAX];
    size_t dlen = px_pct_unquote(raw, rlen, dec);
    unsigned changes = px_path_changes(dec, dlen);
    for (unsigned how = 0; how <= PX_PATH_ALL; how++) {
        if (!px_path_worth(changes, how))
            continue;
        int r;
        if (how == 0)
            r = pred(dec, dlen, ctx);
        else
            r = pred(reading, px_path_reading(dec, dlen, how, reading), ctx);
        if (r != 0)
            return r;
    }
    return 0;
}

int px_path_is_under(const char *path, size_t len, void *ctx)
{
    const char *base = ctx;
    size_t bl = strlen(base);
    if (len < bl || strncasecmp(path, base, bl) != 0)
        return 0;
    return len == bl || path[bl] == '/' || path[bl] == '.';
}

int px_path_under(const char *raw, size_t len, const char *base)
{
    return px_path_any(raw, len, px_path_is_under, (void *)base);
}
