/* net/px_loop: one-shot deadlines under the loop's one timer (px_tmo_start, px_tmo_stop). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "net/px_loop.h"

#define NOWNERS 12

typedef struct owner {
    px_tmo_t t;
    int calls;
    uint64_t at; /* loop time of the last call, ms */
    int order;   /* its place among all calls, from 1 */
    int rearm;   /* its call arms it again, once, for rearm_ms */
    uint64_t rearm_ms;
    int stop_other; /* 1 + the owner its call stops, or 0 */
} owner_t;

typedef struct fixture {
    uv_loop_t uv;
    px_loop_t l;
    owner_t o[NOWNERS];
    int calls;
} fixture_t;

static fixture_t fx;

static void on_due(px_tmo_t *t)
{
    owner_t *o = px_container_of(t, owner_t, t);
    o->calls++;
    o->at = uv_now(&fx.uv);
    o->order = ++fx.calls;
    assert_false(px_tmo_armed(t));
    if (o->stop_other > 0)
        px_tmo_stop(&fx.l, &fx.o[o->stop_other - 1].t);
    if (o->rearm) {
        o->rearm = 0;
        px_tmo_start(&fx.l, t, o->rearm_ms, on_due);
    }
}

static void setup(void)
{
    memset(&fx, 0, sizeof(fx));
    assert_int_equal(uv_loop_init(&fx.uv), 0);
    assert_int_equal(px_loop_init(&fx.l, &fx.uv), 0);
}

static void teardown(void)
{
    px_loop_close(&fx.l);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx.uv), 0);
}

/* Runs the loop while any owner is armed (the loop's timer is unreferenced: a referenced
 * keep-alive timer holds the loop open meanwhile). */
static void on_keepalive(uv_timer_t *k)
{
    for (int i = 0; i < NOWNERS; i++)
        if (px_tmo_armed(&fx.o[i].t))
            return;
    uv_timer_stop(k);
}

static void run(void)
{
    uv_timer_t keep;
    uv_timer_init(&fx.uv, &keep);
    uv_timer_start(&keep, on_keepalive, 5, 5);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&keep, NULL);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
}

/* Each fires once, at its own time, in order of due time, whatever lane it waits in. */
static void test_tmo_fires_in_order(void **state)
{
    (void)state;
    setup();
    uint64_t t0 = uv_now(&fx.uv);
    static const uint64_t ms[] = {60, 20, 40, 20, 60, 0};
    for (int i = 0; i < 6; i++)
        px_tmo_start(&fx.l, &fx.o[i].t, ms[i], on_due);
    assert_true(px_tmo_armed(&fx.o[0].t));
    run();
    static const int order[] = {5, 2, 4, 3, 6, 1};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(fx.o[i].calls, 1);
        assert_int_equal(fx.o[i].order, order[i]);
        assert_true(fx.o[i].at - t0 >= ms[i]);
        assert_true(fx.o[i].at - t0 < ms[i] + 1000);
    }
    teardown();
}

/* More durations than lanes: the rest share one list kept in order of due time. */
static void test_tmo_more_durations_than_lanes(void **state)
{
    (void)state;
    setup();
    uint64_t t0 = uv_now(&fx.uv);
    for (int i = 0; i < NOWNERS; i++) /* 110, 100, ..., 0 ms: every one a duration of its own */
        px_tmo_start(&fx.l, &fx.o[i].t, (uint64_t)(NOWNERS - 1 - i) * 10, on_due);
    run();
    for (int i = 0; i < NOWNERS; i++) {
        assert_int_equal(fx.o[i].calls, 1);
        assert_int_equal(fx.o[i].order, NOWNERS - i);
        assert_true(fx.o[i].at - t0 >= (uint64_t)(NOWNERS - 1 - i) * 10);
    }
    teardown();
}

/* Stopped: never called. Started again while armed: only the new deadline counts. */
static void test_tmo_stop_and_rearm(void **state)
{
    (void)state;
    setup();
    uint64_t t0 = uv_now(&fx.uv);
    px_tmo_start(&fx.l, &fx.o[0].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.o[1].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.o[2].t, 30, on_due);
    px_tmo_stop(&fx.l, &fx.o[0].t);
    px_tmo_stop(&fx.l, &fx.o[0].t); /* twice: harmless */
    assert_false(px_tmo_armed(&fx.o[0].t));
    px_tmo_start(&fx.l, &fx.o[1].t, 80, on_due); /* later than before */
    px_tmo_start(&fx.l, &fx.o[2].t, 5, on_due);  /* sooner than before */
    run();
    assert_int_equal(fx.o[0].calls, 0);
    assert_int_equal(fx.o[1].calls, 1);
    assert_int_equal(fx.o[2].calls, 1);
    assert_true(fx.o[1].at - t0 >= 80);
    assert_true(fx.o[2].order == 1);
    teardown();
}

/* A call may arm itself again (even for 0 ms: it waits for the next turn, no spinning) and
 * stop another that is due in the same turn. */
static void test_tmo_calls_rearm_and_stop(void **state)
{
    (void)state;
    setup();
    fx.o[0].rearm = 1;      /* for 0 ms */
    fx.o[1].stop_other = 3; /* stops owner 2, due at the same time */
    fx.o[3].rearm = 1;
    fx.o[3].rearm_ms = 15;
    px_tmo_start(&fx.l, &fx.o[0].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.o[1].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.o[2].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.o[3].t, 10, on_due);
    run();
    assert_int_equal(fx.o[0].calls, 2);
    assert_int_equal(fx.o[1].calls, 1);
    assert_int_equal(fx.o[2].calls, 0);
    assert_int_equal(fx.o[3].calls, 2);
    teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tmo_fires_in_order),
        cmocka_unit_test(test_tmo_more_durations_than_lanes),
        cmocka_unit_test(test_tmo_stop_and_rearm),
        cmocka_unit_test(test_tmo_calls_rearm_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
