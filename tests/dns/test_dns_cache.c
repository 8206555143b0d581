/* dns_cache alone: name keys, TTLs and their cap, LRU eviction, turning it off, and the
 * addresses handed back. The time is passed in, so nothing here sleeps. */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "dns/dns_cache.h"

#define T0 1000000 /* a loop clock well past 0, in ms */
#define TTL_MAX_MS ((uint64_t)DNS_RESOLVE_CACHE_TTL_MAX_S * 1000)

/* ---- helpers ---- */

static int setup(void **state)
{
    dns_cache_t *c = test_calloc(1, sizeof(*c));

    if (c == NULL)
        return -1;
    dns_cache_init(c);
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    test_free(*state);
    return 0;
}

/* 192.0.2.n, or 2001:db8::n when v6. */
static dns_cache_addr_t addr(int v6, uint8_t n)
{
    dns_cache_addr_t a;

    memset(&a, 0, sizeof(a));
    a.family = v6 ? AF_INET6 : AF_INET;
    if (v6) {
        a.bytes[0] = 0x20;
        a.bytes[1] = 0x01;
        a.bytes[2] = 0x0d;
        a.bytes[3] = 0xb8;
        a.bytes[15] = n;
    } else {
        a.bytes[0] = 192;
        a.bytes[2] = 2;
        a.bytes[3] = n;
    }
    return a;
}

static void key_of(const char *host, char key[DNS_RESOLVE_HOST_MAX + 1])
{
    dns_cache_key(host, strlen(host), key);
}

/* Stores one IPv4 address, 192.0.2.n, under host's key. */
static void store1(dns_cache_t *c, const char *host, uint8_t n, int ttl_s, uint64_t now)
{
    char key[DNS_RESOLVE_HOST_MAX + 1];
    dns_cache_addr_t a = addr(0, n);

    key_of(host, key);
    dns_cache_store(c, key, &a, 1, ttl_s, now);
}

/* Looks host up at now: returns the count, and the first address's last byte in *n. */
static size_t lookup(dns_cache_t *c, const char *host, uint64_t now, uint8_t *n)
{
    char key[DNS_RESOLVE_HOST_MAX + 1];
    dns_cache_addr_t out[DNS_RESOLVE_ADDRS_MAX];
    size_t got;

    key_of(host, key);
    got = dns_cache_lookup(c, key, now, out);
    if (got > 0 && n != NULL)
        *n = out[0].family == AF_INET ? out[0].bytes[3] : out[0].bytes[15];
    return got;
}

static int hit(dns_cache_t *c, const char *host, uint64_t now)
{
    return lookup(c, host, now, NULL) > 0;
}

/* ---- tests ---- */

static void test_dns_cache_key_normalized(void **state)
{
    static const struct {
        const char *host;
        const char *key;
    } cases[] = {
        {"example.com", "example.com"},
        {"Example.COM", "example.com"},
        {"EXAMPLE.COM.", "example.com"},
        {"a.", "a"},
        {"a..", "a."}, /* one trailing dot only */
        {".", "."},    /* the root stays itself */
        {"A", "a"},
        {"Mixed-9.Host_x.", "mixed-9.host_x"},
        {"[@]^_`{", "[@]^_`{"}, /* only A-Z change */
    };
    char key[DNS_RESOLVE_HOST_MAX + 1];
    char host[DNS_RESOLVE_HOST_MAX + 1];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        key_of(cases[i].host, key);
        assert_string_equal(key, cases[i].key);
    }
    /* only host[0..len) is read */
    dns_cache_key("ABC.DEF", 3, key);
    assert_string_equal(key, "abc");
    /* the longest name accepted, with its trailing dot */
    memset(host, 'X', DNS_RESOLVE_HOST_MAX - 1);
    host[DNS_RESOLVE_HOST_MAX - 1] = '.';
    dns_cache_key(host, DNS_RESOLVE_HOST_MAX, key);
    assert_int_equal(strlen(key), DNS_RESOLVE_HOST_MAX - 1);
    assert_int_equal(key[0], 'x');
    assert_int_equal(key[DNS_RESOLVE_HOST_MAX - 2], 'x');
}

static void test_dns_cache_case_and_dot_variants(void **state)
{
    dns_cache_t *c = *state;
    uint8_t n = 0;

    assert_false(hit(c, "www.example.com", T0));
    store1(c, "WWW.Example.com.", 7, 60, T0);
    assert_int_equal(lookup(c, "www.example.com", T0, &n), 1);
    assert_int_equal(n, 7);
    assert_true(hit(c, "www.example.com.", T0));
    assert_true(hit(c, "WWW.EXAMPLE.COM", T0));
    assert_true(hit(c, "wWw.ExAmPlE.cOm.", T0));
    /* other names */
    assert_false(hit(c, "www.example.com..", T0));
    assert_false(hit(c, "www.example.co", T0));
    assert_false(hit(c, "example.com", T0));
    /* storing a variant replaces the one entry */
    store1(c, "www.example.com", 8, 60, T0);
    assert_int_equal(lookup(c, "WWW.EXAMPLE.COM.", T0, &n), 1);
    assert_int_equal(n, 8);
}

