/* The masked-secret table for test_secrets.c: the reference catalogue §10.4 (M1-M28) first,
 * then airlock's own cases. Each case: a replacement map (JSON), the request host and headers,
 * the headers expected afterwards (live ones, in order), the annotation and the log lines.
 * Method GET, URL "https://<host>/". */
#ifndef SECRETS_CASES_H
#define SECRETS_CASES_H

#define SC_MAX_HEADERS 8

typedef struct sc_hdr {
    const char *name;
    const char *value;
} sc_hdr_t;

typedef struct secrets_case {
    const char *id;
    const char *map;
    const char *host;
    sc_hdr_t in[SC_MAX_HEADERS];  /* ends at the first NULL name */
    sc_hdr_t out[SC_MAX_HEADERS]; /* ends at the first NULL name */
    const char *annot;
    const char *log; /* lines, each ending with '\n'; "" = none */
    unsigned masked, dropped, collapsed;
} secrets_case_t;

/* A masked entry; scopes and headers are JSON arrays. */
#define ENTRY(sur, val, scopes, headers)                                                       \
    "\"" sur "\": {\"value\": \"" val "\", \"scopes\": " scopes ", \"headers\": " headers "}"
#define ENTRY_ALLOW(sur, val, scopes, headers)                                                 \
    "\"" sur "\": {\"value\": \"" val "\", \"scopes\": " scopes ", \"headers\": " headers     \
    ", \"allow_foreign_credentials\": true}"
#define MAP(...) "{" __VA_ARGS__ "}"

/* The reference's default: surr -> real, scopes [example.com], headers [Authorization]. */
#define MAP_D MAP(ENTRY("surr", "real", "[\"example.com\"]", "[\"Authorization\"]"))
#define MAP_D_ALLOW MAP(ENTRY_ALLOW("surr", "real", "[\"example.com\"]", "[\"Authorization\"]"))
#define MAP_HDRS(h) MAP(ENTRY("surr", "real", "[\"example.com\"]", h))
#define MAP_SCOPES(s) MAP(ENTRY("surr", "real", s, "[\"Authorization\"]"))

#define STRIP(name, host)                                                                      \
    "STRIPPED header '" name "' from GET https://" host "/ (foreign credential blocked)\n"
#define COLLAPSE(n, name, host)                                                                \
    "COLLAPSED " #n " duplicate '" name "' headers in GET https://" host "/ (duplicate "      \
    "credential headers removed)\n"

#define AUTH "Authorization"
#define NONE {NULL, NULL}

