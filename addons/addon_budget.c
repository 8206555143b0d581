/* The counters of the egress budgets: a table that follows the policy snapshot in force, one
 * counter per budget identity (kind + host pattern), kept across reloads. A counter is
 * refcounted: the table holds one reference, each request that counts bytes for it another, so a
 * budget dropped by a reload stops counting for new requests while requests under way finish
 * with it.
 *
 * With more than one loop (`airlock run --workers N`) the connections of one conversation land on
 * any of them, and its counters must stay exact: every function here that reads or changes a
 * counter or a table holds one process-wide mutex. It is held for a few compares and additions,
 * never across a call that can block. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_budget.h"
#include "addons/addon_policy.h"
#include "base/px_err.h"

static pthread_mutex_t addon__budget_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct budget_ctr {
    int refs;
    char *key;     /* the identity (addon_budget_t.key) */
    uint64_t used; /* requests, or bytes */
    double tokens; /* rate: tokens left at at_ms */
    uint64_t at_ms;
} budget_ctr_t;

struct addon_budget_table {
    addon_policy_t *policy; /* the policy followed (a reference), NULL before the first sync */
    budget_ctr_t **ctr;     /* parallel to the policy's budgets */
    size_t n;
};

typedef struct budget_use {
    const addon_budget_t *b;
    budget_ctr_t *c;
} budget_use_t;

struct addon_budget_req {
    size_t n;
    budget_use_t v[]; /* the sent and received budgets the request counts for */
};

static void ctr_unref(budget_ctr_t *c)
{
    if (c == NULL || --c->refs > 0)
        return;
    free(c->key);
    free(c);
}

addon_budget_table_t *addon_budget_table_new(void)
{
    return calloc(1, sizeof(addon_budget_table_t));
}

addon_budget_table_t *addon_budget_table_at(addon_budget_table_t **at)
{
    pthread_mutex_lock(&addon__budget_mu);
    if (*at == NULL)
        *at = addon_budget_table_new();
    addon_budget_table_t *t = *at;
    pthread_mutex_unlock(&addon__budget_mu);
    return t;
}

void addon_budget_table_free(addon_budget_table_t *t)
{
    if (t == NULL)
        return;
    pthread_mutex_lock(&addon__budget_mu);
    for (size_t i = 0; i < t->n; i++)
        ctr_unref(t->ctr[i]);
    free(t->ctr);
    pthread_mutex_unlock(&addon__budget_mu);
    addon_policy_unref(t->policy);
    free(t);
}

static budget_ctr_t *ctr_new(const addon_budget_t *b, uint64_t now_ms)
{
    budget_ctr_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return NULL;
    c->key = strdup(b->key);
    if (c->key == NULL) {
        free(c);
        return NULL;
    }
    c->refs = 1;
    c->tokens = (double)b->limit;
    c->at_ms = now_ms;
    return c;
}

static int budget_sync(addon_budget_table_t *t, addon_policy_t *p, uint64_t now_ms)
{
    if (t->policy == p)
        return 0;
    size_t n;
    const addon_budget_t *v = addon_policy_budgets(p, &n);
    budget_ctr_t **ctr = n > 0 ? calloc(n, sizeof(*ctr)) : NULL;
    if (n > 0 && ctr == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < t->n && ctr[i] == NULL; k++) {
            if (strcmp(t->ctr[k]->key, v[i].key) == 0) {
                ctr[i] = t->ctr[k];
                ctr[i]->refs++;
            }
        }
        if (ctr[i] == NULL)
            ctr[i] = ctr_new(&v[i], now_ms);
        if (ctr[i] == NULL) {
            for (size_t k = 0; k < i; k++)
                ctr_unref(ctr[k]);
            free(ctr);
            return PX_ENOMEM;
        }
    }
    for (size_t k = 0; k < t->n; k++)
        ctr_unref(t->ctr[k]);
    free(t->ctr);
    addon_policy_unref(t->policy);
    t->ctr = ctr;
    t->n = n;
    t->policy = p != NULL ? addon_policy_ref(p) : NULL;
    return 0;
}

int addon_budget_table_sync(addon_budget_table_t *t, addon_policy_t *p, uint64_t now_ms)
{
    pthread_mutex_lock(&addon__budget_mu);
    int rc = budget_sync(t, p, now_ms);
    pthread_mutex_unlock(&addon__budget_mu);
    return rc;
}

uint64_t addon_budget_table_used(const addon_budget_table_t *t, const char *key)
{
    uint64_t used = 0;
    pthread_mutex_lock(&addon__budget_mu);
    for (size_t i = 0; i < t->n; i++) {
        if (strcmp(t->ctr[i]->key, key) == 0) {
            used = t->ctr[i]->used;
            break;
        }
    }
    pthread_mutex_unlock(&addon__budget_mu);
    return used;
}

/* Refills a rate budget's bucket to now. */
static void ctr_refill(budget_ctr_t *c, const addon_budget_t *b, uint64_t now_ms)
{
    if (now_ms > c->at_ms) {
        c->tokens += (double)(now_ms - c->at_ms) * (double)b->limit / (double)b->per_ms;
        c->at_ms = now_ms;
    }
    if (c->tokens > (double)b->limit)
        c->tokens = (double)b->limit;
}

