/* One way to grow a heap array: from a first size, doubling, never past a cap, with the size
 * multiplication checked. Every growable array and byte buffer uses it instead of its own
 * realloc arithmetic, so the caps and the overflow checks are in one place. */
#ifndef PX_GROW_H
#define PX_GROW_H

#include <stddef.h>
#include <stdint.h> /* SIZE_MAX: no cap */

/* Makes room for `need` elements of `elem` bytes (elem > 0) in the heap array *pptr (pptr is
 * the address of the array's pointer, of any element type; NULL with *cap 0 to start), of
 * capacity *cap elements. The new capacity is *cap (or `first` when *cap is 0) doubled until
 * need fits, and never more than `max` elements. Returns 0 (room was there or was made),
 * PX_ETOOBIG (need > max) or PX_ENOMEM (need * elem past PTRDIFF_MAX, or realloc failed); on
 * failure *pptr and *cap are unchanged. */
int px_grow(void *pptr, size_t *cap, size_t need, size_t elem, size_t first, size_t max);

/* A growable byte buffer with a hard cap: data[0..len) is what was appended; the buffer owns
 * data. px_buf_init it before use; px_buf_free releases it. */
typedef struct px_buf {
    char *data;
    size_t len;
    size_t cap;
    size_t first; /* bytes allocated the first time */
    size_t max;   /* bytes it may never pass */
} px_buf_t;

void px_buf_init(px_buf_t *b, size_t first, size_t max);

/* Room for `more` bytes after len (written at data + len, then added to len by the caller).
 * px_grow's returns; PX_ETOOBIG too when len + more overflows. */
int px_buf_reserve(px_buf_t *b, size_t more);

/* Appends s[0..n) (borrowed). px_buf_reserve's returns; nothing is appended on failure. */
int px_buf_append(px_buf_t *b, const void *s, size_t n);

/* Frees data and empties the buffer (first and max stay). */
void px_buf_free(px_buf_t *b);

#endif
