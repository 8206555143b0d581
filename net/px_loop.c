#include "net/px_loop.h"

#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"

#define PX__RBUF (64 * 1024)

static void on_loop_check(uv_check_t *h)
{
    px_loop_t *l = h->data;
    /* at most the calls queued before this turn: one that re-queues itself waits for the next
     * turn instead of spinning here. Popped one at a time, so that any call may cancel (and
     * free) any other. */
    size_t budget = l->count;
    while (budget-- > 0 && l->head != NULL) {
        px_defer_t *d = l->head;
        l->head = d->next;
        if (l->head == NULL)
            l->tail = NULL;
        d->next = NULL;
        d->queued = 0;
        l->count--;
        d->cb(d);
    }
    if (l->head == NULL && l->idle_on) {
        uv_idle_stop(&l->idle);
        l->idle_on = 0;
    }
}

static void on_loop_idle(uv_idle_t *h)
{
    (void)h; /* only there so that poll does not block while calls wait */
}

static void px__quiet_unlink(px_loop_t *l, px_quiet_t *q)
{
    if (q->prev != NULL)
        q->prev->next = q->next;
    else
        l->quiet = q->next;
    if (q->next != NULL)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
    q->on = 0;
}

static void on_quiet_tick(uv_timer_t *h)
{
    px_loop_t *l = h->data;
    px_quiet_t *next;
    for (px_quiet_t *q = l->quiet; q != NULL; q = next) {
        next = q->next;
        if (q->gen == l->quiet_gen)
            continue; /* touched during this period */
        px__quiet_unlink(l, q);
        q->cb(q);
    }
    l->quiet_gen++;
    if (l->quiet == NULL) {
        uv_timer_stop(&l->quiet_timer);
        l->quiet_on = 0;
    }
}

void px_quiet_touch(px_loop_t *l, px_quiet_t *q, px_quiet_cb cb)
{
    q->cb = cb;
    q->gen = l->quiet_gen;
    if (q->on)
        return;
    q->on = 1;
    q->prev = NULL;
    q->next = l->quiet;
    if (l->quiet != NULL)
        l->quiet->prev = q;
    l->quiet = q;
    if (!l->quiet_on) {
        uv_timer_start(&l->quiet_timer, on_quiet_tick, PX_QUIET_MS, PX_QUIET_MS);
        l->quiet_on = 1;
    }
}

void px_quiet_cancel(px_loop_t *l, px_quiet_t *q)
{
    if (q->on)
        px__quiet_unlink(l, q);
}

/* ---- deadlines ----------------------------------------------------------------------------- */

static void px__tmo_unlink(px_loop_t *l, px_tmo_t *t)
{
    px_tmo_lane_t *ln = &l->tmo[t->lane - 1];
    if (t->prev != NULL)
        t->prev->next = t->next;
    else
        ln->head = t->next;
    if (t->next != NULL)
        t->next->prev = t->prev;
    else
        ln->tail = t->prev;
    t->prev = t->next = NULL;
    t->lane = 0;
}

static void on_tmo_tick(uv_timer_t *h);

/* Sets the timer for the soonest head, or stops it. */
static void px__tmo_set(px_loop_t *l, uint64_t now)
{
    uint64_t at = UINT64_MAX;
    for (int i = 0; i < PX_TMO_LANES; i++)
        if (l->tmo[i].head != NULL && l->tmo[i].head->due < at)
            at = l->tmo[i].head->due;
    l->tmo_at = at;
    if (at == UINT64_MAX)
        uv_timer_stop(&l->tmo_timer);
    else
        uv_timer_start(&l->tmo_timer, on_tmo_tick, at > now ? at - now : 0, 0);
}

/* Calls what is due, soonest first across the lists; one armed during this pass waits. */
static void on_tmo_tick(uv_timer_t *h)
{
    px_loop_t *l = h->data;
    uint64_t now = uv_now(l->uv);
    uint32_t pass = ++l->tmo_pass;
    l->tmo_firing = 1;
    for (;;) {
        px_tmo_t *due = NULL;
        for (int i = 0; i < PX_TMO_LANES; i++) {
            px_tmo_t *t = l->tmo[i].head;
            if (t != NULL && t->due <= now && t->pass != pass && (due == NULL || t->due < due->due))
                due = t;
        }
        if (due == NULL)
            break;
        px__tmo_unlink(l, due);
        due->cb(due);
    }
    l->tmo_firing = 0;
    px__tmo_set(l, now);
}

