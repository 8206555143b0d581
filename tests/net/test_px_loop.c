/* proxy/px_loop: calls for when an owner has gone quiet (px_quiet_touch, px_quiet_cancel). */
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

typedef struct fixture {
    uv_loop_t uv;
    px_loop_t l;
    owner_t a, b;
    int ticks, stop_at;
    uv_timer_t toucher;
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

/* Runs the loop until the quiet timer stops (its handle is unreferenced, so a referenced
 * keep-alive timer holds the loop open meanwhile). */
static void on_keepalive(uv_timer_t *t)
{
    if (!fx.l.quiet_on)
        uv_timer_stop(t);
}

static void run_until_quiet(void)
{
    uv_timer_t keep;
    uv_timer_init(&fx.uv, &keep);
    uv_timer_start(&keep, on_keepalive, 10, 10);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&keep, NULL);
    uv_run(&fx.uv, UV_RUN_DEFAULT);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_once_after_a_period),
        cmocka_unit_test(test_quiet_waits_while_touched),
        cmocka_unit_test(test_quiet_cancel),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
