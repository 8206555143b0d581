/* Answers airlock makes itself (docs/answers.md): 403/502/400/431/413 with JSON bodies. */
#ifndef PX_ANSWER_H
#define PX_ANSWER_H

#include <stddef.h>

#include "base/px_sbuf.h"

#define PX_ANSWER_MAX (16 * 1024) /* a whole answer: status line, headers, JSON body */

/* Builds a full HTTP/1.1 response with a JSON body into out (cap PX_ANSWER_MAX). Returns the
 * length, or 0 on overflow. close adds "Connection: close". */
size_t px_answer_build(char *out, size_t cap, int status, const char *json, size_t json_len,
                       int close);

/* The reason phrase for status (e.g. "Forbidden"). */
const char *px_answer_reason(int status);

#endif
