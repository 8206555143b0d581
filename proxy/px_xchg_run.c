/* The runner of the request pipeline: the exchange runs the stages of px_stages() in order and
 * keeps the cursor (px_stage.h says the contract); a stage never calls another stage. */
#include "proxy/px_stage.h"
#include "proxy/px_xchg_int.h"

/* A body filter holds the body: the stages that put credentials in are passed over. */
static int px__filters_pending(const px_xchg_t *x)
{
    return x->view != NULL && x->view->filter_cap > 0 && !x->gath.filtered;
}

void px_stage_run(px_xchg_t *x)
{
    for (;;) {
        size_t i = 0;
        while (i < px_stage_count &&
               ((x->stage_done & (1u << i)) ||
                ((px_stage_table[i]->flags & PX_STAGE_AFTER_FILTERS) && px__filters_pending(x))))
            i++;
        if (i == px_stage_count)
            return;
        const px_stage_t *s = px_stage_table[i];
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
    for (size_t i = from; i < px_stage_count; i++)
        if (px_stage_table[i]->on_body != NULL &&
            px_stage_table[i]->on_body(x, data, len) != PX_STAGE_CONTINUE)
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
    while (i < px_stage_count && px_stage_table[i] != s)
        i++;
    px__body_from(x, i + 1, data, len);
}

int px_stage_body_end(px_xchg_t *x, const px_fields_t *t)
{
    for (size_t i = 0; i < px_stage_count; i++)
        if (px_stage_table[i]->on_body_end != NULL &&
            px_stage_table[i]->on_body_end(x, t) != PX_STAGE_CONTINUE)
            return 1;
    return 0;
}

int px_stage_body_over(px_xchg_t *x, addon_answer_t *ans)
{
    /* the stage that gathers the body (the cursor) asks first, then the others in order */
    const px_stage_t *cur = x->stage_cur >= 0 ? px_stage_table[x->stage_cur] : NULL;
    if (cur != NULL && cur->on_body_over != NULL && cur->on_body_over(x, ans))
        return 1;
    for (size_t i = 0; i < px_stage_count; i++)
        if (px_stage_table[i] != cur && px_stage_table[i]->on_body_over != NULL &&
            px_stage_table[i]->on_body_over(x, ans))
            return 1;
    return 0;
}

int px_stage_response_head(px_xchg_t *x, px_resp_t *r)
{
    for (size_t i = 0; i < px_stage_count; i++)
        if (px_stage_table[i]->on_response_head != NULL &&
            px_stage_table[i]->on_response_head(x, r) == PX_STAGE_WAIT)
            return PX_STAGE_WAIT; /* the stages after it see the head when it is sent */
    return PX_STAGE_CONTINUE;
}

static int px__resp_from(px_xchg_t *x, size_t from, const char *data, size_t len)
{
    for (size_t i = from; i < px_stage_count; i++)
        if (px_stage_table[i]->on_response_data != NULL &&
            px_stage_table[i]->on_response_data(x, data, len) != PX_STAGE_CONTINUE)
            return 1;
    return 0;
}

int px_stage_response_data(px_xchg_t *x, const char *data, size_t len)
{
    return px__resp_from(x, 0, data, len);
}

void px_stage_resp_pass(px_xchg_t *x, const px_stage_t *s, const char *data, size_t len)
{
    size_t i = 0;
    while (i < px_stage_count && px_stage_table[i] != s)
        i++;
    if (len > 0 && !px__resp_from(x, i + 1, data, len))
        px__x_resp_sink(x, data, len);
}

int px_stage_response_end(px_xchg_t *x, const px_fields_t **t)
{
    for (size_t i = 0; i < px_stage_count; i++) {
        int rc = px_stage_table[i]->on_response_end != NULL
                     ? px_stage_table[i]->on_response_end(x, t)
                     : 0;
        if (rc < 0 || x->finished)
            return rc < 0 ? rc : -1;
    }
    return 0;
}

void px_stage_end(px_xchg_t *x)
{
    for (size_t i = 0; i < px_stage_count; i++)
        if (px_stage_table[i]->on_end != NULL)
            px_stage_table[i]->on_end(x);
}
