/* The hold table (px_hold.h). Everything here is bounded by PX_HOLD_PROCESS_MAX waiters, so
 * the lists are plain lists walked whole. */
#include "proxy/px_hold.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_glob.h"
#include "base/px_err.h"
#include "proxy/px_log.h"

#define PX__HOLD_TICK_MS 100 /* how often pending questions are looked at for their deadline */

struct px_hold_q {
    px_hold_q_t *next;
    uint64_t id;
    const void *scope;
    char scope_name[64];
    char method[24];
    char *host, *path;
    uint64_t created_ms, deadline_ms;
    px_hold_wait_t *waiters;
    size_t nwaiters, bytes;
};

typedef struct px__hold_rule {
    const void *scope;
    char methods[128]; /* "GET" or "GET,POST" */
    char *host, *path;
    int glob;            /* path is a pattern (--path): matched with or without the query */
    unsigned draft;      /* persist: its ID in the drafts file (px_hold_forget); 0 conversation */
    char scope_name[64]; /* the sandbox's: a drafts file is named by it (px_hold_forget) */
} px__hold_rule_t;

struct px_hold {
    px_hold_q_t *qs; /* oldest first */
    px_hold_wait_t *waiters;
    size_t nwaiters, bytes, nqs;
    uint64_t next_id;
    px__hold_rule_t rules[PX_HOLD_RULES_MAX];
    size_t nrules, rule_next;
    px_hold_observer_cb observer;
    void *observer_arg;
    px_hold_observer_cb decider; /* the webhook (px_decide.h): told the same events */
    void *decider_arg;
    px_hold_audit_cb audit;
    void *audit_arg;
    px_hold_namer_cb namer;
    void *namer_arg;
    uv_timer_t timer;
    int started;
};

px_hold_t *px_hold_new(void)
{
    px_hold_t *t = calloc(1, sizeof(*t));
    if (t != NULL)
        t->next_id = 1;
    return t;
}

static void px__q_free(px_hold_q_t *q)
{
    free(q->host);
    free(q->path);
    free(q);
}

void px_hold_free(px_hold_t *t)
{
    if (t == NULL)
        return;
    while (t->qs != NULL) {
        px_hold_q_t *q = t->qs;
        t->qs = q->next;
        px__q_free(q);
    }
    for (size_t i = 0; i < t->nrules; i++) {
        free(t->rules[i].host);
        free(t->rules[i].path);
    }
    free(t);
}

static void on_timer_closed(uv_handle_t *h)
{
    px_hold_free(h->data);
}

static void on_hold_tick(uv_timer_t *tm)
{
    px_hold_t *t = tm->data;
    px_hold_expire(t, uv_now(tm->loop));
    if (t->qs == NULL)
        uv_timer_stop(tm);
}

int px_hold_start(px_hold_t *t, uv_loop_t *uv)
{
    int rc = uv_timer_init(uv, &t->timer);
    if (rc != 0)
        return rc;
    t->timer.data = t;
    uv_unref((uv_handle_t *)&t->timer); /* a pending question never keeps the loop alive */
    t->started = 1;
    return 0;
}

void px_hold_close(px_hold_t *t)
{
    if (t == NULL)
        return;
    if (!t->started) {
        px_hold_free(t);
        return;
    }
    uv_timer_stop(&t->timer);
    uv_close((uv_handle_t *)&t->timer, on_timer_closed);
}

uint64_t px_hold_now(const px_hold_t *t)
{
    return t->started ? uv_now(t->timer.loop) : 0;
}

void px_hold_set_observer(px_hold_t *t, px_hold_observer_cb cb, void *arg)
{
    t->observer = cb;
    t->observer_arg = arg;
}

void px_hold_set_decider(px_hold_t *t, px_hold_observer_cb cb, void *arg)
{
    t->decider = cb;
    t->decider_arg = arg;
}

void px_hold_set_namer(px_hold_t *t, px_hold_namer_cb cb, void *arg)
{
    t->namer = cb;
    t->namer_arg = arg;
}

void px_hold_set_audit(px_hold_t *t, px_hold_audit_cb cb, void *arg)
{
    t->audit = cb;
    t->audit_arg = arg;
}

static void px__info(const px_hold_q_t *q, px_hold_info_t *i)
{
    i->id = q->id;
    i->scope = q->scope;
    i->scope_name = q->scope_name;
    i->method = q->method;
    i->host = q->host;
    i->path = q->path;
    i->created_ms = q->created_ms;
    i->deadline_ms = q->deadline_ms;
    i->waiters = q->nwaiters;
    i->bytes = q->bytes;
}