/* 1 when budget b (counter c) refuses a request needing body_need bytes; fills *over. */
static int budget_refuses(const addon_budget_t *b, budget_ctr_t *c, uint64_t body_need,
                          uint64_t now_ms, addon_budget_over_t *over)
{
    int refuse = 0;
    over->resets_in_ms = -1;
    switch (b->kind) {
    case ADDON_BUDGET_REQUESTS:
        refuse = c->used >= b->limit;
        break;
    case ADDON_BUDGET_SENT:
        refuse = body_need > 0 && (c->used >= b->limit || body_need > b->limit - c->used);
        break;
    case ADDON_BUDGET_RECEIVED:
        refuse = c->used >= b->limit;
        break;
    case ADDON_BUDGET_RATE:
        ctr_refill(c, b, now_ms);
        refuse = c->tokens < 1.0;
        if (refuse) {
            double wait = (1.0 - c->tokens) * (double)b->per_ms / (double)b->limit;
            over->resets_in_ms = (int64_t)wait + ((double)(int64_t)wait < wait);
        }
        break;
    }
    over->b = b;
    over->used = b->kind == ADDON_BUDGET_RATE ? 0 : c->used;
    return refuse;
}

static int budget_begin(addon_budget_table_t *t, addon_policy_t *p, addon_str_t host,
                        uint64_t body_need, uint64_t now_ms, addon_budget_req_t **out,
                        addon_budget_over_t *over)
{
    *out = NULL;
    int rc = budget_sync(t, p, now_ms);
    if (rc != 0)
        return rc;
    size_t n;
    const addon_budget_t *v = addon_policy_budgets(p, &n);
    size_t match[ADDON_BUDGET_MATCH_MAX];
    size_t nmatch = 0, nbytes = 0;
    for (size_t i = 0; i < n && nmatch < ADDON_BUDGET_MATCH_MAX; i++) {
        if (!addon_budget_matches(&v[i], host))
            continue;
        if (budget_refuses(&v[i], t->ctr[i], body_need, now_ms, over))
            return 1;
        match[nmatch++] = i;
        nbytes += v[i].kind == ADDON_BUDGET_SENT || v[i].kind == ADDON_BUDGET_RECEIVED;
    }
    addon_budget_req_t *r = NULL;
    if (nbytes > 0) {
        r = malloc(sizeof(*r) + nbytes * sizeof(r->v[0]));
        if (r == NULL)
            return PX_ENOMEM;
        r->n = 0;
    }
    for (size_t k = 0; k < nmatch; k++) {
        const addon_budget_t *b = &v[match[k]];
        budget_ctr_t *c = t->ctr[match[k]];
        if (b->kind == ADDON_BUDGET_REQUESTS)
            c->used++;
        else if (b->kind == ADDON_BUDGET_RATE)
            c->tokens -= 1.0;
        else {
            c->refs++;
            r->v[r->n++] = (budget_use_t){b, c};
        }
    }
    *out = r;
    return 0;
}

int addon_budget_begin(addon_budget_table_t *t, addon_policy_t *p, addon_str_t host,
                       uint64_t body_need, uint64_t now_ms, addon_budget_req_t **out,
                       addon_budget_over_t *over)
{
    pthread_mutex_lock(&addon__budget_mu);
    int rc = budget_begin(t, p, host, body_need, now_ms, out, over);
    pthread_mutex_unlock(&addon__budget_mu);
    return rc;
}

static int budget_count(addon_budget_req_t *r, addon_budget_kind_t kind, uint64_t len,
                        uint64_t *fit, addon_budget_over_t *over)
{
    uint64_t go = len;
    int crossed = 0;
    for (size_t i = 0; i < r->n; i++) {
        const budget_use_t *u = &r->v[i];
        if (u->b->kind != kind)
            continue;
        uint64_t left = u->c->used >= u->b->limit ? 0 : u->b->limit - u->c->used;
        if (left < go) {
            go = left;
            crossed = 1;
            over->b = u->b;
            over->used = u->c->used;
            over->resets_in_ms = -1;
        }
    }
    for (size_t i = 0; i < r->n; i++) {
        if (r->v[i].b->kind == kind)
            r->v[i].c->used += go;
    }
    if (crossed) {
        over->used += go;
        *fit = go;
    }
    return crossed;
}

int addon_budget_count(addon_budget_req_t *r, addon_budget_kind_t kind, uint64_t len, uint64_t *fit,
                       addon_budget_over_t *over)
{
    if (r == NULL)
        return 0;
    pthread_mutex_lock(&addon__budget_mu);
    int rc = budget_count(r, kind, len, fit, over);
    pthread_mutex_unlock(&addon__budget_mu);
    return rc;
}

void addon_budget_end(addon_budget_req_t *r)
{
    if (r == NULL)
        return;
    pthread_mutex_lock(&addon__budget_mu);
    for (size_t i = 0; i < r->n; i++)
        ctr_unref(r->v[i].c);
    pthread_mutex_unlock(&addon__budget_mu);
    free(r);
}

size_t addon_budget_describe(const addon_budget_over_t *o, char *buf, size_t len)
{
    const addon_budget_t *b = o->b;
    char lim[48];
    addon_budget_limit_text(b, lim, sizeof(lim));
    if (b->kind == ADDON_BUDGET_RATE)
        return (size_t)snprintf(buf, len, "rate for %s, %s", b->host, lim);
    return (size_t)snprintf(buf, len, "%s for %s, %llu/%s", addon_budget_kind_name(b->kind),
                            b->host, (unsigned long long)o->used, lim);
}
