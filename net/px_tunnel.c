#include "net/px_tunnel.h"

#include <stdlib.h>
#include <uv.h>

#include "net/px_sock.h"

struct px_tunnel {
    px_tunnel_end_t e[2];
    int attached[2];
    int live[2];     /* the end has not released the tunnel */
    int eof[2];      /* side's read half ended */
    int paused[2];   /* side's reading is off: its peer's queue is full */
    int closing;     /* both ends were told to close (now, or once flushed) */
    px_tunnel_hook_t hook; /* data: NULL without a guard */
};

px_tunnel_t *px_tunnel_new(void)
{
    return calloc(1, sizeof(px_tunnel_t));
}

void px_tunnel_set_hook(px_tunnel_t *t, const px_tunnel_hook_t *hook)
{
    t->hook = *hook;
}

static void px__tunnel_free(px_tunnel_t *t)
{
    if (t->hook.free != NULL)
        t->hook.free(t->hook.h);
    free(t);
}

void px_tunnel_attach(px_tunnel_t *t, int side, const px_tunnel_end_t *e)
{
    t->e[side] = *e;
    t->attached[side] = 1;
    t->live[side] = 1;
    if (t->closing) {
        e->close(e->end); /* the other end is already gone */
        return;
    }
    if (t->attached[0] && t->attached[1]) {
        t->e[0].read(t->e[0].end, 1);
        t->e[1].read(t->e[1].end, 1);
    }
}

int px_tunnel_ready(const px_tunnel_t *t)
{
    return t->attached[0] && t->attached[1] && !t->closing;
}

static void px__tunnel_close(px_tunnel_t *t)
{
    if (t->closing)
        return;
    t->closing = 1;
    for (int i = 0; i < 2; i++)
        if (t->live[i])
            t->e[i].close(t->e[i].end);
}

void px_tunnel_cut(px_tunnel_t *t, int flush_side)
{
    if (t->closing)
        return;
    t->closing = 1;
    for (int i = 0; i < 2; i++) {
        if (!t->live[i])
            continue;
        if (i == flush_side)
            t->e[i].finish(t->e[i].end);
        else
            t->e[i].close(t->e[i].end);
    }
}

void px_tunnel_data(px_tunnel_t *t, int side, const char *data, size_t len)
{
    if (t->closing || !t->live[!side])
        return;
    if (t->hook.data != NULL) {
        t->hook.data(t->hook.h, t, side, data, len);
        return;
    }
    px_tunnel_pass(t, side, data, len);
}

void px_tunnel_pass(px_tunnel_t *t, int side, const char *data, size_t len)
{
    int other = !side;
    if (t->closing || !t->live[other] || len == 0)
        return;
    t->e[other].write(t->e[other].end, data, len);
    if (!t->paused[side] && t->e[other].full(t->e[other].end)) {
        t->paused[side] = 1;
        t->e[side].read(t->e[side].end, 0);
    }
}

void px_tunnel_eof(px_tunnel_t *t, int side, int err)
{
    if (t->closing)
        return;
    if (err != UV_EOF) {
        px__tunnel_close(t);
        return;
    }
    t->eof[side] = 1;
    if (t->eof[0] && t->eof[1]) {
        /* both halves ended: what is queued still goes out, then both close */
        t->closing = 1;
        for (int i = 0; i < 2; i++)
            if (t->live[i])
                t->e[i].finish(t->e[i].end);
        return;
    }
    t->e[!side].shutdown(t->e[!side].end);
}

void px_tunnel_drain(px_tunnel_t *t, int side)
{
    int other = !side;
    if (t->closing || !t->paused[other])
        return;
    t->paused[other] = 0;
    if (!t->eof[other])
        t->e[other].read(t->e[other].end, 1);
}

void px_tunnel_release(px_tunnel_t *t, int side)
{
    if (t->hook.ahead && !t->attached[0] && !t->attached[1]) {
        px__tunnel_free(t); /* made ahead (a passthrough CONNECT's budgets), never begun */
        return;
    }
    if (!t->live[side])
        return;
    t->live[side] = 0;
    if (!t->attached[!side]) {
        t->closing = 1; /* the other end closes as soon as it attaches, then frees */
        return;
    }
    if (t->live[!side]) {
        px__tunnel_close(t); /* an end that went away on its own failed: the other goes too */
        return;
    }
    px__tunnel_free(t);
}
