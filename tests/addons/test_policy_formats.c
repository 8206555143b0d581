/* The allowlist formats (issue 18): the same decisions for the same hosts whichever format
 * wrote them (native YAML, domain list, agentbox TOML, and the --print-effective text read back),
 * block entries, detection, every reader error with its file:line:col, and the documented
 * examples of Squid (dstdomain file) and agentbox (.agentbox/config.toml with allow_file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_policy.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define DATA_DIR AIRLOCK_TEST_DIR "/addons/data/"
#define ERR_MAX 1024

/* agentbox's default hosts, written out in the other formats' versions of a policy. */
#define AB_DEFAULTS_YAML                                                                           \
    "api.openai.com, platform.openai.com, chatgpt.com, chat.openai.com, auth.openai.com, "         \
    "api.anthropic.com"
#define AB_DEFAULTS_LIST                                                                           \
    "api.openai.com\nplatform.openai.com\nchatgpt.com\nchat.openai.com\nauth.openai.com\n"         \
    "api.anthropic.com\n"

static const char *const fmt_names[] = {"auto", "native", "domain-list", "agentbox"};

static addon_policy_t *load_as(const char *name, const char *text, addon_policy_format_t fmt)
{
    addon_policy_t *p = NULL;
    char err[ERR_MAX];
    int rc = addon_policy_load_buffer_as(name, text, strlen(text), fmt, &p, err, sizeof(err));
    if (rc != 0)
        print_error("%s (%s) did not load: %s\n", name, fmt_names[fmt], err);
    assert_int_equal(rc, 0);
    assert_non_null(p);
    return p;
}

static int allowed(const addon_policy_t *p, const char *method, const char *host, const char *path,
                   uint16_t port)
{
    addon_policy_query_t q = {
        .method = {method, strlen(method)},
        .host = {host, strlen(host)},
        .path = {path, strlen(path)},
        .port = port,
        .tls = 1,
    };
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    return d.allowed;
}

/* The effective text of p, loaded back as a native allowlist. */
static addon_policy_t *reload_effective(const addon_policy_t *p)
{
    size_t need = addon_policy_print_effective(p, NULL, 0);
    char *text = malloc(need + 1);
    assert_non_null(text);
    assert_int_equal(addon_policy_print_effective(p, text, need + 1), need);
    addon_policy_t *q = NULL;
    char err[ERR_MAX];
    int rc = addon_policy_load_buffer_as("effective.yaml", text, need, ADDON_POLICY_FORMAT_AUTO, &q,
                                         err, sizeof(err));
    if (rc != 0)
        print_error("effective text did not load: %s\n%s", err, text);
    assert_int_equal(rc, 0);
    assert_int_equal(addon_policy_format_of(q), ADDON_POLICY_FORMAT_NATIVE);
    free(text);
    return q;
}

/* ---- equivalence ------------------------------------------------------------------------ */

typedef struct host_want {
    const char *host;
    uint16_t port;
    int allowed;
} host_want_t;

typedef struct equiv_case {
    const char *what;
    const char *native;      /* airlock YAML */
    const char *domain_list; /* NULL: the policy has no domain-list form (blocks, ports) */
    const char *agentbox;    /* its [network] table */
    host_want_t hosts[12];
} equiv_case_t;

