/* Answers airlock makes itself (docs/answers.md): 403/502/400/431/413 with JSON bodies. */
#ifndef PX_ANSWER_H
#define PX_ANSWER_H

#include <stddef.h>

#include "base/px_sbuf.h"

#define PX_ANSWER_MAX (16 * 1024) /* a whole answer: status line, headers, JSON body */

/* What ends every JSON body airlock sends (counted in its Content-Length): a newline, so that
 * an answer printed by curl in a terminal does not run into the next prompt or output. */
#define PX_ANSWER_EOL "\n"

/* Builds a full HTTP/1.1 response with a JSON body (json, then PX_ANSWER_EOL) into out (cap
 * PX_ANSWER_MAX). Returns the length, or 0 on overflow. close adds "Connection: close". */
size_t px_answer_build(char *out, size_t cap, int status, const char *json, size_t json_len,
                       int close);

/* The JSON body of a secret-guard refusal (docs/answers.md, 403 blocked_secret_leak) into b:
 * kind, the entry's name, the encoding, where it was found (with the header or trailer name
 * when field is not NULL: "where": NAME, at most 64 bytes of it), the method and the message.
 * Borrows every string. */
void px_answer_leak_json(px_sbuf_t *b, const char *kind, const char *name, const char *enc,
                         const char *where, const char *field, size_t field_len, const char *method,
                         const char *message);

/* The reason phrase for status (e.g. "Forbidden"). */
const char *px_answer_reason(int status);

#endif
