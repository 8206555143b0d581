/* A text buffer over caller memory with a hard cap: appends past the cap set `overflow` and
 * are dropped, so a caller checks once at the end. Always NUL-terminated when cap > 0. */
#ifndef PX_SBUF_H
#define PX_SBUF_H

#include <stddef.h>

typedef struct px_sbuf {
    char *p;
    size_t len;
    size_t cap;
    int overflow;
} px_sbuf_t;

void px_sbuf_init(px_sbuf_t *b, char *mem, size_t cap);
void px_sbuf_add(px_sbuf_t *b, const char *s, size_t len);
void px_sbuf_adds(px_sbuf_t *b, const char *s);
void px_sbuf_printf(px_sbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s as a JSON string literal (quotes included); non-ASCII as \uXXXX, invalid UTF-8
 * bytes as \ufffd, control characters escaped. */
void px_sbuf_json_str(px_sbuf_t *b, const char *s, size_t len);

#endif