static const equiv_case_t equiv_cases[] = {
    {"leading dot covers the apex and every subdomain",
     "domains: [" AB_DEFAULTS_YAML ", .github.com]\n",
     "# a comment\n" AB_DEFAULTS_LIST ".github.com\n",
     "[network]\nmode = \"allowlist\"\nallow_hosts = [\".github.com\"]\n",
     {{"github.com", 443, 1},
      {"api.github.com", 443, 1},
      {"a.b.github.com", 443, 1},
      {"GitHub.COM", 443, 1},
      {"github.com.", 443, 1},
      {"API.github.com.", 443, 1},
      {"notgithub.com", 443, 0},
      {"github.com.evil", 443, 0},
      {".github.com", 443, 0},
      {"github.com", 8443, 0},
      {NULL, 0, 0}}},
    {"leading dot = the name plus *.name",
     "domains: [" AB_DEFAULTS_YAML ", github.com, \"*.github.com\"]\n",
     AB_DEFAULTS_LIST "github.com\n*.github.com\n",
     "[network]\nallow_hosts = [\"github.com\", \"*.github.com\"]\n",
     {{"github.com", 443, 1},
      {"api.github.com", 443, 1},
      {"a.b.github.com", 443, 1},
      {"GitHub.COM", 443, 1},
      {"notgithub.com", 443, 0},
      {NULL, 0, 0}}},
    {"*. does not cover the apex (as before)",
     "domains: [" AB_DEFAULTS_YAML ", \"*.github.com\"]\n",
     AB_DEFAULTS_LIST "*.github.com\n",
     "[network]\nallow_hosts = [\"*.github.com\"]\n",
     {{"github.com", 443, 0},
      {"api.github.com", 443, 1},
      {"API.GITHUB.COM.", 443, 1},
      {"notgithub.com", 443, 0},
      {NULL, 0, 0}}},
    {"case and trailing dots of patterns",
     "domains: [" AB_DEFAULTS_YAML ", Example.COM., .Sub.Example.ORG.]\n",
     AB_DEFAULTS_LIST "Example.COM.\n.Sub.Example.ORG.\n",
     "[network]\nallow_hosts = [\"Example.COM.\", \".Sub.Example.ORG.\"]\n",
     {{"example.com", 443, 1},
      {"EXAMPLE.com.", 443, 1},
      {"www.example.com", 443, 0},
      {"sub.example.org", 443, 1},
      {"a.SUB.example.org.", 443, 1},
      {"example.org", 443, 0},
      {NULL, 0, 0}}},
    {"IDN names become punycode (A-labels)",
     "domains: [" AB_DEFAULTS_YAML ", bücher.example, .München.de, xn--caf-dma.example]\n",
     AB_DEFAULTS_LIST "bücher.example\n.München.de\nxn--caf-dma.example\n",
     "[network]\nallow_hosts = [\"bücher.example\", \".München.de\", \"xn--caf-dma.example\"]\n",
     {{"xn--bcher-kva.example", 443, 1},
      {"XN--BCHER-KVA.example.", 443, 1},
      {"bucher.example", 443, 0},
      {"xn--mnchen-3ya.de", 443, 1},
      {"www.xn--mnchen-3ya.de", 443, 1},
      {"muenchen.de", 443, 0},
      {"xn--caf-dma.example", 443, 1},
      {NULL, 0, 0}}},
    {"IP addresses",
     "domains: [" AB_DEFAULTS_YAML ", 10.0.0.1, \"[2001:db8::1]\"]\n",
     AB_DEFAULTS_LIST "10.0.0.1\n[2001:db8::1]\n",
     "[network]\nallow_hosts = [\"10.0.0.1\", \"2001:db8::1\"]\n",
     {{"10.0.0.1", 443, 1}, {"[2001:db8::1]", 443, 1}, {"10.0.0.2", 443, 0}, {NULL, 0, 0}}},
    {"block globs win over broader allows",
     "block: [\"*.evil.example.com\"]\ndomains: [" AB_DEFAULTS_YAML ", .example.com]\n",
     NULL,
     "[network]\nallow_hosts = [\".example.com\"]\nblock_hosts = [\"*.evil.example.com\"]\n",
     {{"example.com", 443, 1},
      {"www.example.com", 443, 1},
      {"evil.example.com", 443, 1},
      {"a.evil.example.com", 443, 0},
      {"A.EVIL.example.com.", 443, 0},
      {NULL, 0, 0}}},
    {"block_hosts take entries out, defaults too",
     "block: [\"b.*\", \"api.openai.com\"]\n"
     "domains: [platform.openai.com, chatgpt.com, chat.openai.com, auth.openai.com, "
     "api.anthropic.com, a.example]\n",
     NULL,
     "[network]\nallow_hosts = [\"a.example\", \"b.example\"]\n"
     "block_hosts = [\"b.*\", \"api.openai.com\"]\n",
     {{"a.example", 443, 1},
      {"b.example", 443, 0},
      {"api.openai.com", 443, 0},
      {"api.anthropic.com", 443, 1},
      {NULL, 0, 0}}},
    {"per-host ports",
     "domains: [" AB_DEFAULTS_YAML "]\nurl_prefixes:\n  - {host: sso.internal, ports: [443, "
     "8443]}\n",
     NULL,
     "[network]\nallow_hosts = [{ host = \"sso.internal\", ports = [443, 8443] }]\n",
     {{"sso.internal", 443, 1},
      {"sso.internal", 8443, 1},
      {"sso.internal", 9000, 0},
      {"other.internal", 8443, 0},
      {NULL, 0, 0}}},
    {"an empty effective list is no outbound traffic",
     "block: [\"*\"]\n",
     NULL,
     "[network]\nmode = \"allowlist\"\nallow_hosts = [\"a.example\"]\nblock_hosts = [\"*\"]\n",
     {{"a.example", 443, 0}, {"api.anthropic.com", 443, 0}, {NULL, 0, 0}}},
};

