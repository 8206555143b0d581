/* The credential stages (px_stage.h) that run one addon each: AWS re-signing (addon_aws) and
 * credential masking (addon_masking); the GitHub App stage, between them, is
 * px_stage_ghapp.c. One mechanism per request: the first that matches sets credentials_done.
 * They wait for the body filters (PX_STAGE_AFTER_FILTERS): no real credential goes into a
 * request a filter refuses. */
#include "addons/addon_aws.h"
#include "addons/addon_masking.h"
#include "proxy/px_xchg_int.h"

static int aws_head(px_xchg_t *x)
{
    return px__x_addon_head(x, addon_aws());
}

static int aws_response_head(px_xchg_t *x, px_resp_t *r)
{
    px__x_addon_response_head(x, addon_aws(), r->status);
    return PX_STAGE_CONTINUE;
}

static void aws_end(px_xchg_t *x)
{
    px__x_addon_end(x, addon_aws());
}

static int masking_head(px_xchg_t *x)
{
    return px__x_addon_head(x, addon_masking());
}

static int masking_response_head(px_xchg_t *x, px_resp_t *r)
{
    px__x_addon_response_head(x, addon_masking(), r->status);
    return PX_STAGE_CONTINUE;
}

static void masking_end(px_xchg_t *x)
{
    px__x_addon_end(x, addon_masking());
}

const px_stage_t px_stage_aws = {.name = "aws",
                                 .flags = PX_STAGE_AFTER_FILTERS,
                                 .on_head = aws_head,
                                 .on_response_head = aws_response_head,
                                 .on_end = aws_end};

const px_stage_t px_stage_masking = {.name = "masking",
                                     .flags = PX_STAGE_AFTER_FILTERS,
                                     .on_head = masking_head,
                                     .on_response_head = masking_response_head,
                                     .on_end = masking_end};
