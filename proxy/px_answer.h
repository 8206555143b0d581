/* Answers airlock makes itself (DESIGN.md §5): 403/502/400/431/413 with JSON bodies. */
#ifndef PX_ANSWER_H
#define PX_ANSWER_H

#include <stddef.h>

#define PX_ANSWER_MAX (16 * 1024) /* a whole answer: status line, headers, JSON body */

/* A growable-up-to-cap text buffer. */
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

/* Builds a full HTTP/1.1 response with a JSON body into out (cap PX_ANSWER_MAX). Returns the
 * length, or 0 on overflow. close adds "Connection: close". */
size_t px_answer_build(char *out, size_t cap, int status, const char *json, size_t json_len,
                       int close);

/* The reason phrase for status (e.g. "Forbidden"). */
const char *px_answer_reason(int status);

#endif