static int equiv_check(const equiv_case_t *c, const char *label, const addon_policy_t *p)
{
    int failures = 0;
    for (size_t i = 0; c->hosts[i].host != NULL; i++) {
        const host_want_t *h = &c->hosts[i];
        int got = allowed(p, "GET", h->host, "/", h->port);
        if (got != h->allowed) {
            print_error("%s [%s]: %s:%u %s, want %s\n", c->what, label, h->host, h->port,
                        got ? "allowed" : "blocked", h->allowed ? "allowed" : "blocked");
            failures++;
        }
    }
    addon_policy_t *back = reload_effective(p);
    for (size_t i = 0; c->hosts[i].host != NULL; i++) {
        const host_want_t *h = &c->hosts[i];
        if (allowed(back, "GET", h->host, "/", h->port) != h->allowed) {
            print_error("%s [%s, print-effective read back]: %s:%u differs\n", c->what, label,
                        h->host, h->port);
            failures++;
        }
    }
    addon_policy_unref(back);
    return failures;
}

static void test_policy_formats_equivalence(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(equiv_cases) / sizeof(equiv_cases[0]); i++) {
        const equiv_case_t *c = &equiv_cases[i];
        addon_policy_t *p = load_as("al.yaml", c->native, ADDON_POLICY_FORMAT_AUTO);
        assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_NATIVE);
        failures += equiv_check(c, "native", p);
        addon_policy_unref(p);
        if (c->domain_list != NULL) {
            p = load_as("allowlist.txt", c->domain_list, ADDON_POLICY_FORMAT_AUTO);
            assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_DOMAIN_LIST);
            failures += equiv_check(c, "domain-list", p);
            addon_policy_unref(p);
        }
        p = load_as("config.toml", c->agentbox, ADDON_POLICY_FORMAT_AUTO);
        assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_AGENTBOX);
        failures += equiv_check(c, "agentbox", p);
        addon_policy_unref(p);
    }
    assert_int_equal(failures, 0);
}

/* ---- block entries in airlock's format -------------------------------------------------- */

static void test_policy_formats_block(void **state)
{
    (void)state;
    addon_policy_t *p = load_as("al.yaml",
                                "block:\n"
                                "  - \"*.evil.example\"\n"
                                "  - host: api.github.com\n"
                                "    path: /repos/*/delete*\n"
                                "    methods: [DELETE]\n"
                                "domains: [api.github.com, .evil.example]\n",
                                ADDON_POLICY_FORMAT_NATIVE);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_BLOCKS), 2);
    assert_int_equal(allowed(p, "GET", "api.github.com", "/repos/o/delete-me", 443), 1);
    assert_int_equal(allowed(p, "DELETE", "api.github.com", "/repos/o/keep", 443), 1);
    assert_int_equal(allowed(p, "delete", "api.github.com", "/repos/o/delete-me", 443), 0);
    assert_int_equal(allowed(p, "GET", "evil.example", "/", 443), 1);
    assert_int_equal(allowed(p, "GET", "x.evil.example", "/", 443), 0);

    addon_policy_query_t q = {.method = {"DELETE", 6},
                              .host = {"api.github.com", 14},
                              .path = {"/repos/o/delete%2dme", 20},
                              .port = 443,
                              .tls = 1};
    addon_policy_decision_t d;
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.verdict, ADDON_POLICY_BLOCK_LISTED);
    assert_int_equal(d.kind, ADDON_POLICY_BLOCKS);
    assert_int_equal(d.index, 1);
    assert_int_equal(d.method_message, 0);
    char buf[512];
    addon_policy_explain(p, &q, &d, buf, sizeof(buf));
    assert_string_equal(buf, "blocked by block[1] (host api.github.com, path /repos/*/delete*, "
                             "methods DELETE; al.yaml:3)");
    addon_policy_block_message(p, d.index, buf, sizeof(buf));
    assert_string_equal(buf, "This request matches block[1] (host api.github.com, path "
                             "/repos/*/delete*, methods DELETE; written at al.yaml:3) in the "
                             "network allowlist's block list, which wins over every allow entry. "
                             "To request access, ask the user to remove or narrow that block "
                             "entry.");

    /* CONNECT: a host-only block refuses the tunnel; a path or method block does not. */
    size_t bi = 99;
    assert_int_equal(addon_policy_host_blocked(p, (addon_str_t){"a.EVIL.example.", 15}, &bi), 1);
    assert_int_equal(bi, 0);
    assert_int_equal(addon_policy_has_host(p, (addon_str_t){"a.evil.example", 14}, 443, 1, NULL),
                     0);
    assert_int_equal(addon_policy_host_blocked(p, (addon_str_t){"api.github.com", 14}, NULL), 0);
    assert_int_equal(addon_policy_has_host(p, (addon_str_t){"api.github.com", 14}, 443, 1, NULL),
                     1);

    addon_policy_describe(p, buf, sizeof(buf));
    assert_string_equal(buf, "al.yaml: 2 domains, 0 url_prefixes, 2 block entries\n"
                             "block[0] host *.evil.example, path any, methods any\n"
                             "block[1] host api.github.com, path /repos/*/delete*, methods DELETE\n"
                             "domains[0] api.github.com\n"
                             "domains[1] .evil.example\n");
    addon_policy_unref(p);
}

