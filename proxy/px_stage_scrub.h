/* What the scrub stage (px_stage_scrub.c) offers beyond the stage contract: the response's
 * trailer fields, scrubbed. The stage contract's on_response_end does not see the trailers, so
 * the exchange asks for them where it ends the response (px_xchg.c, on_up_end), before
 * px_stage_response_end (whose log annotation then counts them too). */
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

/* px_scrub_fields for exchange x's response trailers, counted in its log line: what the
 * exchange hands the client side instead of t when *out is set. */
int px_stage_scrub_trailers(px_xchg_t *x, const px_fields_t *t, px_fields_t **out);

#endif
