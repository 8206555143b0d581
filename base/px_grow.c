#include "base/px_grow.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"

int px_grow(void *pptr, size_t *cap, size_t need, size_t elem, size_t first, size_t max)
{
    if (need <= *cap)
        return 0;
    if (need > max)
        return PX_ETOOBIG;
    /* no object may be larger than PTRDIFF_MAX bytes: a need past it fails here, before
     * realloc is asked for a size that reads as negative */
    if (elem == 0 || need > PTRDIFF_MAX / elem)
        return PX_ENOMEM;
    size_t n = *cap ? *cap : first ? first : 1;
    while (n < need)
        n = n > max / 2 ? max : n * 2;
    if (n > max)
        n = max; /* a first size above the cap */
    if (n > PTRDIFF_MAX / elem)
        n = PTRDIFF_MAX / elem; /* still >= need, checked above */
    /* pptr may point at a char * or a struct foo *: read and write it as bytes, not through a
     * void ** that would alias it. */
    void *old;
    memcpy(&old, pptr, sizeof(old));
    void *p = realloc(old, n * elem);
    if (p == NULL)
        return PX_ENOMEM;
    memcpy(pptr, &p, sizeof(p));
    *cap = n;
    return 0;
}

void px_buf_init(px_buf_t *b, size_t first, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->first = first;
    b->max = max;
}

int px_buf_reserve(px_buf_t *b, size_t more)
{
    if (more > SIZE_MAX - b->len)
        return PX_ETOOBIG;
    return px_grow(&b->data, &b->cap, b->len + more, 1, b->first, b->max);
}

int px_buf_append(px_buf_t *b, const void *s, size_t n)
{
    int rc = px_buf_reserve(b, n);
    if (rc != 0)
        return rc;
    if (n > 0)
        memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

void px_buf_free(px_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}