void px_tmo_start(px_loop_t *l, px_tmo_t *t, uint64_t ms, px_tmo_cb cb)
{
    if (t->lane != 0)
        px__tmo_unlink(l, t);
    uint64_t now = uv_now(l->uv);
    t->cb = cb;
    t->due = now + ms;
    t->pass = l->tmo_pass;
    int lane = -1, spare = -1; /* a duration's list, else an empty one, else the shared one */
    for (int i = 0; i < PX_TMO_LANES - 1; i++) {
        if (l->tmo[i].head == NULL) {
            if (spare < 0)
                spare = i;
        } else if (l->tmo[i].ms == ms) {
            lane = i;
            break;
        }
    }
    if (lane < 0 && spare >= 0) {
        lane = spare;
        l->tmo[lane].ms = ms;
    }
    if (lane < 0)
        lane = PX_TMO_LANES - 1;
    px_tmo_lane_t *ln = &l->tmo[lane];
    px_tmo_t *after = ln->tail; /* the shared list: after the last one due no later */
    if (lane == PX_TMO_LANES - 1)
        while (after != NULL && after->due > t->due)
            after = after->prev;
    t->prev = after;
    t->next = after != NULL ? after->next : ln->head;
    if (t->next != NULL)
        t->next->prev = t;
    else
        ln->tail = t;
    if (after != NULL)
        after->next = t;
    else
        ln->head = t;
    t->lane = (uint32_t)lane + 1;
    if (!l->tmo_firing && t->due < l->tmo_at) {
        l->tmo_at = t->due;
        uv_timer_start(&l->tmo_timer, on_tmo_tick, ms, 0);
    }
}

void px_tmo_stop(px_loop_t *l, px_tmo_t *t)
{
    if (t->lane != 0)
        px__tmo_unlink(l, t);
}

int px_loop_init(px_loop_t *l, uv_loop_t *uv)
{
    l->uv = uv;
    l->quiet = NULL;
    l->quiet_gen = 0;
    l->quiet_on = 0;
    l->head = l->tail = NULL;
    l->count = 0;
    l->idle_on = 0;
    l->rbuf_cap = l->tbuf_cap = PX__RBUF;
    l->rbuf = malloc(l->rbuf_cap);
    l->tbuf = malloc(l->tbuf_cap);
    if (l->rbuf == NULL || l->tbuf == NULL) {
        free(l->rbuf);
        free(l->tbuf);
        return PX_ENOMEM;
    }
    uv_check_init(uv, &l->check);
    l->check.data = l;
    uv_check_start(&l->check, on_loop_check);
    uv_unref((uv_handle_t *)&l->check);
    uv_idle_init(uv, &l->idle);
    l->idle.data = l;
    uv_timer_init(uv, &l->quiet_timer);
    l->quiet_timer.data = l;
    uv_unref((uv_handle_t *)&l->quiet_timer);
    memset(l->tmo, 0, sizeof(l->tmo));
    l->tmo_at = UINT64_MAX;
    l->tmo_pass = 0;
    l->tmo_firing = 0;
    uv_timer_init(uv, &l->tmo_timer);
    l->tmo_timer.data = l;
    uv_unref((uv_handle_t *)&l->tmo_timer);
    return 0;
}

void px_loop_close(px_loop_t *l)
{
    uv_check_stop(&l->check);
    uv_close((uv_handle_t *)&l->check, NULL);
    uv_idle_stop(&l->idle);
    uv_close((uv_handle_t *)&l->idle, NULL);
    uv_timer_stop(&l->quiet_timer);
    uv_close((uv_handle_t *)&l->quiet_timer, NULL);
    uv_timer_stop(&l->tmo_timer);
    uv_close((uv_handle_t *)&l->tmo_timer, NULL);
    free(l->rbuf);
    free(l->tbuf);
    l->rbuf = l->tbuf = NULL;
}

void px_defer(px_loop_t *l, px_defer_t *d, px_defer_cb cb)
{
    d->cb = cb;
    if (d->queued)
        return;
    d->queued = 1;
    d->next = NULL;
    if (l->tail != NULL)
        l->tail->next = d;
    else
        l->head = d;
    l->tail = d;
    l->count++;
    if (!l->idle_on) {
        uv_idle_start(&l->idle, on_loop_idle);
        l->idle_on = 1;
    }
}

void px_defer_cancel(px_loop_t *l, px_defer_t *d)
{
    if (!d->queued)
        return;
    d->queued = 0;
    px_defer_t **p = &l->head;
    px_defer_t *prev = NULL;
    while (*p != NULL && *p != d) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p == d) {
        *p = d->next;
        if (l->tail == d)
            l->tail = prev;
        l->count--;
    }
    d->next = NULL;
}
