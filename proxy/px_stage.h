/* The request pipeline of an exchange: named stages with one contract, run in the order of one
 * table (px_stage.c) by the exchange (px_xchg_run.c). Only the exchange (px_xchg*.c) and the
 * stages (px_stage_*.c) include this.
 *
 * The stages, in table order:
 *   precheck     a request the pre-checks refused is answered (after the secret guard's scan of
 *                it); an accepted one gets the view the addons read    px_stage_precheck.c
 *   leak         the secret guard: target, fields, then the body and trailers   px_stage_leak.c
 *   policy       the policy addons' heads: allowlist, GraphQL operations, tool domains, the
 *                provider-fetch check (each body filter asks for the body here) px_stage_policy.c
 *   aws          AWS re-signing (after the filters)                    px_stage_credentials.c
 *   ghapp        the GitHub App token (after the filters; may WAIT)    px_stage_ghapp.c
 *   masking      credential masking (after the filters)                px_stage_credentials.c
 *   budget       the egress budgets: the request at its head, the bytes sent and received
 *                                                                      px_stage_budget.c
 *   filters      the body is gathered (a body filter, or a credential addon that signs it,
 *                asked) and the body filters run on it                 px_stage_filters.c
 *   upstream     the request goes upstream (a gathered body as the credential addon made it)
 *                                                                      px_stage_upstream.c
 *   scrub        a response stage only: real values in the answer become surrogates again
 *                                                                      px_stage_scrub.c
 * Then the response: each stage's on_response_head/on_response_data in table order (the
 * received-bytes budget, the policy addons' and credentials' heads, then scrub), and the
 * exchange's one log line.
 *
 * The contract. on_head runs once the stages before it passed the head, and returns
 *   PX_STAGE_CONTINUE  the stage passed the request: the next stage runs;
 *   PX_STAGE_REFUSE    the stage answered the request (a refusal) or ended the exchange: the
 *                      pipeline stops there;
 *   PX_STAGE_WAIT      the stage waits for something (a token request, the whole body): it
 *                      calls px_stage_resume() later, from the loop, and its on_head runs again.
 * A stage marked PX_STAGE_AFTER_FILTERS puts a real credential in: while a body filter holds the
 * body (filter_cap set, the filters not passed yet) it is passed over, and it runs once the
 * filters passed the gathered body. This is why the budgets admit a filtered request before its
 * body is gathered (its bytes are counted as they come) and every other request after its
 * credentials: the cursor is always the first stage, in table order, that has not passed.
 * A stage never calls another stage: the exchange runs the table and keeps the cursor.
 *
 * The body: each request body piece goes through the stages' on_body in table order, then to
 * the exchange's sink (upstream, the gathering buffer, or nowhere). on_body returns CONTINUE
 * (hand the piece on as it is), or REFUSE (the stage took it: it hands on what it lets go with
 * px_stage_pass(), or it ended the exchange). on_body_end (trailers t) runs when the body ended:
 * CONTINUE, or REFUSE when the exchange ended. on_body_over: the gathered body went over its cap;
 * 1 with ans filled when the stage refuses it its own way (the stage that gathers it asks first).
 * The response, on the same contract: on_response_head sees the final head (not 1xx, not 101)
 * just before it goes to the client and may change it (its fields, and the body's framing: a
 * stage that changes the body's length turns PX_RESP_LENGTH into PX_RESP_CHUNKED, which the
 * client side carries as chunks on HTTP/1.1 and as DATA frames on HTTP/2), and returns
 * PX_STAGE_CONTINUE, or PX_STAGE_WAIT when it holds the head back (it sends it itself, with
 * px__x_resp_head(), before the body it lets go). on_response_data:
 * each piece of the body, in table order: CONTINUE hands it on as it is; REFUSE means the stage
 * took it (it cut the response, or it hands on what it lets go with px_stage_resp_pass()).
 * on_response_end: the body ended, *t the upstream's trailers (NULL: none), before the client
 * is told: a stage that holds bytes hands them on now with px_stage_resp_pass(), and may put
 * its own trailers in *t (it keeps them until its on_end); it returns 0, or a negative code
 * when the exchange failed (the client is not told the end). on_end: the exchange is released; the
 * stage lets go of its per-request state. */
#ifndef PX_STAGE_H
#define PX_STAGE_H

#include <stddef.h>

#include "addons/addon.h"
#include "http/px_msg.h"

typedef struct px_xchg px_xchg_t;
typedef struct px_resp px_resp_t;

enum { PX_STAGE_CONTINUE = 0, PX_STAGE_REFUSE = 1, PX_STAGE_WAIT = 2 };

#define PX_STAGE_AFTER_FILTERS 0x1 /* runs only once the body filters passed the body */

typedef struct px_stage {
    const char *name;
    unsigned flags;
    int (*on_head)(px_xchg_t *x);
    int (*on_body)(px_xchg_t *x, const char *data, size_t len);
    int (*on_body_end)(px_xchg_t *x, const px_fields_t *t);
    int (*on_body_over)(px_xchg_t *x, addon_answer_t *ans);
    int (*on_response_head)(px_xchg_t *x, px_resp_t *r);
    int (*on_response_data)(px_xchg_t *x, const char *data, size_t len);
    int (*on_response_end)(px_xchg_t *x, const px_fields_t **t);
    void (*on_end)(px_xchg_t *x);
} px_stage_t;

extern const px_stage_t px_stage_precheck, px_stage_leak, px_stage_policy, px_stage_aws,
    px_stage_ghapp, px_stage_masking, px_stage_budget, px_stage_filters, px_stage_upstream,
    px_stage_scrub;

/* The table, in order, and its length. */
extern const px_stage_t *const px_stage_table[];
extern const size_t px_stage_count;
const px_stage_t *const *px_stages(size_t *n); /* the same (for the tests) */

/* The runner (px_xchg_run.c: the exchange runs the table and keeps the cursor).
 * Runs the head stages from the cursor (the first one that has not passed). */
void px_stage_run(px_xchg_t *x);
/* A stage that returned PX_STAGE_WAIT goes on: its on_head runs again, then the rest. */
void px_stage_resume(px_xchg_t *x);
/* A request body piece through the body hooks, then to the sink. */
void px_stage_body(px_xchg_t *x, const char *data, size_t len);
/* Stage s lets go of a piece it held: it goes through the body hooks after s, then the sink. */
void px_stage_pass(px_xchg_t *x, const px_stage_t *s, const char *data, size_t len);
/* The body ended (trailers t, borrowed): 1 when a stage ended the exchange. */
int px_stage_body_end(px_xchg_t *x, const px_fields_t *t);
/* The gathered body went over its cap: 1 with ans filled when a stage refuses it its way. */
int px_stage_body_over(px_xchg_t *x, addon_answer_t *ans);
/* PX_STAGE_WAIT when a stage holds the head back (it sends it later with px__x_resp_head). */
int px_stage_response_head(px_xchg_t *x, px_resp_t *r);
/* 1 when a stage took the piece (it went on through px_stage_resp_pass(), or was cut). */
int px_stage_response_data(px_xchg_t *x, const char *data, size_t len);
/* Stage s lets go of response bytes: they go through the response hooks after s, then to the
 * client. */
void px_stage_resp_pass(px_xchg_t *x, const px_stage_t *s, const char *data, size_t len);
/* The stages' on_response_end in order, *t the trailers each may replace: 0, or the first
 * negative code (the exchange failed). */
int px_stage_response_end(px_xchg_t *x, const px_fields_t **t);
void px_stage_end(px_xchg_t *x);

#endif