/* ---- detection -------------------------------------------------------------------------- */

typedef struct detect_case {
    const char *text;
    addon_policy_format_t want;
} detect_case_t;

static const detect_case_t detect_cases[] = {
    {"", ADDON_POLICY_FORMAT_NATIVE},
    {"# only a comment\n\n", ADDON_POLICY_FORMAT_NATIVE},
    {"domains: [a.com]\n", ADDON_POLICY_FORMAT_NATIVE},
    {"# allowlist\nurl_prefixes:\n  - host: a.com\n    path: /x?a=b\n", ADDON_POLICY_FORMAT_NATIVE},
    {"{\"domains\": [\"a.com\"]}", ADDON_POLICY_FORMAT_NATIVE},
    {"---\ndomains: []\n", ADDON_POLICY_FORMAT_NATIVE},
    {"- a.com\n", ADDON_POLICY_FORMAT_NATIVE},
    {"\"block\": []\n", ADDON_POLICY_FORMAT_NATIVE},
    {"a.com\n", ADDON_POLICY_FORMAT_DOMAIN_LIST},
    {"\xef\xbb\xbf.github.com\r\npypi.org\r\n", ADDON_POLICY_FORMAT_DOMAIN_LIST},
    {"  # x\n.github.com # code\n", ADDON_POLICY_FORMAT_DOMAIN_LIST},
    {"2001:db8::1\n10.0.0.1\n", ADDON_POLICY_FORMAT_DOMAIN_LIST},
    {"*.github.com\n", ADDON_POLICY_FORMAT_DOMAIN_LIST},
    {"[network]\nallow_hosts = []\n", ADDON_POLICY_FORMAT_AGENTBOX},
    {"docker_networks = [\"x\"]\n\n[network]\n", ADDON_POLICY_FORMAT_AGENTBOX},
    {"[ network ] # c\n", ADDON_POLICY_FORMAT_AGENTBOX},
    {"network.allow_hosts = [\"a\"]\n", ADDON_POLICY_FORMAT_AGENTBOX},
    {"[[profiles]]\nname = \"x\"\n", ADDON_POLICY_FORMAT_AGENTBOX},
};

static void test_policy_formats_detect(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(detect_cases) / sizeof(detect_cases[0]); i++) {
        const detect_case_t *c = &detect_cases[i];
        addon_policy_format_t got = addon_policy_format_detect(c->text, strlen(c->text));
        if (got != c->want) {
            print_error("case %zu: %s, want %s\n", i, fmt_names[got], fmt_names[c->want]);
            failures++;
        }
    }
    assert_int_equal(failures, 0);
    addon_policy_format_t f;
    assert_int_equal(addon_policy_format_parse("domain-list", &f), 0);
    assert_int_equal(f, ADDON_POLICY_FORMAT_DOMAIN_LIST);
    assert_int_equal(addon_policy_format_parse("toml", &f), PX_ECONFIG);
    assert_string_equal(addon_policy_format_name(ADDON_POLICY_FORMAT_AGENTBOX), "agentbox");

    /* A forced format wins over detection: a bare name is a (wrong) YAML document. */
    addon_policy_t *p = NULL;
    char err[ERR_MAX];
    assert_int_equal(addon_policy_load_buffer_as("x.yaml", "a.com\n", 6, ADDON_POLICY_FORMAT_NATIVE,
                                                 &p, err, sizeof(err)),
                     PX_ECONFIG);
    assert_null(p);
    p = load_as("x.txt", "domains: [a.com]\n", ADDON_POLICY_FORMAT_AUTO);
    assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_NATIVE);
    addon_policy_unref(p);
    assert_int_equal(addon_policy_load_buffer_as("x.txt", "domains: [a.com]\n", 17,
                                                 ADDON_POLICY_FORMAT_DOMAIN_LIST, &p, err,
                                                 sizeof(err)),
                     PX_ECONFIG);
    assert_string_equal(err, "x.txt:1:10: one host per line (a second word here; comments start "
                             "with '#')");
}

