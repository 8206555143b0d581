/* What the scrub stage (px_stage_scrub.c) offers beyond the stage contract: the function that
 * scrubs a list of fields (the stage's on_response_end uses it on the response's trailers),
 * here so that it is unit-tested on its own. */
#ifndef PX_STAGE_SCRUB_H
#define PX_STAGE_SCRUB_H

#include <stdint.h>

#include "addons/addon_scrub.h"
#include "http/px_msg.h"

typedef struct px_xchg px_xchg_t;

/* t (borrowed; NULL: none) with every real value in a field value replaced (names are kept):
 * 0 with *out NULL when nothing changed (send t), or with *out a new copy (the caller frees
 * it) in which a field that no longer fits the trailer caps is left out (its real value never
 * goes); PX_ENOMEM. counts (one per item of sm; may be NULL) is added to. sm NULL: 0. */
int px_scrub_fields(const addon_scrub_t *sm, const px_fields_t *t, px_fields_t **out,
                    uint64_t *counts);

#endif