static void px__observe(px_hold_t *t, const px_hold_q_t *q, px_hold_outcome_t o, const char *by)
{
    if (t->observer == NULL && t->decider == NULL)
        return;
    px_hold_info_t i;
    px__info(q, &i);
    if (t->observer != NULL)
        t->observer(t->observer_arg, &i, o, by);
    if (t->decider != NULL)
        t->decider(t->decider_arg, &i, o, by);
}

/* A copy of s cut at PX_HOLD_FIELD_MAX, or NULL. */
static char *px__dup(const char *s)
{
    size_t n = strnlen(s, PX_HOLD_FIELD_MAX);
    char *d = malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static int px__same(const char *a, const char *b)
{
    return strncmp(a, b, PX_HOLD_FIELD_MAX) == 0;
}

/* The bound w would cross in scope, or 0. */
static int px__over(const px_hold_t *t, const void *scope, size_t bytes)
{
    size_t n = 0, b = 0;
    for (const px_hold_wait_t *w = t->waiters; w != NULL; w = w->next) {
        if (w->q != NULL && w->q->scope == scope) {
            n++;
            b += w->bytes;
        }
    }
    if (n + 1 > PX_HOLD_SCOPE_MAX)
        return PX_HOLD_OVER_SCOPE_COUNT;
    if (b + bytes > PX_HOLD_SCOPE_BYTES_MAX)
        return PX_HOLD_OVER_SCOPE_BYTES;
    if (t->nwaiters + 1 > PX_HOLD_PROCESS_MAX)
        return PX_HOLD_OVER_PROCESS_COUNT;
    if (t->bytes + bytes > PX_HOLD_PROCESS_BYTES_MAX)
        return PX_HOLD_OVER_PROCESS_BYTES;
    return 0;
}

static px_hold_q_t *px__q_new(px_hold_t *t, const void *scope, const char *scope_name,
                              const char *method, const char *host, const char *path,
                              uint64_t hold_ms, uint64_t now)
{
    px_hold_q_t *q = calloc(1, sizeof(*q));
    if (q == NULL)
        return NULL;
    q->host = px__dup(host);
    q->path = px__dup(path);
    if (q->host == NULL || q->path == NULL) {
        px__q_free(q);
        return NULL;
    }
    q->id = t->next_id++;
    q->scope = scope;
    if (scope_name == NULL && t->namer != NULL)
        scope_name = t->namer(t->namer_arg, scope);
    snprintf(q->scope_name, sizeof(q->scope_name), "%s", scope_name != NULL ? scope_name : "-");
    snprintf(q->method, sizeof(q->method), "%s", method);
    q->created_ms = now;
    q->deadline_ms = now + hold_ms;
    px_hold_q_t **p = &t->qs;
    while (*p != NULL)
        p = &(*p)->next;
    *p = q;
    t->nqs++;
    return q;
}

int px_hold_add(px_hold_t *t, const void *scope, const char *scope_name, const char *method,
                const char *host, const char *path, uint64_t hold_ms, uint64_t now,
                px_hold_wait_t *w)
{
    int over = px__over(t, scope, w->bytes);
    if (over != 0)
        return over;
    px_hold_q_t *q = t->qs;
    while (q != NULL && !(q->scope == scope && px__same(q->method, method) &&
                          px__same(q->host, host) && px__same(q->path, path)))
        q = q->next;
    int fresh = q == NULL;
    if (fresh && (q = px__q_new(t, scope, scope_name, method, host, path, hold_ms, now)) == NULL)
        return PX_ENOMEM;
    w->q = q;
    w->id = q->id;
    w->outcome = PX_HOLD_PENDING;
    w->qnext = q->waiters;
    q->waiters = w;
    q->nwaiters++;
    q->bytes += w->bytes;
    w->prev = NULL;
    w->next = t->waiters;
    if (t->waiters != NULL)
        t->waiters->prev = w;
    t->waiters = w;
    t->nwaiters++;
    t->bytes += w->bytes;
    if (fresh) {
        px__observe(t, q, PX_HOLD_PENDING, NULL);
        if (t->started && !uv_is_active((uv_handle_t *)&t->timer))
            uv_timer_start(&t->timer, on_hold_tick, PX__HOLD_TICK_MS, PX__HOLD_TICK_MS);
    }
    return 0;
}

/* Takes q out of the pending list (not freed). */
static void px__q_unlink(px_hold_t *t, px_hold_q_t *q)
{
    for (px_hold_q_t **p = &t->qs; *p != NULL; p = &(*p)->next) {
        if (*p == q) {
            *p = q->next;
            t->nqs--;
            return;
        }
    }
}

static void px__rule_add(px_hold_t *t, const px_hold_q_t *q, const px_hold_grant_t *g)
{
    px__hold_rule_t *r = &t->rules[t->rule_next];
    char *host = px__dup(q->host), *path = px__dup(g->path != NULL ? g->path : q->path);
    if (host == NULL || path == NULL) {
        free(host);
        free(path);
        return;
    }
    if (t->nrules == PX_HOLD_RULES_MAX) { /* full: the oldest goes */
        free(r->host);
        free(r->path);
    } else {
        t->nrules++;
    }
    r->scope = q->scope;
    snprintf(r->methods, sizeof(r->methods), "%s", g->methods != NULL ? g->methods : q->method);
    r->host = host;
    r->path = path;
    r->glob = g->path != NULL;
    r->draft = g->draft;
    snprintf(r->scope_name, sizeof(r->scope_name), "%s", q->scope_name);
    t->rule_next = (t->rule_next + 1) % PX_HOLD_RULES_MAX;
}

/* Answers q (taken out of the list and freed): each waiter hears outcome. */
static int px__answer(px_hold_t *t, px_hold_q_t *q, px_hold_outcome_t o, const px_hold_grant_t *g,
                      const char *by)
{
    int conv = o == PX_HOLD_APPROVED ? g->scope : 0;
    px__q_unlink(t, q);
    if (conv != PX_HOLD_SCOPE_ONCE)
        px__rule_add(t, q, g);
    px__observe(t, q, o, by);
    if (t->audit != NULL && o != PX_HOLD_TIMEOUT) {
        px_hold_info_t i;
        px__info(q, &i);
        t->audit(t->audit_arg, &i, o, by, conv);
    }
    int n = 0;
    px_hold_wait_t *w = q->waiters;
    q->waiters = NULL;
    while (w != NULL) {
        px_hold_wait_t *next = w->qnext;
        w->qnext = NULL;
        w->q = NULL;
        w->outcome = o;
        w->rule_made = conv;
        snprintf(w->by, sizeof(w->by), "%s", by != NULL ? by : "-");
        t->bytes -= w->bytes; /* a decided request no longer counts against the bounds */
        w->bytes = 0;
        n++;
        if (w->cb != NULL)
            w->cb(w);
        w = next;
    }
    px__q_free(q);
    return n;
}

static px_hold_q_t *px__q_find(const px_hold_t *t, uint64_t id)
{
    px_hold_q_t *q = t->qs;
    while (q != NULL && q->id != id)
        q = q->next;
    return q;
}

int px_hold_decide(px_hold_t *t, uint64_t id, px_hold_outcome_t outcome, int conversation,
                   const char *by)
{
    px_hold_grant_t g = {conversation ? PX_HOLD_SCOPE_CONVERSATION : PX_HOLD_SCOPE_ONCE, NULL, NULL,
                         0};
    px_hold_q_t *q = px__q_find(t, id);
    if (q == NULL || outcome == PX_HOLD_PENDING)
        return PX_ENOENT;
    return px__answer(t, q, outcome, &g, by);
}

int px_hold_approve(px_hold_t *t, uint64_t id, const px_hold_grant_t *g, const char *by)
{
    px_hold_q_t *q = px__q_find(t, id);
    if (q == NULL)
        return PX_ENOENT;
    return px__answer(t, q, PX_HOLD_APPROVED, g, by);
}

int px_hold_get(const px_hold_t *t, uint64_t id, px_hold_info_t *out)
{
    const px_hold_q_t *q = px__q_find(t, id);
    if (q == NULL)
        return PX_ENOENT;
    px__info(q, out);
    return 0;
}

size_t px_hold_forget(px_hold_t *t, const char *scope_name, unsigned draft)
{
    size_t n = 0;
    for (size_t i = 0; draft != 0 && i < t->nrules; i++) {
        px__hold_rule_t *r = &t->rules[i];
        if (r->scope != NULL && r->draft == draft && strcmp(r->scope_name, scope_name) == 0) {
            r->draft = 0;
            r->scope = NULL; /* matches no conversation again; its slot is reused in turn */
            n++;
        }
    }
    return n;
}

size_t px_hold_expire(px_hold_t *t, uint64_t now)
{
    size_t n = 0;
    px_hold_q_t *q = t->qs;
    while (q != NULL) {
        px_hold_q_t *next = q->next;
        if (now >= q->deadline_ms) {
            px_hold_grant_t g = {PX_HOLD_SCOPE_ONCE, NULL, NULL, 0};
            px__answer(t, q, PX_HOLD_TIMEOUT, &g, "timeout");
            n++;
        }
        q = next;
    }
    return n;
}

void px_hold_cancel(px_hold_t *t, px_hold_wait_t *w)
{
    if (t == NULL || (w->next == NULL && w->prev == NULL && t->waiters != w))
        return; /* never added, or let go already */
    px_hold_q_t *q = w->q;
    if (q != NULL) {
        for (px_hold_wait_t **p = &q->waiters; *p != NULL; p = &(*p)->qnext) {
            if (*p == w) {
                *p = w->qnext;
                break;
            }
        }
        q->nwaiters--;
        q->bytes -= w->bytes;
        t->bytes -= w->bytes;
        if (q->nwaiters == 0) { /* nobody waits for the answer any more */
            px__q_unlink(t, q);
            px__observe(t, q, PX_HOLD_PENDING, "gone");
            px__q_free(q);
        }
    }
    if (w->prev != NULL)
        w->prev->next = w->next;
    else
        t->waiters = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    w->next = w->prev = w->qnext = NULL;
    w->q = NULL;
    t->nwaiters--;
}

px_hold_wait_t *px_hold_find(const px_hold_t *t, const void *owner)
{
    if (t == NULL)
        return NULL;
    for (px_hold_wait_t *w = t->waiters; w != NULL; w = w->next)
        if (w->owner == owner)
            return w;
    return NULL;
}

/* 1 when methods ("GET,POST") holds method. */
static int px__has_method(const char *methods, const char *method)
{
    size_t n = strlen(method);
    for (const char *m = methods; m != NULL; m = strchr(m, ','), m = m != NULL ? m + 1 : NULL)
        if (strncmp(m, method, n) == 0 && (m[n] == ',' || m[n] == '\0'))
            return 1;
    return 0;
}

int px_hold_allowed(const px_hold_t *t, const void *scope, const char *method, const char *host,
                    const char *path)
{
    if (t == NULL)
        return 0;
    for (size_t i = 0; i < t->nrules; i++) {
        const px__hold_rule_t *r = &t->rules[i];
        if (r->scope != scope || !px__same(r->host, host) || !px__has_method(r->methods, method))
            continue;
        if (!r->glob ? px__same(r->path, path)
                     : addon_glob_match(r->path, strlen(r->path), path, strlen(path)) ||
                           addon_glob_match(r->path, strlen(r->path), path, strcspn(path, "?")))
            return 1;
    }
    return 0;
}

void px_hold_each(const px_hold_t *t, void (*fn)(void *arg, const px_hold_info_t *q), void *arg)
{
    for (const px_hold_q_t *q = t->qs; q != NULL; q = q->next) {
        px_hold_info_t i;
        px__info(q, &i);
        fn(arg, &i);
    }
}

size_t px_hold_count(const px_hold_t *t)
{
    return t->nwaiters;
}

size_t px_hold_bytes(const px_hold_t *t)
{
    return t->bytes;
}

size_t px_hold_questions(const px_hold_t *t)
{
    return t->nqs;
}

const char *px_hold_bound_text(int over, char *buf, size_t len)
{
    switch (over) {
    case PX_HOLD_OVER_SCOPE_COUNT:
        snprintf(buf, len, "conversation hold count %d", PX_HOLD_SCOPE_MAX);
        break;
    case PX_HOLD_OVER_SCOPE_BYTES:
        snprintf(buf, len, "conversation held bytes %d", PX_HOLD_SCOPE_BYTES_MAX);
        break;
    case PX_HOLD_OVER_PROCESS_COUNT:
        snprintf(buf, len, "process hold count %d", PX_HOLD_PROCESS_MAX);
        break;
    default:
        snprintf(buf, len, "process held bytes %d", PX_HOLD_PROCESS_BYTES_MAX);
        break;
    }
    return buf;
}

void px_hold_audit_line(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by,
                        int conversation)
{
    (void)arg;
    px_log_t *log = (px_log_t *)q->scope;
    if (log == NULL || (o != PX_HOLD_APPROVED && o != PX_HOLD_DENIED))
        return;
    int ok = o == PX_HOLD_APPROVED;
    audit_event_t ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = AUDIT_EV_DECISION;
    ev.verdict = ok ? AUDIT_EV_ALLOWED : AUDIT_EV_BLOCKED;
    ev.hold = q->id;
    ev.method = audit_s(q->method);
    ev.host = audit_s(q->host);
    ev.path = audit_s(q->path);
    ev.who = audit_s(by);
    ev.scope = audit_s(!ok                                          ? NULL
                       : conversation == PX_HOLD_SCOPE_PERSIST      ? "persist"
                       : conversation == PX_HOLD_SCOPE_CONVERSATION ? "conversation"
                                                                    : "once");
    ev.count = q->waiters > 1000000 ? 1000000 : (unsigned)q->waiters;
    px_log_event(log, &ev);
}
