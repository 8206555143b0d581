/* net/px_loop: calls for when an owner has gone quiet (px_quiet_touch, px_quiet_cancel) and
 * one-shot deadlines under the loop's one timer (px_tmo_start, px_tmo_stop). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <uv.h>

#include "net/px_loop.h"

typedef struct owner {
    px_quiet_t q;
    int calls;
    uint64_t at; /* loop time of the call, ms */
} owner_t;

#define NDUE 12

typedef struct due {
    px_tmo_t t;
    int calls;
    uint64_t at; /* loop time of the last call, ms */
    int order;   /* its place among all calls, from 1 */
    int rearm;   /* its call arms it again, once, for rearm_ms */
    uint64_t rearm_ms;
    int stop_other; /* 1 + the one its call stops, or 0 */
} due_t;

typedef struct fixture {
    uv_loop_t uv;
    px_loop_t l;
    owner_t a, b;
    int ticks, stop_at;
    uv_timer_t toucher;
    due_t d[NDUE];
    int calls;
} fixture_t;

static fixture_t fx;

static void on_owner_quiet(px_quiet_t *q)
{
    owner_t *o = px_container_of(q, owner_t, q);
    o->calls++;
    o->at = uv_now(&fx.uv);
}

static void loop_setup(void)
{
    memset(&fx, 0, sizeof(fx));
    assert_int_equal(uv_loop_init(&fx.uv), 0);
    assert_int_equal(px_loop_init(&fx.l, &fx.uv), 0);
}

static void loop_teardown(void)
{
    px_loop_close(&fx.l);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&fx.uv), 0);
}

/* Runs the loop while busy() says so (the loop's own timers are unreferenced: a referenced
 * keep-alive timer holds the loop open meanwhile). */
static int (*run_busy)(void);

static void on_keepalive(uv_timer_t *t)
{
    if (!run_busy())
        uv_timer_stop(t);
}

static void run_while(int (*busy)(void))
{
    uv_timer_t keep;
    run_busy = busy;
    uv_timer_init(&fx.uv, &keep);
    uv_timer_start(&keep, on_keepalive, 5, 5);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&keep, NULL);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
}

static int quiet_pending(void)
{
    return fx.l.quiet_on;
}

static void run_until_quiet(void)
{
    run_while(quiet_pending);
}

static void test_quiet_once_after_a_period(void **state)
{
    (void)state;
    loop_setup();
    uint64_t t0 = uv_now(&fx.uv);
    px_quiet_touch(&fx.l, &fx.a.q, on_owner_quiet);
    px_quiet_touch(&fx.l, &fx.a.q, on_owner_quiet); /* twice: still one call */
    run_until_quiet();
    assert_int_equal(fx.a.calls, 1);
    assert_true(fx.a.at - t0 >= PX_QUIET_MS);
    assert_true(fx.a.at - t0 <= 3 * PX_QUIET_MS);
    assert_false(fx.l.quiet_on);
    loop_teardown();
}

/* An owner touched every 20 ms stays busy; its call comes a period after the touches stop. */
static void on_toucher(uv_timer_t *t)
{
    if (++fx.ticks >= fx.stop_at) {
        uv_timer_stop(t);
        return;
    }
    assert_int_equal(fx.a.calls, 0);
    px_quiet_touch(&fx.l, &fx.a.q, on_owner_quiet);
}

static void test_quiet_waits_while_touched(void **state)
{
    (void)state;
    loop_setup();
    fx.stop_at = 25; /* 500 ms of touches, five periods */
    px_quiet_touch(&fx.l, &fx.a.q, on_owner_quiet);
    uv_timer_init(&fx.uv, &fx.toucher);
    uv_timer_start(&fx.toucher, on_toucher, 20, 20);
    uint64_t t0 = uv_now(&fx.uv);
    run_until_quiet();
    assert_int_equal(fx.a.calls, 1);
    assert_true(fx.a.at - t0 >= 500);
    uv_close((uv_handle_t *)&fx.toucher, NULL);
    loop_teardown();
}

static void test_quiet_cancel(void **state)
{
    (void)state;
    loop_setup();
    px_quiet_touch(&fx.l, &fx.a.q, on_owner_quiet);
    px_quiet_touch(&fx.l, &fx.b.q, on_owner_quiet);
    px_quiet_cancel(&fx.l, &fx.a.q);
    px_quiet_cancel(&fx.l, &fx.a.q); /* twice: harmless */
    run_until_quiet();
    assert_int_equal(fx.a.calls, 0);
    assert_int_equal(fx.b.calls, 1);
    /* touched again after its call: called again */
    px_quiet_touch(&fx.l, &fx.b.q, on_owner_quiet);
    run_until_quiet();
    assert_int_equal(fx.b.calls, 2);
    loop_teardown();
}

