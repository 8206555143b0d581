/* The decision webhook (`airlock run --decide-url URL`, docs/approvals.md): each new question of
 * the hold table (proxy/px_hold.h) is POSTed as a JSON summary (id, sandbox, method, host, path,
 * seconds left; never a header value or a body) through the upstream client, and the answer
 * `{"decision": "allow"|"deny", "scope": "once"|"conversation"}` decides it, by "webhook". A
 * time-out (PX_DECIDE_TIMEOUT_MS, never past the hold's deadline), an error, a non-2xx answer or
 * a malformed one denies the question and counts as a failure. After PX_DECIDE_BREAKER_FAILS
 * failures in a row the circuit breaker opens: no call for PX_DECIDE_COOLDOWN_MS (questions wait
 * for the control socket or time out), then one trial call; a success closes it, a failure
 * opens it again. Each change of the breaker is one stderr line. */
#ifndef PX_DECIDE_H
#define PX_DECIDE_H

#include "proxy/px_ctx.h"
#include "proxy/px_hold.h"

#define PX_DECIDE_TIMEOUT_MS 10000  /* one call, connect to last byte */
#define PX_DECIDE_BREAKER_FAILS 3   /* failures in a row that open the breaker */
#define PX_DECIDE_COOLDOWN_MS 30000 /* how long an open breaker calls nobody */
#define PX_DECIDE_INFLIGHT_MAX 64   /* calls under way at once; more questions are not sent */
#define PX_DECIDE_RESP_MAX 4096     /* an answer's body */
#define PX_DECIDE_URL_MAX 2048

typedef struct px_decide px_decide_t;
typedef struct px_upmgr px_upmgr_t;

/* The parts of an http:// or https:// URL: host (brackets removed), port, path (with query;
 * "/" when none). 0, or PX_ECONFIG with why. Pure. */
int px_decide_parse_url(const char *url, char *host, size_t hostcap, unsigned *port, int *tls,
                        char *path, size_t pathcap, const char **why);

/* The JSON summary of question q (what is POSTed), into buf: its length, or PX_ETOOBIG. Pure. */
int px_decide_body(const px_hold_info_t *q, uint64_t now, char *buf, size_t cap);

/* The answer's body: 0 with *allow and *conversation (its scope: PX_HOLD_SCOPE_ONCE,
 * _CONVERSATION or _PERSIST), or PX_EPARSE with why. Pure. */
int px_decide_parse_answer(const char *body, size_t len, int *allow, int *conversation,
                           const char **why);

/* Calls url for each new question of ctx->holds (set before), through up (borrowed). Also
 * writes each approval and denial to the conversation's network log. 0 with *out, or a
 * negative code (said on stderr). */
int px_decide_start(px_ctx_t *ctx, px_upmgr_t *up, const char *url, px_decide_t **out);

/* Aborts the calls under way (their questions wait on) and lets go of the table; frees d once
 * its timers closed. NULL is a no-op. */
void px_decide_stop(px_decide_t *d);

#endif