/* ---- errors ----------------------------------------------------------------------------- */

typedef struct format_error_case {
    const char *name;
    addon_policy_format_t fmt;
    const char *text;
    int rc;
    const char *msg; /* exact, or a prefix when it ends with '*' */
} format_error_case_t;

static const format_error_case_t format_error_cases[] = {
    /* domain list */
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a.example\n  b.example critical\n", PX_ECONFIG,
     "l.txt:2:13: one host per line (a second word here; comments start with '#')"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "# x\n\n\ta.example:8443\n", PX_ECONFIG,
     "l.txt:3:2: host pattern contains a port (list it under 'ports')"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "https://a.example/\n", PX_ECONFIG,
     "l.txt:1:1: host pattern contains '/' (put the path in 'path')"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a.example/x\n", PX_ECONFIG,
     "l.txt:1:1: host pattern contains '/' (put the path in 'path')"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "ok.example\n.\n", PX_ECONFIG,
     "l.txt:2:1: empty host pattern"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a\x01.example\n", PX_ECONFIG,
     "l.txt:1:1: host pattern contains a space or control character"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST,
     "b\xfc"
     "cher.example\n",
     PX_ECONFIG, "l.txt:1:1: not a valid internationalized name"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST,
     "*.b\xc3\xbc"
     "cher*.example\n",
     PX_ECONFIG,
     "l.txt:1:1: a label with '*' or '?' must be ASCII (write the name's other labels in any "
     "script, or this one in punycode)"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a..example\n", PX_ECONFIG,
     "l.txt:1:1: host pattern has an empty label (two dots in a row, or a dot at an end)"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a.example..\n", PX_ECONFIG,
     "l.txt:1:1: host pattern has an empty label (two dots in a row, or a dot at an end)"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a.exa:mple\n", PX_ECONFIG,
     "l.txt:1:1: host pattern with ':' is not an IPv6 address"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST,
     "a\xef\xbc\x9a"
     "80.example\n",
     PX_ECONFIG, "l.txt:1:1: not a valid internationalized name (a character maps to punctuation)"},
    {"l.txt", ADDON_POLICY_FORMAT_DOMAIN_LIST, "a.\xef\xbb\xbf.example\n", PX_ECONFIG,
     "l.txt:1:1: host pattern has an empty label (two dots in a row, or a dot at an end)"},
    /* agentbox */
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network\n", PX_EPARSE, "c.toml:1:*"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[\x04network]\n", PX_EPARSE,
     "c.toml:1:2: control characters are not allowed in TOML (byte 0x04)"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "# \xc2\xa1 ok\n[network]\nmode = \"\xff\"\n",
     PX_EPARSE, "c.toml:3:9: invalid UTF-8 (byte 0xff)"},
    /* toml++ 3.3 reached __builtin_unreachable on these (tomlplusplus#190): now its own errors */
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_hosts = [\xc2\xa1]\n", PX_EPARSE,
     "c.toml:2:16:*"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nmode =1\"\xef\xbb\xbb\"\n", PX_EPARSE,
     "c.toml:2:*"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "a = 1\n", PX_ECONFIG,
     "c.toml:1:1: no [network] table (an agentbox config keeps its allowlist there: mode = "
     "\"allowlist\", allow_hosts, block_hosts, allow_file)"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "network = 5\n", PX_ECONFIG,
     "c.toml:1:11: network: expected a table, got an integer"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nmode = \"open\"\n", PX_ECONFIG,
     "c.toml:2:8: network.mode: 'open' is not supported by airlock, which enforces an allowlist "
     "(write mode = \"allowlist\")"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nmode = 1\n", PX_ECONFIG,
     "c.toml:2:8: network.mode: expected a string, got an integer"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_host = []\n", PX_ECONFIG,
     "c.toml:2:1: network: unknown key 'allow_host' (expected mode, allow_hosts, block_hosts or "
     "allow_file)"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_hosts = \"a.example\"\n", PX_ECONFIG,
     "c.toml:2:15: network.allow_hosts: expected an array, got a string"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_hosts = [\"a.example\", 5]\n",
     PX_ECONFIG,
     "c.toml:2:29: network.allow_hosts[1]: expected a host string or {host = \"...\", ports = "
     "[...]}, got an integer"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nblock_hosts = [{host = \"a\"}]\n",
     PX_ECONFIG, "c.toml:2:16: network.block_hosts[0]: expected a host string, got a table"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_hosts = [{host = \"a\", port = 1}]\n", PX_ECONFIG,
     "c.toml:2:29: network.allow_hosts[0]: unknown key 'port' (expected host or ports)"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_hosts = [{ports = [1]}]\n",
     PX_ECONFIG, "c.toml:2:16: network.allow_hosts[0]: missing required key 'host'"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_hosts = [{host = \"a\", ports = [443, 0]}]\n", PX_ECONFIG,
     "c.toml:2:43: network.allow_hosts[0].ports[1]: must be between 1 and 65535, got 0"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_hosts = [{host = \"a\", ports = \"443\"}]\n", PX_ECONFIG,
     "c.toml:2:37: network.allow_hosts[0].ports: expected an array of ports, got a string"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_hosts = [\"ok.example\",\n  \"a.example:8443\"]\n", PX_ECONFIG,
     "c.toml:3:3: network.allow_hosts[1]: host pattern contains a port (list it under 'ports')"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nblock_hosts = [\"\"]\n", PX_ECONFIG,
     "c.toml:2:16: network.block_hosts[0]: empty host pattern"},
    {"c.toml", ADDON_POLICY_FORMAT_AGENTBOX, "[network]\nallow_file = [\"x\"]\n", PX_ECONFIG,
     "c.toml:2:14: network.allow_file: expected a string, got an array"},
    {DATA_DIR "c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_file = \"no-such-hosts.txt\"\n", PX_ECONFIG,
     DATA_DIR "c.toml:2:14: network.allow_file: " DATA_DIR
              "no-such-hosts.txt: No such file or directory"},
    {DATA_DIR "c.toml", ADDON_POLICY_FORMAT_AGENTBOX,
     "[network]\nallow_file = \"agentbox/bad-hosts.txt\"\n", PX_ECONFIG,
     DATA_DIR "agentbox/bad-hosts.txt:3:1: host pattern contains '/' (put the path in 'path')"},
    /* YAML reads an unquoted leading '*' as an alias: the message says to quote the pattern */
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "domains:\n  - *.pypi.org\n", PX_EPARSE,
     "al.yaml:2:6: did not find expected alphabetic or numeric character (while scanning an "
     "alias at line 2, column 5): quote host patterns that start with `*` (\"*.example.com\")"},
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "url_prefixes:\n  - host: *.github.com\n", PX_EPARSE,
     "al.yaml:2:12: did not find expected alphabetic or numeric character (while scanning an "
     "alias at line 2, column 11): quote host patterns that start with `*` (\"*.example.com\")"},
    /* airlock's block list */
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "block: a.com\n", PX_ECONFIG,
     "al.yaml:1:8: block: expected a sequence, got a string"},
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "block: [5]\n", PX_ECONFIG,
     "al.yaml:1:9: block[0]: expected a host pattern or a mapping with 'host' (and 'path', "
     "'methods'), got an integer"},
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "block:\n  - {path: /x}\n", PX_ECONFIG,
     "al.yaml:2:5: block[0]: missing required key 'host'"},
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "block:\n  - {host: a.com, ports: [1]}\n", PX_ECONFIG,
     "al.yaml:2:19: block[0]: unknown key 'ports' (expected host, path, methods or mode)"},
    {"al.yaml", ADDON_POLICY_FORMAT_NATIVE, "block:\n  - {host: a.com, methods: [\"G T\"]}\n",
     PX_ECONFIG,
     "al.yaml:2:29: block[0].methods[0]: a method is an HTTP token (letters, digits, "
     "!#$%&'*+-.^_`|~)"},
};

static void test_policy_formats_errors(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(format_error_cases) / sizeof(format_error_cases[0]); i++) {
        const format_error_case_t *c = &format_error_cases[i];
        addon_policy_t *p = NULL;
        char err[ERR_MAX];
        int rc = addon_policy_load_buffer_as(c->name, c->text, strlen(c->text), c->fmt, &p, err,
                                             sizeof(err));
        size_t ml = strlen(c->msg);
        int ok =
            rc == c->rc && p == NULL &&
            (c->msg[ml - 1] == '*' ? strncmp(err, c->msg, ml - 1) == 0 : strcmp(err, c->msg) == 0);
        if (!ok) {
            print_error("case %zu: rc %d (want %d)\n  got:  %s\n  want: %s\n", i, rc, c->rc, err,
                        c->msg);
            failures++;
        }
        addon_policy_unref(p);
    }
    assert_int_equal(failures, 0);
}

/* ---- the projects' documented examples -------------------------------------------------- */

static void test_policy_formats_squid_example(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[ERR_MAX];
    assert_int_equal(
        addon_policy_load_file(DATA_DIR "squid_allowed_sites.txt", &p, err, sizeof(err)), 0);
    assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_DOMAIN_LIST);
    /* Squid: ".foo.com" matches foo.com and every name under it; "foo.com" only itself. */
    static const host_want_t want[] = {
        {"squid-cache.org", 443, 1},   {"www.squid-cache.org", 443, 1},
        {"en.wikipedia.org", 443, 1},  {"wikipedia.org", 443, 1},
        {"www.example.com", 443, 1},   {"example.com", 443, 0},
        {"a.www.example.com", 443, 0}, {"github.com", 443, 1},
        {"api.github.com", 443, 1},    {"pypi.org", 443, 1},
        {"www.pypi.org", 443, 0},      {"files.pythonhosted.org", 443, 1},
        {"pythonhosted.org", 443, 0},  {"example.org", 443, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (allowed(p, "GET", want[i].host, "/", want[i].port) != want[i].allowed)
            fail_msg("%s: want %d", want[i].host, want[i].allowed);
    }
    addon_policy_unref(p);
}

static void test_policy_formats_agentbox_example(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[ERR_MAX];
    const char *path = DATA_DIR "agentbox/.agentbox/config.toml";
    int rc = addon_policy_load_file(path, &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_AGENTBOX);
    static const host_want_t want[] = {
        {"api.anthropic.com", 443, 1},                 /* a default, and in allow_hosts */
        {"chatgpt.com", 443, 1},                       /* a default */
        {"auth.openai.com", 443, 1},                   /* a default */
        {"generativelanguage.googleapis.com", 443, 0}, /* not a default */
        {"api.openai.com", 443, 0},                    /* a default and in allow_file: blocked */
        {"github.com", 443, 1},
        {"api.github.com", 443, 0},
        {"raw.githubusercontent.com", 443, 1},
        {"x.evil.githubusercontent.com", 443, 0}, /* a block glob inside an allowed glob */
        {"sso.internal", 8443, 1},
        {"sso.internal", 9443, 0},
        {"registry.npmjs.org", 443, 1}, /* allow_file */
        {"pypi.org", 443, 1},           /* allow_file, leading dot */
        {"files.pypi.org", 443, 1},
        {"example.com", 443, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (allowed(p, "GET", want[i].host, "/", want[i].port) != want[i].allowed)
            fail_msg("%s:%u: want %d", want[i].host, want[i].port, want[i].allowed);
    }
    size_t need = addon_policy_print_effective(p, NULL, 0);
    char *text = malloc(need + 1);
    assert_non_null(text);
    addon_policy_print_effective(p, text, need + 1);
    /* Every entry names its origin; every removal names its block. */
    static const char *const lines[] = {
        "  - \"api.anthropic.com\"  # default; " DATA_DIR
        "agentbox/.agentbox/config.toml:7 (allow_hosts)\n",
        "  - \"chatgpt.com\"  # default\n",
        "  - \"github.com\"  # " DATA_DIR "agentbox/.agentbox/config.toml:7 (allow_hosts)\n",
        "  - \".pypi.org\"  # " DATA_DIR "agentbox/.agentbox/extra-hosts.txt:3 (allow_file)\n",
        "  - host: \"sso.internal\"  # " DATA_DIR "agentbox/.agentbox/config.toml:8 "
        "(allow_hosts)\n    ports: [443, 8443]\n",
        "  - host: \"*.evil.githubusercontent.com\"  # " DATA_DIR
        "agentbox/.agentbox/config.toml:9 (block_hosts)\n",
        "#   api.openai.com (default; " DATA_DIR "agentbox/.agentbox/extra-hosts.txt:4 "
        "(allow_file)) removed by block[0] api.openai.com (" DATA_DIR
        "agentbox/.agentbox/config.toml:9 (block_hosts))\n",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        if (strstr(text, lines[i]) == NULL)
            fail_msg("missing from --print-effective:\n%s\n--- in ---\n%s", lines[i], text);
    }
    free(text);
    addon_policy_unref(p);
}

/* The example `.agentbox/config.toml` of agentbox's network spec, verbatim (its allow_file is
 * ours: the spec names the file without giving its content): the effective list is the spec's
 * defaults, plus allow_hosts and allow_file, minus block_hosts. */
static void test_policy_formats_agentbox_spec_example(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[ERR_MAX];
    const char *path = DATA_DIR "agentbox-spec/.agentbox/config.toml";
    int rc = addon_policy_load_file(path, &p, err, sizeof(err));
    if (rc != 0)
        fail_msg("%s", err);
    assert_int_equal(addon_policy_format_of(p), ADDON_POLICY_FORMAT_AGENTBOX);
    static const host_want_t want[] = {
        {"api.openai.com", 443, 1},
        {"platform.openai.com", 443, 1}, /* defaults */
        {"chat.openai.com", 443, 1},
        {"auth.openai.com", 443, 1},
        {"api.anthropic.com", 443, 1},
        {"chatgpt.com", 443, 0}, /* a default, removed by block_hosts */
        {"api.github.com", 443, 1},
        {"registry.npmjs.org", 443, 1}, /* allow_hosts */
        {"pypi.org", 443, 1},
        {"files.pythonhosted.org", 443, 1}, /* allow_file */
        {"github.com", 443, 0},
        {"generativelanguage.googleapis.com", 443, 0},
        {"www.chatgpt.com", 443, 0},
        {"openai.com", 443, 0},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        if (allowed(p, "GET", want[i].host, "/", want[i].port) != want[i].allowed)
            fail_msg("%s:%u: want %d", want[i].host, want[i].port, want[i].allowed);
    }
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 9);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 0);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_BLOCKS), 1);
    size_t need = addon_policy_print_effective(p, NULL, 0);
    char *text = malloc(need + 1);
    assert_non_null(text);
    addon_policy_print_effective(p, text, need + 1);
    const char *want_start = "# effective allowlist of " DATA_DIR
                             "agentbox-spec/.agentbox/config.toml (read as agentbox)\n"
                             "# agentbox dry run: the final allowlist, (defaults + allow_hosts + "
                             "allow_file) - block_hosts\n";
    if (strncmp(text, want_start, strlen(want_start)) != 0)
        fail_msg("--print-effective starts:\n%s", text);
    if (strstr(text, "#   chatgpt.com (default) removed by block[0] chatgpt.com") == NULL)
        fail_msg("no removal of chatgpt.com in:\n%s", text);
    free(text);
    addon_policy_unref(p);
}

