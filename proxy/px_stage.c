/* The request pipeline's table and the runner that keeps its cursor (px_stage.h). */
#include "proxy/px_stage.h"

#include "proxy/px_xchg_int.h"

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
 * - upstream last: what every earlier stage passed goes on. */
static const px_stage_t *const px__stages[] = {
    &px_stage_precheck, &px_stage_leak,   &px_stage_policy,  &px_stage_aws,      &px_stage_ghapp,
    &px_stage_masking,  &px_stage_budget, &px_stage_filters, &px_stage_upstream,
};

#define PX__NSTAGES (sizeof(px__stages) / sizeof(px__stages[0]))

_Static_assert(PX__NSTAGES <= 8 * sizeof(unsigned), "the passed stages fit x->stage_done");

const px_stage_t *const *px_stages(size_t *n)
{
    *n = PX__NSTAGES;
    return px__stages;
}

/* A body filter holds the body: the stages that put credentials in are passed over. */
static int px__filters_pending(const px_xchg_t *x)
{
    return x->view != NULL && x->view->filter_cap > 0 && !x->gath.filtered;
}

void px_stage_run(px_xchg_t *x)
{
    for (;;) {
        size_t i = 0;
        while (i < PX__NSTAGES &&
               ((x->stage_done & (1u << i)) ||
                ((px__stages[i]->flags & PX_STAGE_AFTER_FILTERS) && px__filters_pending(x))))
            i++;
        if (i == PX__NSTAGES)
            return;
        const px_stage_t *s = px__stages[i];
        x->stage_cur = (int)i;
        int rc = s->on_head != NULL ? s->on_head(x) : PX_STAGE_CONTINUE;
        if (rc != PX_STAGE_CONTINUE)
            return; /* REFUSE: the pipeline stops; WAIT: px_stage_resume() comes back here */
        x->stage_done |= 1u << i;
    }
}

void px_stage_resume(px_xchg_t *x)
{
    if (!x->finished)
        px_stage_run(x);
}

static void px__body_from(px_xchg_t *x, size_t from, const char *data, size_t len)
{
    if (x->finished || len == 0)
        return;
    x->expect = 0;
    for (size_t i = from; i < PX__NSTAGES; i++)
        if (px__stages[i]->on_body != NULL &&
            px__stages[i]->on_body(x, data, len) != PX_STAGE_CONTINUE)
            return;
    px__x_sink(x, data, len);
}

void px_stage_body(px_xchg_t *x, const char *data, size_t len)
{
    px__body_from(x, 0, data, len);
}

void px_stage_pass(px_xchg_t *x, const px_stage_t *s, const char *data, size_t len)
{
    size_t i = 0;
    while (i < PX__NSTAGES && px__stages[i] != s)
        i++;
    px__body_from(x, i + 1, data, len);
}

int px_stage_body_end(px_xchg_t *x, const px_fields_t *t)
{
    for (size_t i = 0; i < PX__NSTAGES; i++)
        if (px__stages[i]->on_body_end != NULL &&
            px__stages[i]->on_body_end(x, t) != PX_STAGE_CONTINUE)
            return 1;
    return 0;
}

int px_stage_body_over(px_xchg_t *x, addon_answer_t *ans)
{
    /* the stage that gathers the body (the cursor) asks first, then the others in order */
    const px_stage_t *cur = x->stage_cur >= 0 ? px__stages[x->stage_cur] : NULL;
    if (cur != NULL && cur->on_body_over != NULL && cur->on_body_over(x, ans))
        return 1;
    for (size_t i = 0; i < PX__NSTAGES; i++)
        if (px__stages[i] != cur && px__stages[i]->on_body_over != NULL &&
            px__stages[i]->on_body_over(x, ans))
            return 1;
    return 0;
}

void px_stage_response_head(px_xchg_t *x, int status)
{
    for (size_t i = 0; i < PX__NSTAGES; i++)
        if (px__stages[i]->on_response_head != NULL)
            px__stages[i]->on_response_head(x, status);
}

int px_stage_response_data(px_xchg_t *x, const char *data, size_t len)
{
    for (size_t i = 0; i < PX__NSTAGES; i++)
        if (px__stages[i]->on_response_data != NULL &&
            px__stages[i]->on_response_data(x, data, len) != PX_STAGE_CONTINUE)
            return 1;
    return 0;
}

void px_stage_end(px_xchg_t *x)
{
    for (size_t i = 0; i < PX__NSTAGES; i++)
        if (px__stages[i]->on_end != NULL)
            px__stages[i]->on_end(x);
}
