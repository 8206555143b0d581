/* addon_policy (and the addon_yaml loader under it): the decision table of docs/allowlist.md and
 * the reference notes §10.2, loading YAML and JSON, every loader error with its exact
 * file:line:col, and the check/explain texts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "addons/addon_policy.h"
#include "base/px_path.h"
#include "addons/addon_yaml.h"
#include "base/px_err.h"

#define DATA_DIR AIRLOCK_TEST_DIR "/addons/data/"

/* ---- the decision table ----------------------------------------------------------------- */

#define AL_EMPTY ""
#define AL_EMPTY_LISTS "domains: []\nurl_prefixes: []\n"
#define AL_A1 "domains: [api.anthropic.com]\n"
#define AL_A4 "url_prefixes:\n  - {host: api.github.com, path: /graphql}\n"
#define AL_A5 "url_prefixes:\n  - {host: api.github.com, path: /repos/foo*}\n"
#define AL_A7 "url_prefixes:\n  - {host: example.com, path: /api/*}\n"
#define AL_A8 "url_prefixes:\n  - {host: example.com, path: /a/b}\n"
#define AL_PLUS "url_prefixes:\n  - {host: example.com, path: /a+b}\n"
#define AL_PCT "url_prefixes:\n  - {host: example.com, path: /50%off}\n"
#define AL_A10 "url_prefixes:\n  - {host: example.com, path: /allowed*}\n"
#define AL_A11 "url_prefixes:\n  - {host: api.github.com, path: /repos/myorg/myrepo*}\n"
#define AL_A14 "domains: [example.com]\n"
#define AL_A15                                                                                     \
    "url_prefixes:\n  - {host: storage.example.com, path: \"\"}\n  - host: blob.example.com\n"
#define AL_A16 "url_prefixes:\n  - {host: api.github.com, path: /graphql, methods: [POST]}\n"
#define AL_A18 "url_prefixes:\n  - {host: api.example.com, path: /data, methods: [GET, POST]}\n"
#define AL_A19 "url_prefixes:\n  - {host: api.example.com, path: /data, methods: [get, post]}\n"
#define AL_A20                                                                                     \
    "url_prefixes:\n"                                                                              \
    "  - {host: api.github.com, path: /graphql, methods: [POST]}\n"                                \
    "  - {host: api.github.com, path: /repos/org*, methods: [GET, HEAD]}\n"
#define AL_A21                                                                                     \
    "url_prefixes:\n"                                                                              \
    "  - {host: api.github.com, path: /graphql, methods: [POST]}\n"                                \
    "  - {host: api.github.com, path: /repos*}\n"
#define AL_A23                                                                                     \
    "url_prefixes:\n"                                                                              \
    "  - {host: \"*\", path: \"\", methods: [GET, HEAD]}\n"                                        \
    "  - {host: api.anthropic.com, path: /v1/messages*, methods: [POST]}\n"                        \
    "  - {host: api.github.com, path: /graphql, methods: [POST]}\n"
#define AL_A24                                                                                     \
    "domains: [trusted.internal.com]\n"                                                            \
    "url_prefixes:\n"                                                                              \
    "  - {host: \"*\", path: \"\", methods: [GET, HEAD]}\n"
#define AL_A25 "url_prefixes:\n  - {host: \"*\", path: /public*, methods: [GET, HEAD]}\n"
#define AL_A27 "url_prefixes:\n  - {host: api.github.com, path: /repos/o/r*}\n"
#define AL_PORTS "url_prefixes:\n  - {host: internal.example, path: \"\", ports: [8443]}\n"
#define AL_DOMPORT                                                                                 \
    "domains: [internal.example]\n"                                                                \
    "url_prefixes:\n  - {host: other.example, ports: [8443]}\n"
#define AL_IP "domains: [\"2001:db8::1\", 10.0.0.1, \"[::1]\"]\n"
#define AL_GLOBHOST "domains: [\"*.github.com\", api?.example.com, \"*github.io\"]\n"
#define AL_CLASS                                                                                   \
    "url_prefixes:\n"                                                                              \
    "  - {host: example.com, path: \"/v[12]/*\"}\n"                                                \
    "  - {host: example.com, path: \"/w[12]\"}\n"                                                  \
    "  - {host: example.com, path: /caf?}\n"
#define AL_PASS "url_prefixes:\n  - {host: git.example, tls: passthrough, ports: [22]}\n"
#define AL_DOTPAT "domains: [\"example.com.\"]\n"
#define AL_V1 "url_prefixes:\n  - {host: example.com, path: /v1/*}\n"
#define AL_UPPER "url_prefixes:\n  - {host: API.Example.COM, path: /X}\n"

enum { ALLOW, B_METHOD, B_PORT, B_PATH, B_HOST, B_NUL, B_BSLASH, B_DOT };
enum { K_NONE, K_DOM, K_URL };

typedef struct policy_case {
    const char *policy;
    const char *method;
    const char *host;
    const char *path;
    size_t path_len;
    uint16_t port;
    int tls;
    int want;
    int kind; /* K_NONE: not checked */
    size_t index;
} policy_case_t;

#define P(s) s, sizeof(s) - 1

