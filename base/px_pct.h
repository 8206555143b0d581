/* Percent-decoding as servers and the policy read a path: once, leniently (Python's
 * unquote): "%XX" with two hex digits is one byte, anything else ('+' included) is copied. */
#ifndef PX_PCT_H
#define PX_PCT_H

#include <stddef.h>

/* The byte "%XX" at s[i] stands for (0-255), or -1 when s[i..] is not such an escape. */
int px_pct_at(const char *s, size_t len, size_t i);

/* Decodes src[0..len) into dst, which has room for len bytes (decoding never grows). Returns
 * the decoded length. Borrows both. */
size_t px_pct_unquote(const char *src, size_t len, char *dst);

#endif