/* clang-format off: one case per few lines reads better than one field per line */
// clang-format off
static const secrets_case_t secrets_cases[] = {
    /* ---- the reference catalogue ---- */
    {"M1 bearer replaced", MAP_D, "example.com", {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer real"}},
     " [masked: 1]", "", 1, 0, 0},
    {"M2 foreign credential stripped", MAP_D, "example.com", {{AUTH, "Bearer attacker"}}, {NONE},
     " [dropped: 1]", STRIP("authorization", "example.com"), 0, 1, 0},
    {"M3 foreign credential allowed", MAP_D_ALLOW, "example.com", {{AUTH, "Bearer attacker"}},
     {{AUTH, "Bearer attacker"}}, "", "", 0, 0, 0},
    {"M4 host case", MAP_D, "EXAMPLE.COM", {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer real"}},
     " [masked: 1]", "", 1, 0, 0},
    {"M5 out of scope: surrogate forwarded", MAP_SCOPES("[\"other.com\"]"), "example.com",
     {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer surr"}}, "", "", 0, 0, 0},
    {"M6 out of scope: no strip", MAP_SCOPES("[\"other.com\"]"), "example.com",
     {{AUTH, "Bearer attacker_key"}}, {{AUTH, "Bearer attacker_key"}}, "", "", 0, 0, 0},
    {"M7 header not named", MAP_HDRS("[\"X-Api-Key\"]"), "example.com", {{AUTH, "Bearer surr"}},
     {{AUTH, "Bearer surr"}}, "", "", 0, 0, 0},
    {"M8 foreign X-Api-Key stripped", MAP_HDRS("[\"X-Api-Key\"]"), "example.com",
     {{"X-Api-Key", "foreign_key_123"}, {"Accept", "*/*"}}, {{"Accept", "*/*"}}, " [dropped: 1]",
     STRIP("x-api-key", "example.com"), 0, 1, 0},
    {"M9 scope glob", MAP_SCOPES("[\"*.example.com\"]"), "api.example.com",
     {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"M10 header glob *", MAP_HDRS("[\"*\"]"), "example.com", {{"X-Custom", "Bearer surr"}},
     {{"X-Custom", "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"M11 * keeps other headers", MAP_HDRS("[\"*\"]"), "example.com",
     {{AUTH, "Bearer surr"}, {"Content-Type", "application/json"}},
     {{AUTH, "Bearer real"}, {"Content-Type", "application/json"}}, " [masked: 1]", "", 1, 0, 0},
    {"M12 glob never strips", MAP_HDRS("[\"X-*\"]"), "example.com",
     {{"X-Request-Id", "abc123"}}, {{"X-Request-Id", "abc123"}}, "", "", 0, 0, 0},
    {"M13 exact strips, glob keeps", MAP_HDRS("[\"Authorization\", \"X-*\"]"), "example.com",
     {{AUTH, "Bearer attacker_key"}, {"X-Request-Id", "abc123"}}, {{"X-Request-Id", "abc123"}},
     " [dropped: 1]", STRIP("authorization", "example.com"), 0, 1, 0},
    {"M14 two entries, first present",
     MAP(ENTRY("surr_a", "real_a", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "surr_b", "real_b", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer surr_a"}}, {{AUTH, "Bearer real_a"}}, " [masked: 1]", "", 1,
     0, 0},
    {"M15 Basic password", MAP(ENTRY("surr123", "real456", "[\"example.com\"]",
                                     "[\"Authorization\"]")),
     "example.com", {{AUTH, "Basic dXNlcjpzdXJyMTIz"}}, {{AUTH, "Basic dXNlcjpyZWFsNDU2"}},
     " [masked: 1]", "", 1, 0, 0},
    {"M16 Basic username", MAP(ENTRY("surr123", "real456", "[\"example.com\"]",
                                     "[\"Authorization\"]")),
     "example.com", {{AUTH, "Basic c3VycjEyMzpwYXNz"}}, {{AUTH, "Basic cmVhbDQ1NjpwYXNz"}},
     " [masked: 1]", "", 1, 0, 0},
    {"M17 Basic x-access-token, padded", MAP_D, "example.com",
     {{AUTH, "Basic eC1hY2Nlc3MtdG9rZW46c3Vycg=="}},
     {{AUTH, "Basic eC1hY2Nlc3MtdG9rZW46cmVhbA=="}}, " [masked: 1]", "", 1, 0, 0},
    {"M18 no Basic decoding outside Authorization", MAP_HDRS("[\"X-Custom\"]"), "example.com",
     {{"X-Custom", "Basic dXNlcjpzdXJy"}}, {NONE}, " [dropped: 1]",
     STRIP("x-custom", "example.com"), 0, 1, 0},
    {"M19 duplicates: surrogate first", MAP_D, "example.com",
     {{AUTH, "Bearer surr"}, {AUTH, "Bearer attacker_value"}}, {{AUTH, "Bearer real"}},
     " [masked: 1]", COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},
    {"M20 three duplicates, surrogate last", MAP_D, "example.com",
     {{AUTH, "Bearer evil1"}, {AUTH, "Bearer evil2"}, {AUTH, "Bearer surr"}},
     {{AUTH, "Bearer real"}}, " [masked: 1]", COLLAPSE(3, "authorization", "example.com"), 1, 0,
     1},
    {"M21 two attackers, no surrogate", MAP_D, "example.com",
     {{AUTH, "Bearer attacker1"}, {"Accept", "*/*"}, {AUTH, "Bearer attacker2"}},
     {{"Accept", "*/*"}}, " [dropped: 1]", STRIP("authorization", "example.com"), 0, 1, 0},
    {"M22 collapse touches only the credential", MAP_D, "example.com",
     {{AUTH, "Bearer surr"}, {"Accept", "application/json"}, {AUTH, "Bearer x"},
      {"Accept", "text/html"}},
     {{AUTH, "Bearer real"}, {"Accept", "application/json"}, {"Accept", "text/html"}},
     " [masked: 1]", COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},
    {"M23 two headers: masked 2", MAP_HDRS("[\"*\"]"), "example.com",
     {{"X-A", "surr"}, {"X-B", "k=surr"}, {"Cookie", "c=1"}},
     {{"X-A", "real"}, {"X-B", "k=real"}, {"Cookie", "c=1"}}, " [masked: 2]", "", 2, 0, 0},
    {"M24 twice in one value: masked 1", MAP_D, "example.com", {{AUTH, "Bearer surr surr"}},
     {{AUTH, "Bearer real real"}}, " [masked: 1]", "", 1, 0, 0},
    {"M25 masked and dropped",
     MAP(ENTRY("s1", "r1", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "s2", "r2", "[\"*.com\"]", "[\"X-Api-Key\"]")),
     "example.com", {{AUTH, "Bearer s1"}, {"X-Api-Key", "foreign"}}, {{AUTH, "Bearer r1"}},
     " [masked: 1] [dropped: 1]", STRIP("x-api-key", "example.com"), 1, 1, 0},
    {"M27 aws-sigv4 entries are not masked secrets",
     MAP("\"AKIASURR\": {\"type\": \"aws-sigv4\", \"access_key_id\": \"AKIAREAL\", "
         "\"secret_access_key\": \"sec\", \"scopes\": [\"example.com\"]}"),
     "example.com", {{AUTH, "Bearer something AKIASURR"}},
     {{AUTH, "Bearer something AKIASURR"}}, "", "", 0, 0, 0},
    {"M28a Basic that is not base64", MAP_D, "example.com", {{AUTH, "Basic not-valid!!!"}},
     {NONE}, " [dropped: 1]", STRIP("authorization", "example.com"), 0, 1, 0},
    {"M28b Basic without a colon", MAP_D, "example.com", {{AUTH, "Basic c3Vycg=="}}, {NONE},
     " [dropped: 1]", STRIP("authorization", "example.com"), 0, 1, 0},

    /* ---- scopes ---- */
    {"scope glob does not match the bare domain", MAP_SCOPES("[\"*.example.com\"]"),
     "example.com", {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer surr"}}, "", "", 0, 0, 0},
    {"scope glob with case on both sides", MAP_SCOPES("[\"*.Example.COM\"]"), "API.example.Com",
     {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"host with a trailing dot", MAP_D, "example.com.", {{AUTH, "Bearer surr"}},
     {{AUTH, "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"scope with a trailing dot", MAP_SCOPES("[\"Example.com.\"]"), "example.com",
     {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"lookalike host out of scope", MAP_D, "example.com.evil.net", {{AUTH, "Bearer surr"}},
     {{AUTH, "Bearer surr"}}, "", "", 0, 0, 0},

    /* ---- header patterns ---- */
    {"X-* matches X- headers only", MAP_HDRS("[\"X-*\"]"), "example.com",
     {{"X-Token", "surr"}, {AUTH, "Bearer surr"}}, {{"X-Token", "real"}, {AUTH, "Bearer surr"}},
     " [masked: 1]", "", 1, 0, 0},
    {"*-Token", MAP_HDRS("[\"*-Token\"]"), "example.com",
     {{"Private-Token", "surr"}, {"X-Token-Id", "surr"}},
     {{"Private-Token", "real"}, {"X-Token-Id", "surr"}}, " [masked: 1]", "", 1, 0, 0},
    {"X-?-Key is one character", MAP_HDRS("[\"X-?-Key\"]"), "example.com",
     {{"x-a-key", "surr"}, {"X-AB-Key", "surr"}, {"X-B-Key", "other"}},
     {{"x-a-key", "real"}, {"X-AB-Key", "surr"}, {"X-B-Key", "other"}}, " [masked: 1]", "", 1,
     0, 0},
    {"header name case, spelling kept", MAP_D, "example.com", {{"AUTHORIZATION", "Bearer surr"}},
     {{"AUTHORIZATION", "Bearer real"}}, " [masked: 1]", "", 1, 0, 0},
    {"exact pattern in other case strips", MAP_HDRS("[\"x-api-KEY\"]"), "example.com",
     {{"X-Api-Key", "nope"}}, {NONE}, " [dropped: 1]", STRIP("x-api-key", "example.com"), 0, 1,
     0},
    {"bracket pattern is not exact: no strip", MAP_HDRS("[\"X-[ab]\"]"), "example.com",
     {{"X-[ab]", "foreign"}}, {{"X-[ab]", "foreign"}}, "", "", 0, 0, 0},
    {"no match at all: no annotation", MAP_HDRS("[\"X-*\"]"), "example.com",
     {{"Accept", "*/*"}, {"X-Foo", "bar"}}, {{"Accept", "*/*"}, {"X-Foo", "bar"}}, "", "", 0, 0,
     0},
    {"framing headers are never touched", MAP_HDRS("[\"*\", \"Content-Length\", \"Host\"]"),
     "example.com", {{"Host", "example.com"}, {"Content-Length", "4"}, {"X-A", "surr"}},
     {{"Host", "example.com"}, {"Content-Length", "4"}, {"X-A", "real"}}, " [masked: 1]", "", 1,
     0, 0},

    /* ---- several secrets ---- */
    {"two secrets on one host",
     MAP(ENTRY("s1", "r1", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "s2", "r2", "[\"example.com\"]", "[\"X-Api-Key\"]")),
     "example.com", {{AUTH, "Bearer s1"}, {"X-Api-Key", "s2"}},
     {{AUTH, "Bearer r1"}, {"X-Api-Key", "r2"}}, " [masked: 2]", "", 2, 0, 0},
    {"M14b two entries, second present: no strip",
     MAP(ENTRY("surr_a", "real_a", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "surr_b", "real_b", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer surr_b"}}, {{AUTH, "Bearer real_b"}}, " [masked: 1]", "", 1,
     0, 0},
    {"two entries, none present: one strip",
     MAP(ENTRY("surr_a", "real_a", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "surr_b", "real_b", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer x"}}, {NONE}, " [dropped: 1]",
     STRIP("authorization", "example.com"), 0, 1, 0},
    {"one entry allows foreign, the other does not: stripped",
     MAP(ENTRY_ALLOW("surr_a", "real_a", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "surr_b", "real_b", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer x"}}, {NONE}, " [dropped: 1]",
     STRIP("authorization", "example.com"), 0, 1, 0},
    {"only the in-scope entry can strip",
     MAP(ENTRY("surr_a", "real_a", "[\"other.com\"]", "[\"X-Key\"]") ", " ENTRY_ALLOW(
         "surr_b", "real_b", "[\"example.com\"]", "[\"X-Key\"]")),
     "example.com", {{"X-Key", "foreign"}}, {{"X-Key", "foreign"}}, "", "", 0, 0, 0},
    {"the earlier surrogate wins when one contains the other",
     MAP(ENTRY("ab", "R1", "[\"example.com\"]", "[\"Authorization\"]") ", " ENTRY(
         "abcd", "R2", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer abcd"}}, {{AUTH, "Bearer R1cd"}}, " [masked: 1]", "", 1, 0,
     0},
    {"a real value holding the surrogate is not replaced again",
     MAP(ENTRY("surr", "surr-real-surr", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer surr-real-surr"}}, " [masked: 1]",
     "", 1, 0, 0},
    {"empty real value", MAP(ENTRY("surr", "", "[\"example.com\"]", "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer surr"}}, {{AUTH, "Bearer "}}, " [masked: 1]", "", 1, 0, 0},

    /* ---- Basic ---- */
    {"Basic: surrogate in username and password", MAP_D, "example.com",
     {{AUTH, "Basic c3VycjpzdXJy"}}, {{AUTH, "Basic cmVhbDpyZWFs"}}, " [masked: 1]", "", 1, 0,
     0},
    {"Basic: twice in the password", MAP_D, "example.com", {{AUTH, "Basic dXNlcjp4c3VycnlzdXJy"}},
     {{AUTH, "Basic dXNlcjp4cmVhbHlyZWFs"}}, " [masked: 1]", "", 1, 0, 0},
    {"Basic: the scheme is case-sensitive", MAP_D, "example.com",
     {{AUTH, "basic dXNlcjpzdXJy"}}, {NONE}, " [dropped: 1]",
     STRIP("authorization", "example.com"), 0, 1, 0},
    {"Basic: unpadded base64 is not Basic", MAP_D, "example.com",
     {{AUTH, "Basic dXM6c3Vycg"}}, {NONE}, " [dropped: 1]",
     STRIP("authorization", "example.com"), 0, 1, 0},
    {"Basic: a space inside the base64 is not Basic", MAP_D, "example.com",
     {{AUTH, "Basic dXNl cjpzdXJy"}}, {NONE}, " [dropped: 1]",
     STRIP("authorization", "example.com"), 0, 1, 0},
    {"Basic in a duplicate", MAP(ENTRY("surr_a", "real_a", "[\"example.com\"]",
                                       "[\"Authorization\"]")),
     "example.com", {{AUTH, "Bearer nope"}, {AUTH, "Basic c3Vycl9hOnA="}},
     {{AUTH, "Basic cmVhbF9hOnA="}}, " [masked: 1]",
     COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},

    /* ---- duplicates ---- */
    {"duplicates: surrogate second, kept at the first position", MAP_D, "example.com",
     {{AUTH, "Bearer attacker"}, {"Accept", "*/*"}, {AUTH, "Bearer surr"}},
     {{AUTH, "Bearer real"}, {"Accept", "*/*"}}, " [masked: 1]",
     COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},
    {"duplicates in mixed case are one name", MAP_D, "example.com",
     {{"authorization", "Bearer attacker"}, {"AUTHORIZATION", "Bearer surr"}},
     {{"authorization", "Bearer real"}}, " [masked: 1]",
     COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},
    {"duplicates with the surrogate in both", MAP_D, "example.com",
     {{AUTH, "Bearer surr"}, {AUTH, "Token surr"}}, {{AUTH, "Bearer real"}}, " [masked: 1]",
     COLLAPSE(2, "authorization", "example.com"), 1, 0, 1},
    {"duplicates of a glob-named header collapse too", MAP_HDRS("[\"X-*\"]"), "example.com",
     {{"X-Key", "a"}, {"X-Key", "surr"}, {"X-Key", "b"}}, {{"X-Key", "real"}}, " [masked: 1]",
     COLLAPSE(3, "x-key", "example.com"), 1, 0, 1},
};
// clang-format on

#endif