static void on_due(px_tmo_t *t)
{
    due_t *o = px_container_of(t, due_t, t);
    o->calls++;
    o->at = uv_now(&fx.uv);
    o->order = ++fx.calls;
    assert_false(px_tmo_armed(t));
    if (o->stop_other > 0)
        px_tmo_stop(&fx.l, &fx.d[o->stop_other - 1].t);
    if (o->rearm) {
        o->rearm = 0;
        px_tmo_start(&fx.l, t, o->rearm_ms, on_due);
    }
}

static int any_armed(void)
{
    for (int i = 0; i < NDUE; i++)
        if (px_tmo_armed(&fx.d[i].t))
            return 1;
    return 0;
}

/* Each fires once, at its own time, in order of due time, whatever lane it waits in. */
static void test_tmo_fires_in_order(void **state)
{
    (void)state;
    loop_setup();
    uint64_t t0 = uv_now(&fx.uv);
    static const uint64_t ms[] = {60, 20, 40, 20, 60, 0};
    for (int i = 0; i < 6; i++)
        px_tmo_start(&fx.l, &fx.d[i].t, ms[i], on_due);
    assert_true(px_tmo_armed(&fx.d[0].t));
    run_while(any_armed);
    static const int order[] = {5, 2, 4, 3, 6, 1};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(fx.d[i].calls, 1);
        assert_int_equal(fx.d[i].order, order[i]);
        assert_true(fx.d[i].at - t0 >= ms[i]);
        assert_true(fx.d[i].at - t0 < ms[i] + 1000);
    }
    loop_teardown();
}

/* More durations than lanes: the rest share one list kept in order of due time. */
static void test_tmo_more_durations_than_lanes(void **state)
{
    (void)state;
    loop_setup();
    uint64_t t0 = uv_now(&fx.uv);
    for (int i = 0; i < NDUE; i++) /* 110, 100, ..., 0 ms: every one a duration of its own */
        px_tmo_start(&fx.l, &fx.d[i].t, (uint64_t)(NDUE - 1 - i) * 10, on_due);
    run_while(any_armed);
    for (int i = 0; i < NDUE; i++) {
        assert_int_equal(fx.d[i].calls, 1);
        assert_int_equal(fx.d[i].order, NDUE - i);
        assert_true(fx.d[i].at - t0 >= (uint64_t)(NDUE - 1 - i) * 10);
    }
    loop_teardown();
}

/* Stopped: never called. Started again while armed: only the new deadline counts. */
static void test_tmo_stop_and_rearm(void **state)
{
    (void)state;
    loop_setup();
    uint64_t t0 = uv_now(&fx.uv);
    px_tmo_start(&fx.l, &fx.d[0].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.d[1].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.d[2].t, 30, on_due);
    px_tmo_stop(&fx.l, &fx.d[0].t);
    px_tmo_stop(&fx.l, &fx.d[0].t); /* twice: harmless */
    assert_false(px_tmo_armed(&fx.d[0].t));
    px_tmo_start(&fx.l, &fx.d[1].t, 80, on_due); /* later than before */
    px_tmo_start(&fx.l, &fx.d[2].t, 5, on_due);  /* sooner than before */
    run_while(any_armed);
    assert_int_equal(fx.d[0].calls, 0);
    assert_int_equal(fx.d[1].calls, 1);
    assert_int_equal(fx.d[2].calls, 1);
    assert_true(fx.d[1].at - t0 >= 80);
    assert_true(fx.d[2].order == 1);
    loop_teardown();
}

/* A call may arm itself again (even for 0 ms: it waits for the next turn, no spinning) and
 * stop another that is due in the same turn. */
static void test_tmo_calls_rearm_and_stop(void **state)
{
    (void)state;
    loop_setup();
    fx.d[0].rearm = 1;      /* for 0 ms */
    fx.d[1].stop_other = 3; /* stops owner 2, due at the same time */
    fx.d[3].rearm = 1;
    fx.d[3].rearm_ms = 15;
    px_tmo_start(&fx.l, &fx.d[0].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.d[1].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.d[2].t, 10, on_due);
    px_tmo_start(&fx.l, &fx.d[3].t, 10, on_due);
    run_while(any_armed);
    assert_int_equal(fx.d[0].calls, 2);
    assert_int_equal(fx.d[1].calls, 1);
    assert_int_equal(fx.d[2].calls, 0);
    assert_int_equal(fx.d[3].calls, 2);
    loop_teardown();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_once_after_a_period),
        cmocka_unit_test(test_quiet_waits_while_touched),
        cmocka_unit_test(test_quiet_cancel),
        cmocka_unit_test(test_tmo_fires_in_order),
        cmocka_unit_test(test_tmo_more_durations_than_lanes),
        cmocka_unit_test(test_tmo_stop_and_rearm),
        cmocka_unit_test(test_tmo_calls_rearm_and_stop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
