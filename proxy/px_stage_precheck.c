/* The pre-check stage: the first of the pipeline (px_stage.h). A request the pre-checks
 * (px_precheck.c) refused is answered here, once the secret guard scanned it (a value in it is
 * refused as a leak, never shown in the refusal's log line); an accepted one gets the view the
 * later stages and the addons read. */
#include "proxy/px_xchg_int.h"

static int on_head(px_xchg_t *x)
{
    if (x->pre.verdict != PX_PRE_OK) {
        if (!px__x_leak_pre(x))
            px__x_refuse(x);
        return PX_STAGE_REFUSE;
    }
    if (px__x_view(x) != 0) {
        px__x_finish(x, -1);
        return PX_STAGE_REFUSE;
    }
    return PX_STAGE_CONTINUE;
}

const px_stage_t px_stage_precheck = {.name = "precheck", .on_head = on_head};
