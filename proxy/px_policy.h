/* The proxy's view of the allowlist addon: one decision per request head. */
#ifndef PX_POLICY_H
#define PX_POLICY_H

#include "addons/addon.h"
#include "addons/addon_policy.h"

typedef struct px_verdict {
    int allowed;
    addon_policy_decision_t d;
    char message[512]; /* the 403 body's message when blocked */
} px_verdict_t;

/* Decides request r under snapshot p (borrowed) into *v. */
void px_policy_decide(const addon_policy_t *p, const addon_req_t *r, px_verdict_t *v);

/* Drops a snapshot reference; NULL is a no-op. */
void px_policy_unref(addon_policy_t *p);

#endif