static void test_policy_formats_empty_effective(void **state)
{
    (void)state;
    addon_policy_t *p =
        load_as("c.toml", "[network]\nblock_hosts = [\"*\"]\n", ADDON_POLICY_FORMAT_AUTO);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 0);
    char buf[2048];
    addon_policy_print_effective(p, buf, sizeof(buf));
    assert_string_equal(buf,
                        "# effective allowlist of c.toml (read as agentbox)\n"
                        "# agentbox dry run: the final allowlist, (defaults + allow_hosts + "
                        "allow_file) - block_hosts\n"
                        "# airlock's own format: it loads unchanged with --allowlist. Blocks are "
                        "checked first and win.\n"
                        "block:\n"
                        "  - host: \"*\"  # c.toml:2 (block_hosts)\n"
                        "domains: []\n"
                        "url_prefixes: []\n"
                        "# no allow entries: every request is blocked (no outbound traffic)\n"
                        "# removed from the list by block entries:\n"
                        "#   api.openai.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n"
                        "#   platform.openai.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n"
                        "#   chatgpt.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n"
                        "#   chat.openai.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n"
                        "#   auth.openai.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n"
                        "#   api.anthropic.com (default) removed by block[0] * (c.toml:2 "
                        "(block_hosts))\n");
    addon_policy_unref(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_formats_equivalence),
        cmocka_unit_test(test_policy_formats_block),
        cmocka_unit_test(test_policy_formats_agentbox_spec_example),
        cmocka_unit_test(test_policy_formats_detect),
        cmocka_unit_test(test_policy_formats_errors),
        cmocka_unit_test(test_policy_formats_squid_example),
        cmocka_unit_test(test_policy_formats_agentbox_example),
        cmocka_unit_test(test_policy_formats_empty_effective),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
