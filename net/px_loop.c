#include "net/px_loop.h"

#include <stdlib.h>

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