static void test_dns_cache_ttl_expiry(void **state)
{
    dns_cache_t *c = *state;

    store1(c, "a.test", 1, 30, T0);
    assert_true(hit(c, "a.test", T0));
    assert_true(hit(c, "a.test", T0 + 30 * 1000 - 1));
    assert_false(hit(c, "a.test", T0 + 30 * 1000));
    /* the expired entry was freed, not only hidden */
    assert_false(hit(c, "a.test", T0));

    store1(c, "b.test", 2, 1, T0);
    assert_true(hit(c, "b.test", T0 + 999));
    assert_false(hit(c, "b.test", T0 + 1000));
}

static void test_dns_cache_ttl_capped(void **state)
{
    dns_cache_t *c = *state;

    store1(c, "day.test", 1, 86400, T0);
    assert_true(hit(c, "day.test", T0 + TTL_MAX_MS - 1));
    assert_false(hit(c, "day.test", T0 + TTL_MAX_MS));

    store1(c, "max.test", 2, DNS_RESOLVE_CACHE_TTL_MAX_S, T0);
    assert_true(hit(c, "max.test", T0 + TTL_MAX_MS - 1));
    assert_false(hit(c, "max.test", T0 + TTL_MAX_MS));

    store1(c, "huge.test", 3, 0x7fffffff, T0);
    assert_true(hit(c, "huge.test", T0 + TTL_MAX_MS - 1));
    assert_false(hit(c, "huge.test", T0 + TTL_MAX_MS));
}

static void test_dns_cache_store_ignored(void **state)
{
    dns_cache_t *c = *state;
    dns_cache_addr_t a = addr(0, 1);
    dns_cache_addr_t out[DNS_RESOLVE_ADDRS_MAX];
    char key[DNS_RESOLVE_HOST_MAX + 2];

    store1(c, "zero.test", 1, 0, T0);
    store1(c, "negative.test", 1, -5, T0);
    assert_false(hit(c, "zero.test", T0));
    assert_false(hit(c, "negative.test", T0));

    dns_cache_store(c, "none.test", &a, 0, 60, T0);
    assert_false(hit(c, "none.test", T0));

    dns_cache_store(c, "", &a, 1, 60, T0);
    assert_int_equal(dns_cache_lookup(c, "", T0, out), 0);

    memset(key, 'k', DNS_RESOLVE_HOST_MAX + 1);
    key[DNS_RESOLVE_HOST_MAX + 1] = '\0';
    dns_cache_store(c, key, &a, 1, 60, T0); /* longer than any key */
    assert_int_equal(dns_cache_lookup(c, key, T0, out), 0);
    key[DNS_RESOLVE_HOST_MAX] = '\0'; /* the longest key is kept */
    dns_cache_store(c, key, &a, 1, 60, T0);
    assert_int_equal(dns_cache_lookup(c, key, T0, out), 1);
}

static void test_dns_cache_lru_eviction(void **state)
{
    dns_cache_t *c = *state;
    char name[32];
    uint8_t n = 0;
    int i;

    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        store1(c, name, (uint8_t)i, 60, T0 + (uint64_t)i);
    }
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        assert_int_equal(lookup(c, name, T0 + 100, &n), 1);
        assert_int_equal(n, i);
    }
    /* use order now h0..h63; using h0 again leaves h1 the least recently used */
    assert_true(hit(c, "h0.test", T0 + 100));
    store1(c, "new.test", 200, 60, T0 + 100);
    assert_false(hit(c, "h1.test", T0 + 100));
    assert_int_equal(lookup(c, "new.test", T0 + 100, &n), 1);
    assert_int_equal(n, 200);
    for (i = 2; i < DNS_RESOLVE_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        assert_true(hit(c, name, T0 + 100));
    }
    assert_true(hit(c, "h0.test", T0 + 100));
    /* least recently used now: new.test (h2..h63 and h0 were used after it) */
    store1(c, "newer.test", 201, 60, T0 + 100);
    assert_false(hit(c, "new.test", T0 + 100));
    assert_true(hit(c, "newer.test", T0 + 100));
    assert_true(hit(c, "h0.test", T0 + 100));
    assert_true(hit(c, "h2.test", T0 + 100));
}

