/* The request pipeline's table (px_stage.h); the exchange runs it (px_xchg_run.c). */
#include "proxy/px_stage.h"

/* The order, and why:
 * - precheck first: a request the pre-checks refused goes no further (the secret guard still
 *   scans it, so that a value in it is refused as a leak and never logged);
 * - leak before any addon: neither the policy nor a credential stage sees a request that
 *   carries a real secret, and no real value is put into one;
 * - policy before the credentials: only an allowed request gets a real credential;
 * - the credentials (AWS, then the GitHub App, then masking: one mechanism per request) wait for
 *   the body filters (PX_STAGE_AFTER_FILTERS): nothing real goes into a request a filter
 *   refuses;
 * - budget after the credentials (a request refused earlier is not counted), but before the
 *   body is gathered for a filter (its bytes are counted as they come in);
 * - filters gathers the body when a filter or a credential addon asked for it;
 * - upstream: what every earlier stage passed goes on;
 * - scrub, a response stage only, last: the body it sees is what the budgets counted, and what
 *   it lets go is what the client gets (a real value in the answer becomes its surrogate). */
const px_stage_t *const px_stage_table[] = {
    &px_stage_precheck, &px_stage_leak,   &px_stage_policy,  &px_stage_aws,      &px_stage_ghapp,
    &px_stage_masking,  &px_stage_budget, &px_stage_filters, &px_stage_upstream, &px_stage_scrub,
};

#define PX__NSTAGES (sizeof(px_stage_table) / sizeof(px_stage_table[0]))

const size_t px_stage_count = PX__NSTAGES;

_Static_assert(PX__NSTAGES <= 8 * sizeof(unsigned), "the passed stages fit x->stage_done");

const px_stage_t *const *px_stages(size_t *n)
{
    *n = PX__NSTAGES;
    return px_stage_table;
}
