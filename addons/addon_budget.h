/* Egress budgets (docs/budgets.md): limits the allowlist sets on what one conversation (the
 * airlock process) may move through allowed hosts: requests, request body bytes sent, response
 * body bytes received, and a request rate (a token bucket), for every host ("all") or for the
 * hosts a pattern matches.
 *
 * The limits live in the policy snapshot (addon_policy_budget.c parses them); the counters live
 * in a table outside it (addon_budget.c), kept by budget identity (kind + host pattern), so that
 * a SIGHUP keeps them: a budget still named keeps its count, a removed one stops counting, a new
 * one starts at 0. Everything here runs on the loop thread. */
#ifndef ADDON_BUDGET_H
#define ADDON_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"

/* Hard caps. */
#define ADDON_BUDGETS_MAX 64 /* items in a `budgets:` list (each sets up to 4 limits) */
#define ADDON_BUDGET_MATCH_MAX (ADDON_BUDGETS_MAX * 4) /* limits one request can count for */
#define ADDON_BUDGET_DESC_MAX 400                      /* "requests for *.example.com, 100/100" */

struct addon_policy;
struct addon__policy_entry;

typedef enum addon_budget_kind {
    ADDON_BUDGET_REQUESTS = 0, /* requests admitted */
    ADDON_BUDGET_SENT,         /* request body bytes handed upstream (framing removed) */
    ADDON_BUDGET_RECEIVED,     /* response body bytes relayed to the client (framing removed) */
    ADDON_BUDGET_RATE,         /* requests per period: a token bucket of `limit` tokens */
} addon_budget_kind_t;

/* One limit of the policy (immutable, part of the snapshot). */
typedef struct addon_budget {
    addon_budget_kind_t kind;
    struct addon__policy_entry *pattern; /* NULL: every host ("all") */
    char *host;      /* "all" or the pattern as normalised (".github.com", "*.example.com") */
    char *key;       /* the identity counters are kept by: "sent *.example.com" */
    char *src;       /* where it was written: "file:line" */
    uint64_t limit;  /* requests, bytes, or (rate) tokens = the burst */
    uint64_t per_ms; /* rate: the period the limit refills over (1000, 60000, 3600000) */
} addon_budget_t;

/* The budgets of policy p (borrowed for p's life) and their count in *n. */
const addon_budget_t *addon_policy_budgets(const struct addon_policy *p, size_t *n);

/* 1 when budget b counts requests to host (borrowed; any case, one trailing dot allowed). */
int addon_budget_matches(const addon_budget_t *b, addon_str_t host);

/* "requests", "sent", "received" or "rate" (static). */
const char *addon_budget_kind_name(addon_budget_kind_t kind);

/* Writes the limit as written back: "100", "10485760" bytes, "60/min". snprintf-style. */
size_t addon_budget_limit_text(const addon_budget_t *b, char *buf, size_t len);

/* Parses a size ("1048576", "512KB", "10 MiB", "1GB"; KB = 1000, KiB = 1024) from s[0..len).
 * 0 and *out, or PX_ECONFIG. */
int addon_budget_parse_size(const char *s, size_t len, uint64_t *out);

/* Parses a rate ("60/min", "5/s", "1000/hour") from s[0..len): the count in *n and the period in
 * *per_ms. 0, or PX_ECONFIG. */
int addon_budget_parse_rate(const char *s, size_t len, uint64_t *n, uint64_t *per_ms);

/* ---- the counters (addon_budget.c) ----------------------------------------------------------- */

typedef struct addon_budget_table addon_budget_table_t;
typedef struct addon_budget_req addon_budget_req_t;

/* Why a request was refused or an exchange stopped. */
typedef struct addon_budget_over {
    const addon_budget_t *b; /* the budget (borrowed from the request's policy) */
    uint64_t used;           /* its count at that moment (rate: 0) */
    int64_t resets_in_ms;    /* rate: until the next token; totals: -1 (never) */
} addon_budget_over_t;

/* A new, empty table (the conversation's counters), or NULL when out of memory. */
addon_budget_table_t *addon_budget_table_new(void);

/* The table *at, made first when *at is NULL (one table however many loops ask at once), or
 * NULL when out of memory. */
addon_budget_table_t *addon_budget_table_at(addon_budget_table_t **at);

/* Frees the table; requests still holding counters keep them until addon_budget_end. */
void addon_budget_table_free(addon_budget_table_t *t);

/* Makes t follow policy p (borrowed; t keeps a reference): counters of budgets p names are kept
 * (matched by identity), the others dropped, new ones start at 0 (a rate's bucket full). A
 * no-op when t follows p already. 0 or PX_ENOMEM (t is then unchanged). */
int addon_budget_table_sync(addon_budget_table_t *t, struct addon_policy *p, uint64_t now_ms);

/* The count of budget key (e.g. "requests all") now, for tests and reports; 0 when unknown. */
uint64_t addon_budget_table_used(const addon_budget_table_t *t, const char *key);

/* Admits one request to host under policy p at now_ms, which will send body_need bytes at least
 * (its declared length; 1 for a body of unknown length; 0 without a body). Every budget that
 * matches host is checked first, then all are counted, so a refused request counts for none.
 * Returns 0 with *out the request's counters (NULL when no budget matches host; free with
 * addon_budget_end), 1 when refused (*over says by which budget), or PX_ENOMEM. */
int addon_budget_begin(addon_budget_table_t *t, struct addon_policy *p, addon_str_t host,
                       uint64_t body_need, uint64_t now_ms, addon_budget_req_t **out,
                       addon_budget_over_t *over);

/* Counts len bytes of request body (kind ADDON_BUDGET_SENT) or response body (RECEIVED). When
 * they would cross a budget, counts only what fits: returns 1 with *fit (how many of the len
 * bytes may still go) and *over; else 0 (all len counted). r may be NULL (returns 0). */
int addon_budget_count(addon_budget_req_t *r, addon_budget_kind_t kind, uint64_t len, uint64_t *fit,
                       addon_budget_over_t *over);

/* Releases the request's counters; NULL is a no-op. */
void addon_budget_end(addon_budget_req_t *r);

/* Writes "requests for *.example.com, 100/100" (rate: "rate for all, 60/min") for the log
 * line's tail. snprintf-style. */
size_t addon_budget_describe(const addon_budget_over_t *o, char *buf, size_t len);

#endif