static void test_dns_cache_expired_before_lru(void **state)
{
    dns_cache_t *c = *state;
    char name[32];
    int i;

    /* a full cache whose most recently used entry has the shortest TTL */
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        store1(c, name, (uint8_t)i, i == 10 ? 1 : 60, T0);
    }
    assert_true(hit(c, "h10.test", T0));
    store1(c, "new.test", 200, 60, T0 + 1000);
    assert_true(hit(c, "new.test", T0 + 1000));
    /* it took the expired entry's place: everything else is still there */
    for (i = 0; i < DNS_RESOLVE_CACHE_MAX; i++) {
        snprintf(name, sizeof(name), "h%d.test", i);
        assert_int_equal(hit(c, name, T0 + 1000), i != 10);
    }
}

static void test_dns_cache_disable_empties(void **state)
{
    dns_cache_t *c = *state;

    store1(c, "a.test", 1, 60, T0);
    store1(c, "b.test", 2, 60, T0);
    assert_true(hit(c, "a.test", T0));

    dns_cache_set_enabled(c, 0);
    assert_false(hit(c, "a.test", T0));
    store1(c, "c.test", 3, 60, T0); /* ignored while off */
    assert_false(hit(c, "c.test", T0));

    dns_cache_set_enabled(c, 1);
    assert_false(hit(c, "a.test", T0)); /* emptied, not only hidden */
    assert_false(hit(c, "b.test", T0));
    assert_false(hit(c, "c.test", T0));
    store1(c, "a.test", 1, 60, T0);
    assert_true(hit(c, "a.test", T0));

    dns_cache_set_enabled(c, 42); /* any non-zero is on; it stays filled */
    assert_true(hit(c, "a.test", T0));
}

static void test_dns_cache_addrs_copied(void **state)
{
    dns_cache_t *c = *state;
    dns_cache_addr_t in[DNS_RESOLVE_ADDRS_MAX + 1];
    dns_cache_addr_t saved[DNS_RESOLVE_ADDRS_MAX + 1];
    dns_cache_addr_t out[DNS_RESOLVE_ADDRS_MAX];
    dns_cache_addr_t poison;
    size_t i;

    memset(&poison, 0xA5, sizeof(poison));
    in[0] = addr(0, 1);
    in[1] = addr(1, 2);
    in[2] = addr(0, 3);
    memcpy(saved, in, sizeof(in));
    dns_cache_store(c, "three.test", in, 3, 60, T0);
    memset(in, 0, sizeof(in)); /* the cache kept its own copy */

    for (i = 0; i < DNS_RESOLVE_ADDRS_MAX; i++)
        out[i] = poison;
    assert_int_equal(dns_cache_lookup(c, "three.test", T0, out), 3);
    assert_memory_equal(out, saved, 3 * sizeof(out[0]));
    assert_int_equal(out[1].family, AF_INET6);
    for (i = 3; i < DNS_RESOLVE_ADDRS_MAX; i++)
        assert_memory_equal(&out[i], &poison, sizeof(poison)); /* nothing past the count */

    /* a full set, and one more than is kept */
    for (i = 0; i < DNS_RESOLVE_ADDRS_MAX + 1; i++)
        in[i] = addr((int)(i & 1), (uint8_t)(i + 1));
    memcpy(saved, in, sizeof(in));
    dns_cache_store(c, "full.test", in, DNS_RESOLVE_ADDRS_MAX, 60, T0);
    dns_cache_store(c, "over.test", in, DNS_RESOLVE_ADDRS_MAX + 1, 60, T0);
    assert_int_equal(dns_cache_lookup(c, "full.test", T0, out), DNS_RESOLVE_ADDRS_MAX);
    assert_memory_equal(out, saved, sizeof(out));
    assert_int_equal(dns_cache_lookup(c, "over.test", T0, out), DNS_RESOLVE_ADDRS_MAX);
    assert_memory_equal(out, saved, sizeof(out));

    /* storing the name again replaces the set and its count */
    dns_cache_store(c, "full.test", &saved[5], 1, 60, T0);
    for (i = 0; i < DNS_RESOLVE_ADDRS_MAX; i++)
        out[i] = poison;
    assert_int_equal(dns_cache_lookup(c, "full.test", T0, out), 1);
    assert_memory_equal(&out[0], &saved[5], sizeof(out[0]));
    assert_memory_equal(&out[1], &poison, sizeof(poison));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns_cache_key_normalized),
        cmocka_unit_test_setup_teardown(test_dns_cache_case_and_dot_variants, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_ttl_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_ttl_capped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_store_ignored, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_lru_eviction, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_expired_before_lru, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_disable_empties, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dns_cache_addrs_copied, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
