/* px_log_event() writes, byte for byte, the line px_log_line() writes for the same text: the
 * same \xNN escapes, the same cut at PX_LOG_LINE_MAX (never inside an escape) and mark. Each
 * case writes the raw text with px_log_line() and the event with px_log_event() into one log
 * and compares the two lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxy/px_log.h"

/* Writes raw and ev to a fresh log; returns the file's text (malloc'd). */
static char *both(const char *raw, size_t rlen, const audit_event_t *ev)
{
    char path[128];
    snprintf(path, sizeof(path), "/tmp/airlock-test-log-event.%d.%ld", (int)getpid(), random());
    px_log_t *log = NULL;
    char err[256];
    assert_int_equal(px_log_open(path, 1, &log, err, sizeof(err)), 0);
    px_log_line(log, raw, rlen);
    px_log_event(log, ev);
    px_log_close(log);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[4 * PX_LOG_LINE_MAX];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    unlink(path);
    buf[n] = '\0';
    char *out = malloc(n + 1);
    memcpy(out, buf, n + 1);
    return out;
}

static void assert_same_lines(char *text)
{
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    *nl = '\0';
    char *second = nl + 1;
    size_t l2 = strlen(second);
    assert_true(l2 > 0 && second[l2 - 1] == '\n');
    second[l2 - 1] = '\0';
    assert_string_equal(second, text);
    free(text);
}

static void test_px_log_event_same_as_line(void **state)
{
    (void)state;
    /* escapes in the URL and the tail */
    const char raw[] = "BLOCKED GET https://h\n.test/\x1b[2J\xc3\xa9 -> 403 (host mismatch: "
                       "header=h\r.test, sni=x)";
    audit_event_t ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_BLOCKED, "GET",
                                          "https://h\n.test/\x1b[2J\xc3\xa9", 403);
    ev.tail = audit_s("host mismatch: header=h\r.test, sni=x");
    assert_same_lines(both(raw, sizeof(raw) - 1, &ev));

    /* over the cap, with the cut falling on each byte of an escape in turn */
    for (size_t shift = 0; shift < 5; shift++) {
        static char url[PX_LOG_LINE_MAX + 64], line[PX_LOG_LINE_MAX + 128];
        size_t head = strlen("allowed GET ");
        size_t fill = PX_LOG_LINE_MAX - head - 12 - 3 + shift;
        memcpy(url, "https://h/", 10);
        memset(url + 10, 'p', fill);
        memcpy(url + 10 + fill, "\x01\x02", 2);
        size_t ulen = 12 + fill;
        url[ulen] = '\0';
        int n = snprintf(line, sizeof(line), "allowed GET %s -> 200", url);
        ev = audit_event_access(AUDIT_EV_REQUEST, AUDIT_EV_ALLOWED, "GET", NULL, 200);
        ev.url.base = url;
        ev.url.len = ulen;
        assert_same_lines(both(line, (size_t)n, &ev));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_px_log_event_same_as_line),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