static const policy_case_t policy_cases[] = {
    /* A1-A3: domains allow every path and method; host case and one trailing dot. */
    {AL_A1, "GET", "api.anthropic.com", P("/v1/messages"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com", P("/any/path/here"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "other.anthropic.com", P("/v1/messages"), 443, 1, B_HOST, K_NONE, 0},
    {AL_A1, "POST", "api.anthropic.com", P("/v1"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "DELETE", "api.anthropic.com", P("/v1"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "PATCH", "api.anthropic.com", P("/v1"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "API.Anthropic.COM", P("/v1"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com.", P("/v1"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com..", P("/v1"), 443, 1, B_HOST, K_NONE, 0},
    {AL_A1, "GET", "api.anthropic.com", P("/v1"), 80, 0, ALLOW, K_DOM, 0},
    /* Ports: a domains entry allows only the scheme's default port. */
    {AL_A1, "GET", "api.anthropic.com", P("/v1"), 8443, 1, B_PORT, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com", P("/v1"), 443, 0, B_PORT, K_DOM, 0},
    {AL_A1, "GET", "api.anthropic.com", P("/v1"), 80, 1, B_PORT, K_DOM, 0},
    /* A4: exact path; the query is part of the path; paths are case-sensitive. */
    {AL_A4, "GET", "api.github.com", P("/graphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphql/"), 443, 1, B_PATH, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphql/query"), 443, 1, B_PATH, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/repos"), 443, 1, B_PATH, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphql?x=1"), 443, 1, B_PATH, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/GraphQL"), 443, 1, B_PATH, K_URL, 0},
    {AL_A4, "GET", "API.GITHUB.COM", P("/graphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphql"), 8443, 1, B_PORT, K_URL, 0},
    /* A9: percent-decoding before matching. */
    {AL_A4, "GET", "api.github.com", P("/%67raphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphq%6C"), 443, 1, ALLOW, K_URL, 0},
    {AL_A4, "GET", "api.github.com", P("/graphql%3Fx=1"), 443, 1, B_PATH, K_URL, 0},
    /* A5, A6: %2F and traversal after decoding. */
    {AL_A5, "GET", "api.github.com", P("/repos/foo%2Fbar"), 443, 1, ALLOW, K_URL, 0},
    {AL_A5, "GET", "api.github.com", P("/repos/foo%2fbar"), 443, 1, ALLOW, K_URL, 0},
    {AL_A5, "GET", "api.github.com", P("/repos/%2E%2E/secret"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A5, "GET", "api.github.com", P("/repos/foo/%2e%2e"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A5, "GET", "api.github.com", P("/repos/foo%3Fx"), 443, 1, ALLOW, K_URL, 0},
    {AL_A5, "GET", "api.github.com", P("/repos/fo"), 443, 1, B_PATH, K_URL, 0},
    /* A7: %23; a malformed escape stays literal. */
    {AL_A7, "GET", "example.com", P("/api/foo%23bar"), 443, 1, ALLOW, K_URL, 0},
    {AL_A7, "GET", "example.com", P("/api/foo%zzbar"), 443, 1, ALLOW, K_URL, 0},
    {AL_A7, "GET", "example.com", P("/api"), 443, 1, B_PATH, K_URL, 0},
    /* A8: decoded exactly once. */
    {AL_A8, "GET", "example.com", P("/a%252Fb"), 443, 1, B_PATH, K_URL, 0},
    {AL_A8, "GET", "example.com", P("/a%2Fb"), 443, 1, ALLOW, K_URL, 0},
    /* '+' stays '+'; '%' sequences that are not escapes stay literal. */
    {AL_PLUS, "GET", "example.com", P("/a+b"), 443, 1, ALLOW, K_URL, 0},
    {AL_PLUS, "GET", "example.com", P("/a%2Bb"), 443, 1, ALLOW, K_URL, 0},
    {AL_PLUS, "GET", "example.com", P("/a%20b"), 443, 1, B_PATH, K_URL, 0},
    {AL_PCT, "GET", "example.com", P("/50%off"), 443, 1, ALLOW, K_URL, 0},
    {AL_PCT, "GET", "example.com", P("/50%25off"), 443, 1, ALLOW, K_URL, 0},
    {AL_PCT, "GET", "example.com", P("/50%2off"), 443, 1, B_PATH, K_URL, 0},
    /* A10, A13: NUL and backslash, literal and encoded. */
    {AL_A10, "GET", "example.com", P("/allowed%00/../secret"), 443, 1, B_NUL, K_NONE, 0},
    {AL_A10, "GET", "example.com", P("/allowed\0foo"), 443, 1, B_NUL, K_NONE, 0},
    {AL_A10, "GET", "example.com", P("/allowed%5Cfoo"), 443, 1, B_BSLASH, K_NONE, 0},
    {AL_A10, "GET", "example.com", P("/allowed%5cfoo"), 443, 1, B_BSLASH, K_NONE, 0},
    {AL_A10, "GET", "example.com", P("/allowed\\foo"), 443, 1, B_BSLASH, K_NONE, 0},
    {AL_A10, "GET", "example.com", P("/allowed/ok"), 443, 1, ALLOW, K_URL, 0},
    /* A11-A13: traversal. */
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/../../repos/evil/private"), 443, 1,
     B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/%2e%2e/%2e%2e/x"), 443, 1, B_DOT,
     K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/.."), 443, 1, B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/%2E%2E"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/..%2fx"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/.%2e/x"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/x?next=/../y"), 443, 1, ALLOW, K_URL,
     0}, /* the query is not judged */
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/..hidden"), 443, 1, ALLOW, K_URL, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/pulls"), 443, 1, ALLOW, K_URL, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/./pulls"), 443, 1, ALLOW, K_URL, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo/..;/x"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo\\..\\evil"), 443, 1, B_BSLASH, K_NONE,
     0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo%5C..%5Cevil"), 443, 1, B_BSLASH,
     K_NONE, 0},
    {AL_A11, "GET", "api.github.com", P("/repos/myorg/myrepo\\../evil"), 443, 1, B_BSLASH, K_NONE,
     0},
    /* A14: pre-checks beat domains. */
    {AL_A14, "GET", "example.com", P("/a/../b"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A14, "GET", "example.com", P("/a/.."), 443, 1, B_DOT, K_NONE, 0},
    {AL_A14, "GET", "example.com", P("/.."), 443, 1, B_DOT, K_NONE, 0},
    {AL_A14, "GET", "example.com", P("/%2e%2e/x"), 443, 1, B_DOT, K_NONE, 0},
    {AL_A14, "GET", "example.com", P("/a/%00"), 443, 1, B_NUL, K_NONE, 0},
    {AL_A14, "GET", "example.com", P("/a/./b"), 443, 1, ALLOW, K_DOM, 0}, /* apt: "/./" */
    {AL_A14, "GET", "example.com", P("/./InRelease"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A14, "GET", "example.com", P("/a//b"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A14, "GET", "example.com", P(".."), 443, 1, B_DOT, K_NONE, 0},
    /* Dot segments servers resolve: ";parameters" removed, decoded once, query aside. */
    {AL_V1, "GET", "example.com", P("/v1/..;/admin"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/%2e%2e;/admin"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/x/..%3b/admin"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/x/..%3B/admin"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/..?x"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/.?x"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/..;a=b"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/.;x/a"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/%2E"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/./v1/x"), 443, 1, B_PATH, K_URL, 0}, /* as sent: no */
    {AL_V1, "GET", "example.com", P("/v1/x%2f..%2fadmin"), 443, 1, B_DOT, K_NONE, 0},
    {AL_V1, "GET", "example.com", P("/v1/x;..;/a"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/..."), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/..a/b"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/.well-known"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/x?a=..&b=/../c"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/x?a=%2e%2e;"), 443, 1, ALLOW, K_URL, 0},
    {AL_V1, "GET", "example.com", P("/v1/%252e%252e/x"), 443, 1, ALLOW, K_URL, 0},
    /* A15: empty or absent path = any path. */
    {AL_A15, "GET", "storage.example.com", P("/any/path"), 443, 1, ALLOW, K_URL, 0},
    {AL_A15, "GET", "storage.example.com", P("/"), 443, 1, ALLOW, K_URL, 0},
    {AL_A15, "GET", "storage.example.com", P(""), 443, 1, ALLOW, K_URL, 0},
    {AL_A15, "DELETE", "blob.example.com", P("/x?y"), 443, 1, ALLOW, K_URL, 1},
    /* A16-A19: methods, case-insensitive both ways. */
    {AL_A16, "POST", "api.github.com", P("/graphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A16, "GET", "api.github.com", P("/graphql"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A16, "DELETE", "api.github.com", P("/graphql"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A16, "POST", "api.github.com", P("/graphql?x=1"), 443, 1, B_PATH, K_URL, 0},
    {AL_A16, "post", "api.github.com", P("/graphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A16, "GET", "api.github.com", P("/graphql"), 8443, 1, B_PORT, K_URL, 0},
    {AL_A18, "get", "api.example.com", P("/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A18, "Get", "api.example.com", P("/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A18, "post", "api.example.com", P("/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A18, "delete", "api.example.com", P("/data"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A18, "GETX", "api.example.com", P("/data"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A19, "GET", "api.example.com", P("/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A19, "POST", "api.example.com", P("/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A19, "DELETE", "api.example.com", P("/data"), 443, 1, B_METHOD, K_URL, 0},
    /* A20, A21: a method-only miss does not stop the scan. */
    {AL_A20, "POST", "api.github.com", P("/graphql"), 443, 1, ALLOW, K_URL, 0},
    {AL_A20, "GET", "api.github.com", P("/repos/org/foo"), 443, 1, ALLOW, K_URL, 1},
    {AL_A20, "HEAD", "api.github.com", P("/repos/org/foo"), 443, 1, ALLOW, K_URL, 1},
    {AL_A20, "GET", "api.github.com", P("/graphql"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A20, "POST", "api.github.com", P("/repos/org/foo"), 443, 1, B_METHOD, K_URL, 1},
    {AL_A20, "POST", "api.github.com", P("/users"), 443, 1, B_PATH, K_URL, 0},
    {AL_A21, "GET", "api.github.com", P("/repos/foo"), 443, 1, ALLOW, K_URL, 1},
    {AL_A21, "DELETE", "api.github.com", P("/repos/foo"), 443, 1, ALLOW, K_URL, 1},
    {AL_A21, "GET", "api.github.com", P("/graphql"), 443, 1, B_METHOD, K_URL, 0},
    /* A22, A23: a read-only "*" entry first, specific write entries after it. */
    {AL_A23, "GET", "any-domain.com", P("/any/path"), 443, 1, ALLOW, K_URL, 0},
    {AL_A23, "POST", "api.anthropic.com", P("/v1/messages"), 443, 1, ALLOW, K_URL, 1},
    {AL_A23, "GET", "api.anthropic.com", P("/v1/models"), 443, 1, ALLOW, K_URL, 0},
    {AL_A23, "POST", "random-site.com", P("/page"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A23, "PUT", "api.anthropic.com", P("/v1/messages"), 443, 1, B_METHOD, K_URL, 0},
    {AL_A23, "POST", "api.github.com", P("/graphql"), 443, 1, ALLOW, K_URL, 2},
    /* A24: domains are checked before url_prefixes. */
    {AL_A24, "POST", "trusted.internal.com", P("/api"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A24, "DELETE", "trusted.internal.com", P("/api"), 443, 1, ALLOW, K_DOM, 0},
    {AL_A24, "POST", "other.com", P("/api"), 443, 1, B_METHOD, K_URL, 0},
    /* A25: path miss gives the host/path message even when the method would fail too. */
    {AL_A25, "GET", "any-site.com", P("/public/data"), 443, 1, ALLOW, K_URL, 0},
    {AL_A25, "GET", "any-site.com", P("/private/data"), 443, 1, B_PATH, K_URL, 0},
    {AL_A25, "POST", "any-site.com", P("/private/data"), 443, 1, B_PATH, K_URL, 0},
    {AL_A25, "POST", "any-site.com", P("/public/data"), 443, 1, B_METHOD, K_URL, 0},
    /* A27: query strings under a glob, and %3F. */
    {AL_A27, "GET", "api.github.com", P("/repos/o/r/pulls?state=open"), 443, 1, ALLOW, K_URL, 0},
    {AL_A27, "GET", "api.github.com", P("/repos/o/r%3Fx"), 443, 1, ALLOW, K_URL, 0},
    /* A28: empty policies block everything. */
    {AL_EMPTY, "GET", "example.com", P("/"), 443, 1, B_HOST, K_NONE, 0},
    {AL_EMPTY_LISTS, "GET", "example.com", P("/"), 80, 0, B_HOST, K_NONE, 0},
    /* Ports (airlock extension): 'ports' adds to the default. */
    {AL_PORTS, "GET", "internal.example", P("/"), 8443, 1, ALLOW, K_URL, 0},
    {AL_PORTS, "GET", "internal.example", P("/"), 443, 1, ALLOW, K_URL, 0},
    {AL_PORTS, "GET", "internal.example", P("/"), 8443, 0, ALLOW, K_URL, 0},
    {AL_PORTS, "GET", "internal.example", P("/"), 80, 0, ALLOW, K_URL, 0},
    {AL_PORTS, "GET", "internal.example", P("/"), 9443, 1, B_PORT, K_URL, 0},
    {AL_DOMPORT, "GET", "internal.example", P("/"), 8443, 1, B_PORT, K_DOM, 0},
    {AL_DOMPORT, "GET", "other.example", P("/"), 8443, 1, ALLOW, K_URL, 0},
    /* IP literals are plain strings; IPv6 brackets and one trailing dot are removed. */
    {AL_IP, "GET", "[2001:db8::1]", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_IP, "GET", "2001:db8::1", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_IP, "GET", "2001:DB8::1", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_IP, "GET", "[::1]", P("/"), 443, 1, ALLOW, K_DOM, 2},
    {AL_IP, "GET", "10.0.0.1", P("/"), 443, 1, ALLOW, K_DOM, 1},
    {AL_IP, "GET", "10.0.0.1.", P("/"), 443, 1, ALLOW, K_DOM, 1},
    {AL_IP, "GET", "10.0.0.10", P("/"), 443, 1, B_HOST, K_NONE, 0},
    {AL_IP, "GET", "2001:db8::10", P("/"), 443, 1, B_HOST, K_NONE, 0},
    /* Host globs. */
    {AL_GLOBHOST, "GET", "a.b.github.com", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_GLOBHOST, "GET", "x.github.com.", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_GLOBHOST, "GET", "github.com", P("/"), 443, 1, B_HOST, K_NONE, 0},
    {AL_GLOBHOST, "GET", "github.com.", P("/"), 443, 1, B_HOST, K_NONE, 0},
    {AL_GLOBHOST, "GET", "API1.EXAMPLE.COM", P("/"), 443, 1, ALLOW, K_DOM, 1},
    {AL_GLOBHOST, "GET", "api12.example.com", P("/"), 443, 1, B_HOST, K_NONE, 0},
    {AL_GLOBHOST, "GET", "evilgithub.io", P("/"), 443, 1, ALLOW, K_DOM, 2},
    /* A plain host pattern loses its trailing dot too; patterns fold case. */
    {AL_DOTPAT, "GET", "example.com", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_DOTPAT, "GET", "example.com.", P("/"), 443, 1, ALLOW, K_DOM, 0},
    {AL_UPPER, "GET", "api.example.com", P("/X"), 443, 1, ALLOW, K_URL, 0},
    {AL_UPPER, "GET", "api.example.com", P("/x"), 443, 1, B_PATH, K_URL, 0},
    /* Path classes (only in globs), '?' as one decoded UTF-8 character. */
    {AL_CLASS, "GET", "example.com", P("/v1/a"), 443, 1, ALLOW, K_URL, 0},
    {AL_CLASS, "GET", "example.com", P("/v3/a"), 443, 1, B_PATH, K_URL, 0},
    {AL_CLASS, "GET", "example.com", P("/w[12]"), 443, 1, ALLOW, K_URL, 1},
    {AL_CLASS, "GET", "example.com", P("/w%5B12%5D"), 443, 1, ALLOW, K_URL, 1},
    {AL_CLASS, "GET", "example.com", P("/w1"), 443, 1, B_PATH, K_URL, 0},
    {AL_CLASS, "GET", "example.com", P("/caf%C3%A9"), 443, 1, ALLOW, K_URL, 2},
    {AL_CLASS, "GET", "example.com", P("/caf%C3%A9s"), 443, 1, B_PATH, K_URL, 0},
    {AL_CLASS, "GET", "example.com", P("/caf%FF"), 443, 1, ALLOW, K_URL, 2},
    /* Passthrough entries. */
    {AL_PASS, "GET", "git.example", P("/"), 443, 1, ALLOW, K_URL, 0},
    {AL_PASS, "GET", "git.example", P("/"), 22, 1, ALLOW, K_URL, 0},
};

static const char *const want_names[] = {"allow", "method",    "port", "path", "host",
                                         "NUL",   "backslash", "/../", "/.."};

static int policy_case_result(const addon_policy_decision_t *d)
{
    switch (d->verdict) {
    case ADDON_POLICY_ALLOW:
        return ALLOW;
    case ADDON_POLICY_BLOCK_METHOD:
        return B_METHOD;
    case ADDON_POLICY_BLOCK_PORT:
        return B_PORT;
    case ADDON_POLICY_BLOCK_PATH:
        return B_PATH;
    case ADDON_POLICY_BLOCK_HOST:
        return B_HOST;
    case ADDON_POLICY_BLOCK_PRECHECK:
        switch (d->precheck) {
        case ADDON_POLICY_PRECHECK_NUL:
            return B_NUL;
        case ADDON_POLICY_PRECHECK_BACKSLASH:
            return B_BSLASH;
        case ADDON_POLICY_PRECHECK_DOT_SEGMENT:
            return B_DOT;
        default:
            return -1;
        }
    case ADDON_POLICY_BLOCK_LISTED:
        return -1;
    }
    return -1;
}

static addon_policy_query_t policy_query(const char *method, const char *host, const char *path,
                                         size_t path_len, uint16_t port, int tls)
{
    addon_policy_query_t q;
    q.method.base = method;
    q.method.len = strlen(method);
    q.host.base = host;
    q.host.len = strlen(host);
    q.path.base = path;
    q.path.len = path_len;
    q.port = port;
    q.tls = tls;
    return q;
}

static addon_policy_t *policy_load(const char *yaml)
{
    addon_policy_t *p = NULL;
    char err[ADDON_YAML_ERR_MAX];
    int rc = addon_policy_load_buffer("al.yaml", yaml, strlen(yaml), &p, err, sizeof(err));
    if (rc != 0)
        print_error("load failed: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(p);
    return p;
}

static void test_policy_decisions(void **state)
{
    (void)state;
    size_t n = sizeof(policy_cases) / sizeof(policy_cases[0]);
    int failures = 0;
    for (size_t i = 0; i < n; i++) {
        const policy_case_t *c = &policy_cases[i];
        addon_policy_t *p = policy_load(c->policy);
        addon_policy_query_t q =
            policy_query(c->method, c->host, c->path, c->path_len, c->port, c->tls);
        addon_policy_decision_t d;
        addon_policy_decide(p, &q, &d);
        int got = policy_case_result(&d);
        int ok = got == c->want && d.allowed == (c->want == ALLOW) &&
                 d.method_message == (c->want == B_METHOD);
        if (c->kind != K_NONE) {
            addon_policy_kind_t k =
                c->kind == K_DOM ? ADDON_POLICY_DOMAINS : ADDON_POLICY_URL_PREFIXES;
            ok = ok && d.kind == k && d.index == c->index;
        } else {
            ok = ok && d.kind == ADDON_POLICY_NONE;
        }
        if (!ok) {
            char why[256];
            addon_policy_explain(p, &q, &d, why, sizeof(why));
            print_error("case %zu: %s %s %.*s port %u: want %s, got %s (%s)\n", i, c->method,
                        c->host, (int)c->path_len, c->path, c->port, want_names[c->want],
                        got >= 0 ? want_names[got] : "?", why);
            failures++;
        }
        addon_policy_unref(p);
    }
    print_message("%zu decision cases\n", n);
    assert_true(n >= 80);
    assert_int_equal(failures, 0);
}

/* Every reading of the path (base/px_path): allowed only if all are, a block or a graphql entry
 * applies if any matches. */
#define AL_RBLOCK "domains: [api.example]\nblock: [{host: api.example, path: \"/admin/*\"}]\n"
#define AL_RGQL                                                                                    \
    "url_prefixes:\n  - {host: g.example, path: /graphql, graphql: {queries: ['*']}}\n"            \
    "  - {host: g.example, path: \"*\"}\n"
#define AL_RPARAM "url_prefixes: [{host: api.example, path: \"/x;v=1/*\"}]\n"
#define AL_RPUB "url_prefixes: [{host: api.example, path: \"/pub/*\"}]\n"
enum { R_ALLOW, R_LISTED, R_PATH };
static const struct {
    const char *policy, *host, *path;
    int want;         /* R_* */
    unsigned reading; /* the reading that decided a refusal */
    int graphql;      /* allowed with a graphql block */
} reading_cases[] = {
    {AL_RBLOCK, "api.example", "/admin/x", R_LISTED, 0, 0},
    {AL_RBLOCK, "api.example", "//admin/x", R_LISTED, PX_PATH_MERGE, 0},
    {AL_RBLOCK, "api.example", "///admin//x", R_LISTED, PX_PATH_MERGE, 0},
    {AL_RBLOCK, "api.example", "/admin;x/y", R_LISTED, PX_PATH_PARAMS, 0},
    {AL_RBLOCK, "api.example", "/admin%3bx/y", R_LISTED, PX_PATH_PARAMS, 0},
    {AL_RBLOCK, "api.example", "/./admin/x", R_LISTED, PX_PATH_DOTS, 0},
    {AL_RBLOCK, "api.example", "/%2fadmin/x", R_LISTED, PX_PATH_MERGE, 0},
    {AL_RBLOCK, "api.example", "/%2e/%2Fadmin;a/x?q=1", R_LISTED, PX_PATH_ALL, 0},
    {AL_RBLOCK, "api.example", "/adminx", R_ALLOW, 0, 0},
    {AL_RBLOCK, "api.example", "/x/admin/y", R_ALLOW, 0, 0},
    {AL_RBLOCK, "api.example", "/x?next=//admin/x", R_ALLOW, 0, 0}, /* the query is not read */
    {AL_RPARAM, "api.example", "/x;v=1/a", R_PATH, PX_PATH_PARAMS, 0},
    {AL_RPUB, "api.example", "/pub//a", R_ALLOW, 0, 0},
    {AL_RPUB, "api.example", "/pub/./a", R_ALLOW, 0, 0},
    {AL_RPUB, "api.example", "/pub;x/a", R_PATH, 0, 0},
    {AL_RPUB, "api.example", "//pub/a", R_PATH, 0, 0},
    {AL_RGQL, "g.example", "/graphql", R_ALLOW, 0, 1},
    {AL_RGQL, "g.example", "/graphql;x", R_ALLOW, 0, 1},
    {AL_RGQL, "g.example", "//graphql", R_ALLOW, 0, 1},
    {AL_RGQL, "g.example", "/./graphql", R_ALLOW, 0, 1},
    {AL_RGQL, "g.example", "/graphql?x=1", R_ALLOW, 0, 1}, /* the path, query aside */
    {AL_RGQL, "g.example", "/GraphQL", R_ALLOW, 0, 1},     /* restrictions fold case */
    {AL_RBLOCK, "api.example", "/ADMIN/x", R_LISTED, 0, 0},
    {AL_RBLOCK, "api.example", "//Admin;x/y", R_LISTED, PX_PATH_ALL & ~PX_PATH_DOTS, 0},
    {AL_RGQL, "g.example", "/other", R_ALLOW, 0, 0},
};

static void test_policy_readings(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(reading_cases) / sizeof(reading_cases[0]); i++) {
        addon_policy_t *p = policy_load(reading_cases[i].policy);
        const char *path = reading_cases[i].path;
        addon_policy_query_t q =
            policy_query("GET", reading_cases[i].host, path, strlen(path), 443, 1);
        addon_policy_decision_t d;
        addon_policy_decide(p, &q, &d);
        int got = d.allowed                                ? R_ALLOW
                  : d.verdict == ADDON_POLICY_BLOCK_LISTED ? R_LISTED
                  : d.verdict == ADDON_POLICY_BLOCK_PATH   ? R_PATH
                                                           : -1;
        if (got != reading_cases[i].want || (!d.allowed && d.reading != reading_cases[i].reading) ||
            (d.graphql != NULL) != reading_cases[i].graphql) {
            print_error("case %zu: %s: got %d reading %u graphql %d\n", i, path, got, d.reading,
                        d.graphql != NULL);
            failures++;
        }
        addon_policy_unref(p);
    }
    assert_int_equal(failures, 0);
}

static void test_policy_passthrough_flag(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load(AL_PASS "  - {host: web.example}\n");
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "git.example", P("/"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.passthrough, 1);
    q = policy_query("GET", "web.example", P("/"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.passthrough, 0);
    addon_policy_unref(p);
}

static void test_policy_decision_patterns(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load(AL_A20);
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "api.github.com", P("/repos/org/x"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.host_pattern.len, strlen("api.github.com"));
    assert_memory_equal(d.host_pattern.base, "api.github.com", d.host_pattern.len);
    assert_int_equal(d.path_pattern.len, strlen("/repos/org*"));
    assert_memory_equal(d.path_pattern.base, "/repos/org*", d.path_pattern.len);
    addon_policy_unref(p);
}

static void test_policy_null_and_long(void **state)
{
    (void)state;
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "example.com", P("/"), 443, 1);
    addon_policy_decide(NULL, &q, &d);
    assert_int_equal(d.allowed, 0);
    assert_int_equal(d.verdict, ADDON_POLICY_BLOCK_HOST);

    addon_policy_t *p = policy_load("domains: [example.com]\n");
    size_t len = ADDON_POLICY_PATH_MAX + 1;
    char *path = malloc(len);
    assert_non_null(path);
    memset(path, 'a', len);
    path[0] = '/';
    q = policy_query("GET", "example.com", path, len, 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.verdict, ADDON_POLICY_BLOCK_PRECHECK);
    assert_int_equal(d.precheck, ADDON_POLICY_PRECHECK_TOO_LONG);
    /* At the cap and percent-encoded: decoded in the stack buffer. */
    len = ADDON_POLICY_PATH_MAX;
    path[len - 3] = '%';
    path[len - 2] = '4';
    path[len - 1] = '1';
    q = policy_query("GET", "example.com", path, len, 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    free(path);
    addon_policy_unref(p);
}

static void test_policy_has_host(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load("domains: [\"*.github.com\"]\n"
                                    "url_prefixes:\n"
                                    "  - {host: api.example.com, path: /v1/*, methods: [GET]}\n"
                                    "  - {host: git.example, tls: passthrough, ports: [22]}\n");
    int pt = -1;
    addon_str_t h = {"api.github.com", strlen("api.github.com")};
    assert_int_equal(addon_policy_has_host(p, h, 443, 1, &pt), 1);
    assert_int_equal(pt, 0);
    assert_int_equal(addon_policy_has_host(p, h, 8443, 1, &pt), 0);
    h.base = "API.example.com.";
    h.len = strlen(h.base);
    assert_int_equal(addon_policy_has_host(p, h, 443, 1, NULL), 1);
    assert_int_equal(addon_policy_has_host(p, h, 80, 0, NULL), 1);
    assert_int_equal(addon_policy_has_host(p, h, 80, 1, NULL), 0);
    h.base = "git.example";
    h.len = strlen(h.base);
    assert_int_equal(addon_policy_has_host(p, h, 22, 1, &pt), 1);
    assert_int_equal(pt, 1);
    h.base = "evil.com";
    h.len = strlen(h.base);
    assert_int_equal(addon_policy_has_host(p, h, 443, 1, &pt), 0);
    assert_int_equal(pt, 0);
    assert_int_equal(addon_policy_has_host(NULL, h, 443, 1, &pt), 0);
    addon_policy_unref(p);
}

/* ---- loading ---------------------------------------------------------------------------- */

static const char fixture_summary[] =
    ": 2 domains, 4 url_prefixes\n"
    "domains[0] *.github.com\n"
    "domains[1] pypi.org\n"
    "url_prefixes[0] host api.anthropic.com, path /v1/messages*, methods POST\n"
    "url_prefixes[1] host *, path any, methods GET,HEAD\n"
    "url_prefixes[2] host internal.example, path any, methods any, also ports 8443,9443\n"
    "url_prefixes[3] host git.example, path any, methods any, tls passthrough\n";

static void policy_check_fixture(const char *file)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", DATA_DIR, file);
    addon_policy_t *p = NULL;
    char err[ADDON_YAML_ERR_MAX];
    int rc = addon_policy_load_file(path, &p, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 2);
    assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 4);
    char want[1024];
    snprintf(want, sizeof(want), "%s%s", path, fixture_summary);
    char got[1024];
    size_t n = addon_policy_describe(p, got, sizeof(got));
    assert_string_equal(got, want);
    assert_int_equal(n, strlen(want));

    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "INTERNAL.example", P("/x"), 9443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    q = policy_query("GET", "api.github.com", P("/x"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.kind, ADDON_POLICY_DOMAINS);
    q = policy_query("POST", "api.anthropic.com", P("/v1/messages?beta=true"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.index, 0);
    addon_policy_unref(p);
}

static void test_policy_load_yaml(void **state)
{
    (void)state;
    policy_check_fixture("allowlist.yaml");
}

static void test_policy_load_json(void **state)
{
    (void)state;
    policy_check_fixture("allowlist.json");
}

static void test_policy_load_empty(void **state)
{
    (void)state;
    static const char *const empties[] = {
        "",
        "\n",
        "# only a comment\n",
        "---\n",
        "---\n...\n",
        "{}",
        "domains:\n",
        "domains: ~\nurl_prefixes: null\n",
        "domains: []\n",
        "url_prefixes: []\n",
        "null",
    };
    for (size_t i = 0; i < sizeof(empties) / sizeof(empties[0]); i++) {
        addon_policy_t *p = policy_load(empties[i]);
        assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 0);
        assert_int_equal(addon_policy_count(p, ADDON_POLICY_URL_PREFIXES), 0);
        addon_policy_unref(p);
    }
    static const char *const files[] = {"empty.yaml", "empty_doc.yaml"};
    for (size_t i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s%s", DATA_DIR, files[i]);
        addon_policy_t *p = NULL;
        assert_int_equal(addon_policy_load_file(path, &p, NULL, 0), 0);
        assert_int_equal(addon_policy_count(p, ADDON_POLICY_DOMAINS), 0);
        addon_policy_unref(p);
    }
}

static void test_policy_load_nulls(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load("url_prefixes:\n"
                                    "  - host: a.example\n"
                                    "    path: null\n"
                                    "    methods: ~\n"
                                    "    ports:\n"
                                    "    tls:\n");
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("DELETE", "a.example", P("/x"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 1);
    assert_int_equal(d.passthrough, 0);
    addon_policy_unref(p);
}

static void test_policy_missing_file(void **state)
{
    (void)state;
    addon_policy_t *p = (addon_policy_t *)&p;
    char err[ADDON_YAML_ERR_MAX];
    int rc = addon_policy_load_file(DATA_DIR "no-such-file.yaml", &p, err, sizeof(err));
    assert_int_equal(rc, PX_ENOENT);
    assert_null(p);
    assert_string_equal(err, DATA_DIR "no-such-file.yaml: No such file or directory");
    /* The proxy then runs with an empty policy, which blocks everything. */
    p = addon_policy_new_empty(DATA_DIR "no-such-file.yaml");
    assert_non_null(p);
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "example.com", P("/"), 443, 1);
    addon_policy_decide(p, &q, &d);
    assert_int_equal(d.allowed, 0);
    char why[256];
    addon_policy_explain(p, &q, &d, why, sizeof(why));
    assert_string_equal(why, "blocked: no entry matches host example.com (the allowlist is empty)");
    addon_policy_unref(p);

    rc = addon_policy_load_file(DATA_DIR, &p, err, sizeof(err));
    assert_int_equal(rc, PX_EIO);
    assert_null(p);
    /* An endless file stops at the size cap. */
    rc = addon_policy_load_file("/dev/zero", &p, err, sizeof(err));
    assert_int_equal(rc, PX_ETOOBIG);
    assert_string_equal(err, "/dev/zero: larger than 4194304 bytes");
    assert_null(p);
}

typedef struct error_case {
    const char *text;
    int rc;
    const char *msg;
} error_case_t;

static const error_case_t error_cases[] = {
    /* Unknown keys, top level and in an entry. */
    {"domains: [a.com]\ndomain: [b.com]\n", PX_ECONFIG,
     "al.yaml:2:1: unknown key 'domain' (expected domains, url_prefixes, block, budgets, "
     "provider_fetch_pass, mode, on_block or hold_seconds)"},
    /* on_block: hold and its hold_seconds (docs/approvals.md). */
    {"on_block: wait\n", PX_ECONFIG, "al.yaml:1:11: on_block: expected 'block' or 'hold'"},
    {"on_block: block\nhold_seconds: 5\n", PX_ECONFIG,
     "al.yaml:2:15: hold_seconds: only with 'on_block: hold'"},
    {"on_block: hold\nhold_seconds: 0\n", PX_ECONFIG,
     "al.yaml:2:15: hold_seconds: must be between 1 and 300, got 0"},
    {"on_block: hold\nhold_seconds: 301\n", PX_ECONFIG,
     "al.yaml:2:15: hold_seconds: must be between 1 and 300, got 301"},
    {"url_prefixes:\n  - host: a.com\n    paths: /x\n", PX_ECONFIG,
     "al.yaml:3:5: url_prefixes[0]: unknown key 'paths' (expected host, path, methods, ports, "
     "tls or graphql)"},
    /* The reference's GraphQL filter (docs/graphql.md). */
    {"url_prefixes:\n  - host: api.github.com\n    graphql: {queries: ['*'], query: []}\n",
     PX_ECONFIG,
     "al.yaml:3:31: url_prefixes[0].graphql: unknown key 'query' (expected queries, mutations or "
     "subscriptions)"},
    {"url_prefixes:\n  - host: api.github.com\n    graphql: {queries: [1]}\n", PX_ECONFIG,
     "al.yaml:3:25: url_prefixes[0].graphql.queries[0]: expected a string, got an integer"},
    {"url_prefixes:\n  - host: api.github.com\n    graphql: [viewer]\n", PX_ECONFIG,
     "al.yaml:3:14: url_prefixes[0].graphql: expected a mapping, got a sequence"},
    {"block:\n  - host: api.github.com\n    graphql: {}\n", PX_ECONFIG,
     "al.yaml:3:5: block[0]: unknown key 'graphql' (expected host, path, methods or mode)"},
    /* Top level that is not a mapping. */
    {"- a.com\n- b.com\n", PX_ECONFIG,
     "al.yaml:1:1: the allowlist must be a mapping with 'domains' and/or 'url_prefixes', got a "
     "sequence"},
    {"a.com\n", PX_ECONFIG,
     "al.yaml:1:1: the allowlist must be a mapping with 'domains' and/or 'url_prefixes', got a "
     "string"},
    /* Wrong types. */
    {"domains: a.com\n", PX_ECONFIG, "al.yaml:1:10: domains: expected a sequence, got a string"},
    {"domains: [a.com, 42]\n", PX_ECONFIG,
     "al.yaml:1:18: domains[1]: expected a string, got an integer"},
    {"domains:\n  - a.com\n  - {host: b.com}\n", PX_ECONFIG,
     "al.yaml:3:5: domains[1]: expected a string, got a mapping"},
    {"domains: [true]\n", PX_ECONFIG, "al.yaml:1:11: domains[0]: expected a string, got a boolean"},
    {"domains: [\"\"]\n", PX_ECONFIG, "al.yaml:1:11: domains[0]: empty host pattern"},
    {"domains: [\".\"]\n", PX_ECONFIG, "al.yaml:1:11: domains[0]: empty host pattern"},
    {"url_prefixes: {host: a.com}\n", PX_ECONFIG,
     "al.yaml:1:15: url_prefixes: expected a sequence, got a mapping"},
    {"url_prefixes: [a.com]\n", PX_ECONFIG,
     "al.yaml:1:16: url_prefixes[0]: expected a mapping, got a string"},
    {"url_prefixes:\n  - path: /x\n", PX_ECONFIG,
     "al.yaml:2:5: url_prefixes[0]: missing required key 'host'"},
    {"url_prefixes:\n  - host:\n", PX_ECONFIG,
     "al.yaml:2:10: url_prefixes[0].host: expected a string, got null"},
    {"url_prefixes:\n  - host: \"\"\n", PX_ECONFIG,
     "al.yaml:2:11: url_prefixes[0].host: empty host pattern"},
    {"url_prefixes:\n  - {host: a.com, path: [/x]}\n", PX_ECONFIG,
     "al.yaml:2:25: url_prefixes[0].path: expected a string, got a sequence"},
    {"url_prefixes:\n  - {host: a.com, path: 5}\n", PX_ECONFIG,
     "al.yaml:2:25: url_prefixes[0].path: expected a string, got an integer"},
    {"url_prefixes:\n  - {host: a.com, methods: GET}\n", PX_ECONFIG,
     "al.yaml:2:28: url_prefixes[0].methods: expected a sequence, got a string"},
    {"url_prefixes:\n  - {host: a.com, methods: [GET, 5]}\n", PX_ECONFIG,
     "al.yaml:2:34: url_prefixes[0].methods[1]: expected a string, got an integer"},
    {"url_prefixes:\n  - {host: a.com, methods: [\"GE T\"]}\n", PX_ECONFIG,
     "al.yaml:2:29: url_prefixes[0].methods[0]: a method is an HTTP token (letters, digits, "
     "!#$%&'*+-.^_`|~)"},
    {"url_prefixes:\n  - {host: a.com, methods: [\"GET/\"]}\n", PX_ECONFIG,
     "al.yaml:2:29: url_prefixes[0].methods[0]: a method is an HTTP token (letters, digits, "
     "!#$%&'*+-.^_`|~)"},
    {"url_prefixes:\n  - {host: a.com, methods: [\"\"]}\n", PX_ECONFIG,
     "al.yaml:2:29: url_prefixes[0].methods[0]: empty method"},
    /* Ports. */
    {"url_prefixes:\n  - {host: a.com, ports: [0]}\n", PX_ECONFIG,
     "al.yaml:2:27: url_prefixes[0].ports[0]: must be between 1 and 65535, got 0"},
    {"url_prefixes:\n  - {host: a.com, ports: [443, 65536]}\n", PX_ECONFIG,
     "al.yaml:2:32: url_prefixes[0].ports[1]: must be between 1 and 65535, got 65536"},
    {"url_prefixes:\n  - {host: a.com, ports: [-1]}\n", PX_ECONFIG,
     "al.yaml:2:27: url_prefixes[0].ports[0]: must be between 1 and 65535, got -1"},
    {"url_prefixes:\n  - {host: a.com, ports: [\"8443\"]}\n", PX_ECONFIG,
     "al.yaml:2:27: url_prefixes[0].ports[0]: expected an integer, got a string"},
    {"url_prefixes:\n  - {host: a.com, ports: [8443.0]}\n", PX_ECONFIG,
     "al.yaml:2:27: url_prefixes[0].ports[0]: expected an integer, got a float"},
    {"url_prefixes:\n  - {host: a.com, ports: 8443}\n", PX_ECONFIG,
     "al.yaml:2:26: url_prefixes[0].ports: expected a sequence, got an integer"},
    {"url_prefixes:\n  - {host: a.com, ports: [99999999999999999999]}\n", PX_ECONFIG,
     "al.yaml:2:27: url_prefixes[0].ports[0]: must be between 1 and 65535, got "
     "99999999999999999999"},
    {"domains: [\"a.com:8443\"]\n", PX_ECONFIG,
     "al.yaml:1:11: domains[0]: host pattern contains a port (list it under 'ports')"},
    {"domains: [\"[::1]:8443\"]\n", PX_ECONFIG,
     "al.yaml:1:11: domains[0]: host pattern contains a port (list it under 'ports')"},
    {"domains: [\"a.com/x\"]\n", PX_ECONFIG,
     "al.yaml:1:11: domains[0]: host pattern contains '/' (put the path in 'path')"},
    {"domains: [\"a.com \"]\n", PX_ECONFIG,
     "al.yaml:1:11: domains[0]: host pattern contains a space or control character"},
    /* tls. */
    {"url_prefixes:\n  - {host: a.com, tls: yes}\n", PX_ECONFIG,
     "al.yaml:2:24: url_prefixes[0].tls: must be 'passthrough' or 'intercept'"},
    {"url_prefixes:\n  - {host: a.com, tls: true}\n", PX_ECONFIG,
     "al.yaml:2:24: url_prefixes[0].tls: expected a string, got a boolean"},
    {"url_prefixes:\n  - {host: a.com, path: /x, tls: passthrough}\n", PX_ECONFIG,
     "al.yaml:2:34: url_prefixes[0].tls: a passthrough entry cannot restrict 'path', "
     "'methods' or 'graphql' (airlock does not see inside the TLS stream)"},
    /* Document rules of the loader. */
    {"domains: [a.com]\ndomains: [b.com]\n", PX_EPARSE,
     "al.yaml:2:1: duplicate key 'domains' (first at line 1, column 1)"},
    {"url_prefixes:\n  - {host: a.com, host: b.com}\n", PX_EPARSE,
     "al.yaml:2:19: duplicate key 'host' (first at line 2, column 6)"},
    {"x: &h a.com\ndomains: [*h]\n", PX_EPARSE, "al.yaml:2:11: aliases are not supported"},
    {"domains: !!set {a.com}\n", PX_EPARSE,
     "al.yaml:1:10: unsupported tag 'tag:yaml.org,2002:set'"},
    {"domains: [a.com]\n---\ndomains: [b.com]\n", PX_EPARSE,
     "al.yaml:2:1: only one document is allowed"},
    {"? [a]\n: b\n", PX_EPARSE, "al.yaml:1:3: mapping keys must be scalars, got a sequence"},
    /* libyaml's own errors, YAML and JSON. */
    {"domains: [a.com\n", PX_EPARSE,
     "al.yaml:2:1: did not find expected ',' or ']' (while parsing a flow sequence at line 1, "
     "column 10)"},
    {"domains:\n  - a.com\n  b: c\n", PX_EPARSE,
     "al.yaml:3:3: did not find expected '-' indicator (while parsing a block collection at "
     "line 2, column 3)"},
    {"{\"domains\": [\"a.com\"}", PX_EPARSE,
     "al.yaml:1:21: did not find expected ',' or ']' (while parsing a flow sequence at line 1, "
     "column 13)"},
    {"domains: [\"a.com\x01\"]\n", PX_EPARSE,
     "al.yaml:1:17: control characters are not allowed (byte 0x01)"},
    {"domains: [\"\xff\"]\n", PX_EPARSE, "al.yaml:1:12: invalid leading UTF-8 octet (byte 0xff)"},
    {"domains:\n\t- a.com\n", PX_EPARSE,
     "al.yaml:2:1: found character that cannot start any token (while scanning for the next "
     "token at line 2, column 1)"},
};

static void test_policy_load_errors(void **state)
{
    (void)state;
    int failures = 0;
    size_t n = sizeof(error_cases) / sizeof(error_cases[0]);
    for (size_t i = 0; i < n; i++) {
        const error_case_t *c = &error_cases[i];
        addon_policy_t *p = NULL;
        char err[ADDON_YAML_ERR_MAX];
        int rc =
            addon_policy_load_buffer("al.yaml", c->text, strlen(c->text), &p, err, sizeof(err));
        if (rc != c->rc || p != NULL || strcmp(err, c->msg) != 0) {
            print_error("case %zu: rc %d (want %d)\n  got:  %s\n  want: %s\n", i, rc, c->rc, err,
                        c->msg);
            failures++;
        }
        addon_policy_unref(p);
    }
    assert_int_equal(failures, 0);
}

static void test_policy_load_error_files(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        int rc;
        const char *msg;
    } files[] = {
        {"bad_entry.yaml", PX_ECONFIG,
         ":7:5: url_prefixes[1]: unknown key 'prots' (expected host, path, methods, ports, tls "
         "or graphql)"},
        {"bad_port.json", PX_ECONFIG,
         ":3:50: url_prefixes[0].ports[1]: must be between 1 and 65535, got 70000"},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[512];
        snprintf(path, sizeof(path), "%s%s", DATA_DIR, files[i].file);
        char want[1024];
        snprintf(want, sizeof(want), "%s%s", path, files[i].msg);
        addon_policy_t *p = NULL;
        char err[ADDON_YAML_ERR_MAX];
        assert_int_equal(addon_policy_load_file(path, &p, err, sizeof(err)), files[i].rc);
        assert_null(p);
        assert_string_equal(err, want);
    }
}

static void test_policy_error_truncation(void **state)
{
    (void)state;
    addon_policy_t *p = NULL;
    char err[16];
    const char *text = "domains: a.com\n";
    int rc = addon_policy_load_buffer("al.yaml", text, strlen(text), &p, err, sizeof(err));
    assert_int_equal(rc, PX_ECONFIG);
    assert_string_equal(err, "al.yaml:1:10: d");
    rc = addon_policy_load_buffer("al.yaml", text, strlen(text), &p, NULL, 0);
    assert_int_equal(rc, PX_ECONFIG);
}

static void test_policy_refcount(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load(AL_A1);
    addon_policy_t *held = addon_policy_ref(p);
    assert_ptr_equal(held, p);
    addon_policy_unref(p); /* the proxy swaps in a new snapshot ... */
    addon_policy_decision_t d;
    addon_policy_query_t q = policy_query("GET", "api.anthropic.com", P("/"), 443, 1);
    addon_policy_decide(held, &q, &d); /* ... while an in-flight request still uses this one */
    assert_int_equal(d.allowed, 1);
    addon_policy_unref(held);
    addon_policy_unref(NULL);
}

/* ---- the yaml loader on its own --------------------------------------------------------- */

static void test_yaml_tree(void **state)
{
    (void)state;
    const char *text = "a: [1, \"2\", '3', true, ~, 1.5, 0x10, -7, x]\n"
                       "b:\n"
                       "  c: |\n"
                       "    block\n"
                       "  \"d\": null\n";
    addon_yaml_doc_t *doc;
    char err[ADDON_YAML_ERR_MAX];
    assert_int_equal(addon_yaml_load_buffer("t.yaml", text, strlen(text), &doc, err, sizeof(err)),
                     0);
    const addon_yaml_node_t *root = addon_yaml_root(doc);
    assert_int_equal(addon_yaml_type(root), ADDON_YAML_MAP);
    assert_int_equal(addon_yaml_count(root), 2);
    const addon_yaml_node_t *a = addon_yaml_get(root, "a");
    assert_int_equal(addon_yaml_count(a), 9);
    static const addon_yaml_type_t types[] = {
        ADDON_YAML_INT,   ADDON_YAML_STRING, ADDON_YAML_STRING, ADDON_YAML_BOOL,   ADDON_YAML_NULL,
        ADDON_YAML_FLOAT, ADDON_YAML_INT,    ADDON_YAML_INT,    ADDON_YAML_STRING,
    };
    for (size_t i = 0; i < 9; i++)
        assert_int_equal(addon_yaml_type(addon_yaml_item(a, i)), types[i]);
    assert_int_equal(addon_yaml_quoted(addon_yaml_item(a, 0)), 0);
    assert_int_equal(addon_yaml_quoted(addon_yaml_item(a, 1)), 1);
    assert_int_equal(addon_yaml_line(addon_yaml_item(a, 3)), 1);
    assert_int_equal(addon_yaml_col(addon_yaml_item(a, 3)), 18);
    int64_t v;
    assert_int_equal(addon_yaml_get_int(addon_yaml_item(a, 6), "x", 0, 100, &v, err, sizeof(err)),
                     0);
    assert_int_equal(v, 16);
    assert_int_equal(addon_yaml_get_int(addon_yaml_item(a, 7), "x", -10, 0, &v, err, sizeof(err)),
                     0);
    assert_int_equal(v, -7);
    int b;
    assert_int_equal(addon_yaml_get_bool(addon_yaml_item(a, 3), "x", &b, err, sizeof(err)), 0);
    assert_int_equal(b, 1);
    assert_int_equal(addon_yaml_get_bool(addon_yaml_item(a, 0), "x", &b, err, sizeof(err)),
                     PX_ECONFIG);
    assert_string_equal(err, "t.yaml:1:5: x: expected a boolean, got an integer");
    assert_null(addon_yaml_item(a, 9));
    assert_null(addon_yaml_key(a, 0));

    const addon_yaml_node_t *bn = addon_yaml_get(root, "b");
    const addon_yaml_node_t *c = addon_yaml_get(bn, "c");
    size_t len;
    const char *s;
    assert_int_equal(addon_yaml_get_string(c, "c", &s, &len, err, sizeof(err)), 0);
    assert_string_equal(s, "block\n");
    assert_int_equal(addon_yaml_type(addon_yaml_get(bn, "d")), ADDON_YAML_NULL);
    assert_string_equal(addon_yaml_text(addon_yaml_key(bn, 1), NULL), "d");
    assert_int_equal(addon_yaml_line(addon_yaml_key(bn, 1)), 5);
    assert_int_equal(addon_yaml_col(addon_yaml_key(bn, 1)), 3);
    assert_null(addon_yaml_get(bn, "e"));
    assert_null(addon_yaml_get(a, "a"));

    static const char *const keys[] = {"a", NULL};
    assert_int_equal(addon_yaml_check_keys(root, keys, "top", err, sizeof(err)), PX_ECONFIG);
    assert_string_equal(err, "t.yaml:2:1: top: unknown key 'b' (expected a)");
    addon_yaml_free(doc);
}

static void test_yaml_scalars_with_nul(void **state)
{
    (void)state;
    const char *text = "{\"k\\u0000x\": \"a\\0b\"}";
    addon_yaml_doc_t *doc;
    char err[ADDON_YAML_ERR_MAX];
    assert_int_equal(addon_yaml_load_buffer("t.json", text, strlen(text), &doc, err, sizeof(err)),
                     0);
    const addon_yaml_node_t *root = addon_yaml_root(doc);
    size_t len;
    const char *k = addon_yaml_text(addon_yaml_key(root, 0), &len);
    assert_int_equal(len, 3);
    assert_memory_equal(k, "k\0x", 3);
    const char *v = addon_yaml_text(addon_yaml_value(root, 0), &len);
    assert_int_equal(len, 3);
    assert_memory_equal(v, "a\0b", 3);
    addon_yaml_free_wipe(doc);
    addon_yaml_free_wipe(NULL);
}

static void test_yaml_caps(void **state)
{
    (void)state;
    addon_yaml_doc_t *doc = NULL;
    char err[ADDON_YAML_ERR_MAX];
    /* Depth. */
    char deep[2 * ADDON_YAML_MAX_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i < ADDON_YAML_MAX_DEPTH + 1; i++)
        deep[n++] = '[';
    for (int i = 0; i < ADDON_YAML_MAX_DEPTH + 1; i++)
        deep[n++] = ']';
    assert_int_equal(addon_yaml_load_buffer("t", deep, n, &doc, err, sizeof(err)), PX_ETOOBIG);
    assert_string_equal(err, "t:1:65: nested deeper than 64 levels");
    assert_int_equal(addon_yaml_load_buffer("t", deep + 1, n - 2, &doc, err, sizeof(err)), 0);
    addon_yaml_free(doc);
    /* Nodes. */
    size_t cap = ADDON_YAML_MAX_NODES * 2 + 8;
    char *many = malloc(cap);
    assert_non_null(many);
    n = 0;
    many[n++] = '[';
    for (int i = 0; i < ADDON_YAML_MAX_NODES; i++) {
        many[n++] = '1';
        many[n++] = ',';
    }
    many[n++] = ']';
    assert_int_equal(addon_yaml_load_buffer("t", many, n, &doc, err, sizeof(err)), PX_ETOOBIG);
    assert_string_equal(err, "t:1:200000: more than 100000 nodes");
    free(many);
    /* Size. */
    assert_int_equal(
        addon_yaml_load_buffer("t", "", (size_t)ADDON_YAML_MAX_FILE + 1, &doc, err, sizeof(err)),
        PX_ETOOBIG);
    assert_string_equal(err, "t:1:1: larger than 4194304 bytes");
}

/* ---- describing ------------------------------------------------------------------------- */

typedef struct explain_case {
    const char *policy;
    const char *method;
    const char *host;
    const char *path;
    size_t path_len;
    uint16_t port;
    const char *want;
} explain_case_t;

static const explain_case_t explain_cases[] = {
    {"url_prefixes:\n  - {host: api.github.com, path: /graphql, methods: [POST]}\n"
     "  - {host: api.github.com, path: /users}\n"
     "  - {host: api.github.com, path: /repos/*, methods: [GET, HEAD]}\n",
     "GET", "api.github.com", P("/repos/o/r"), 443,
     "allowed by url_prefixes[2] (host api.github.com, path /repos/*, methods GET,HEAD)"},
    {"domains: [\"*.github.com\"]\n", "GET", "api.github.com", P("/x"), 443,
     "allowed by domains[0] (*.github.com)"},
    {"domains: [\"*.github.com\"]\n", "GET", "api.github.com", P("/a/../b"), 443,
     "blocked: pre-check: path has a .. segment"},
    {"domains: [\"*.github.com\"]\n", "GET", "api.github.com", P("/a/%2e%2E"), 443,
     "blocked: pre-check: path has a .. segment"},
    {"domains: [api.example]\nblock: [{host: api.example, path: \"/admin/*\"}]\n", "GET",
     "api.example", P("//admin/x"), 443,
     "blocked by block[0] (host api.example, path /admin/*, methods any; al.yaml:2) (on a reading "
     "of the path a server "
     "may make: slashes merged)"},
    {"url_prefixes: [{host: api.example, path: \"/x;v=1/*\"}]\n", "GET", "api.example",
     P("/x;v=1/a"), 443,
     "blocked: no entry matches path /x;v=1/a (url_prefixes[0] matches host api.example) (on a "
     "reading of the path a server may make: ';parameters' removed)"},
    {"domains: [\"*.github.com\"]\n", "GET", "api.github.com", P("/a%00"), 443,
     "blocked: pre-check: path contains NUL"},
    {"domains: [\"*.github.com\"]\n", "GET", "api.github.com", P("/a%5c"), 443,
     "blocked: pre-check: path contains a backslash"},
    {"url_prefixes:\n  - {host: api.github.com, path: /graphql, methods: [GET]}\n", "POST",
     "api.github.com", P("/graphql"), 443,
     "blocked: method POST not allowed (url_prefixes[0] matches host and path)"},
    {"domains: [\"*.github.com\"]\n", "GET", "evil.com", P("/"), 443,
     "blocked: no entry matches host evil.com"},
    {"domains: [\"*.github.com\"]\n", "GET", "evil\n.com", P("/"), 443,
     "blocked: no entry matches host evil\\x0a.com"},
    {"url_prefixes:\n  - {host: api.github.com, path: /graphql}\n", "GET", "api.github.com",
     P("/graphql?x=1"), 443,
     "blocked: no entry matches path /graphql?x=1 (url_prefixes[0] matches host api.github.com)"},
    {"url_prefixes:\n  - {host: api.github.com, path: /graphql}\n", "GET", "api.github.com",
     P("/graphql"), 8443, "blocked: port 8443 not allowed (url_prefixes[0] matches host and path)"},
    {"domains: [a.example]\n", "GET", "a.example", P("/"), 8443,
     "blocked: port 8443 not allowed (domains[0] matches host)"},
    {"url_prefixes:\n  - {host: a.example, ports: [8443], tls: passthrough}\n", "GET", "a.example",
     P("/"), 8443,
     "allowed by url_prefixes[0] (host a.example, path any, methods any, also ports 8443, tls "
     "passthrough)"},
};

static void test_policy_explain(void **state)
{
    (void)state;
    int failures = 0;
    for (size_t i = 0; i < sizeof(explain_cases) / sizeof(explain_cases[0]); i++) {
        const explain_case_t *c = &explain_cases[i];
        addon_policy_t *p = policy_load(c->policy);
        addon_policy_query_t q = policy_query(c->method, c->host, c->path, c->path_len, c->port, 1);
        addon_policy_decision_t d;
        addon_policy_decide(p, &q, &d);
        char buf[512];
        size_t n = addon_policy_explain(p, &q, &d, buf, sizeof(buf));
        if (strcmp(buf, c->want) != 0 || n != strlen(c->want)) {
            print_error("case %zu:\n  got:  %s\n  want: %s\n", i, buf, c->want);
            failures++;
        }
        addon_policy_unref(p);
    }
    assert_int_equal(failures, 0);
}

static void test_policy_describe_truncates(void **state)
{
    (void)state;
    addon_policy_t *p = policy_load("domains: [a.example, b.example]\n");
    char full[256];
    size_t n = addon_policy_describe(p, full, sizeof(full));
    assert_string_equal(full, "al.yaml: 2 domains, 0 url_prefixes\n"
                              "domains[0] a.example\n"
                              "domains[1] b.example\n");
    assert_int_equal(n, strlen(full));
    char small[10];
    assert_int_equal(addon_policy_describe(p, small, sizeof(small)), n);
    assert_string_equal(small, "al.yaml: ");
    assert_int_equal(addon_policy_describe(p, NULL, 0), n);
    addon_policy_unref(p);

    p = addon_policy_new_empty("/network-allowlist.json");
    n = addon_policy_describe(p, full, sizeof(full));
    assert_string_equal(full, "/network-allowlist.json: 0 domains, 0 url_prefixes (everything is "
                              "blocked)\n");
    addon_policy_unref(p);
}

static void test_policy_messages(void **state)
{
    (void)state;
    char buf[512];
    snprintf(buf, sizeof(buf), ADDON_POLICY_MSG_METHOD_FMT, "DELETE");
    assert_non_null(strstr(buf, "Method DELETE is not allowed for this URL."));
    assert_non_null(strstr(buf, "network-allowlist.yaml"));
    assert_non_null(strstr(ADDON_POLICY_MSG_HOST_PATH, "not in the network allowlist"));
    assert_non_null(strstr(ADDON_POLICY_MSG_HOST_PATH, "ask the user to approve"));
    assert_string_equal(addon_policy_precheck_name(ADDON_POLICY_PRECHECK_TOO_LONG),
                        "path is too long");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_decisions),
        cmocka_unit_test(test_policy_readings),
        cmocka_unit_test(test_policy_passthrough_flag),
        cmocka_unit_test(test_policy_decision_patterns),
        cmocka_unit_test(test_policy_null_and_long),
        cmocka_unit_test(test_policy_has_host),
        cmocka_unit_test(test_policy_load_yaml),
        cmocka_unit_test(test_policy_load_json),
        cmocka_unit_test(test_policy_load_empty),
        cmocka_unit_test(test_policy_load_nulls),
        cmocka_unit_test(test_policy_missing_file),
        cmocka_unit_test(test_policy_load_errors),
        cmocka_unit_test(test_policy_load_error_files),
        cmocka_unit_test(test_policy_error_truncation),
        cmocka_unit_test(test_policy_refcount),
        cmocka_unit_test(test_yaml_tree),
        cmocka_unit_test(test_yaml_scalars_with_nul),
        cmocka_unit_test(test_yaml_caps),
        cmocka_unit_test(test_policy_explain),
        cmocka_unit_test(test_policy_describe_truncates),
        cmocka_unit_test(test_policy_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
