/* Table-driven unit tests: buffers, URI encoding/decoding, hex, hashes, path normalization,
 * canonical URI, canonical query, header canonicalization, SignedHeaders lists. */
#include "tests/signing/sig_test_util.h"

#include "base/px_err.h"
#include "signing/sig_encode.h"
#include "signing/sig_v4.h"

static void test_sig_encode_buf_caps(void **state)
{
    char stack[4];
    sig_buf_t b;
    int i;

    (void)state;
    sig_buf_init(&b, stack, sizeof(stack), 1000);
    assert_int_equal(sig_buf_adds(&b, "abc"), 0);
    assert_ptr_equal(b.base, stack);
    assert_int_equal(sig_buf_adds(&b, "defgh"), 0); /* spills to the heap */
    assert_true(b.heap);
    assert_mem_str(b.base, b.len, "abcdefgh");
    for (i = 0; i < 300; i++) {
        sig_buf_adds(&b, "0123");
    }
    assert_int_equal(b.err, PX_ETOOBIG); /* 8 + 1200 bytes pass the cap */
    assert_true(b.len <= 1000);
    assert_int_equal(sig_buf_addc(&b, 'x'), PX_ETOOBIG); /* sticky */
    sig_buf_free(&b);

    sig_buf_init(&b, NULL, 0, 3);
    assert_int_equal(sig_buf_adds(&b, "abcd"), PX_ETOOBIG);
    assert_int_equal(b.len, 0);
    sig_buf_free(&b);
}

static const struct {
    const char *in;
    size_t len; /* 0: strlen */
    int keep_slash;
    const char *want;
} uri_encode_cases[] = {
    {"hello world", 0, 0, "hello%20world"},
    {"a/b", 0, 0, "a%2Fb"},
    {"a/b", 0, 1, "a/b"},
    {"a=b&c", 0, 0, "a%3Db%26c"},
    {"@", 0, 0, "%40"},
    {"\xe4\xbd\xa0", 0, 0, "%E4%BD%A0"},
    {"\xc2\xa3", 0, 0, "%C2%A3"},
    {"\xf0\x9f\x98\x80", 0, 0, "%F0%9F%98%80"},
    {"-._~AZaz09", 0, 0, "-._~AZaz09"},
    {"+*%", 0, 0, "%2B%2A%25"},
    {"!$'(),;:", 0, 1, "%21%24%27%28%29%2C%3B%3A"},
    {"a\0b", 3, 0, "a%00b"},
    {"\xff", 0, 0, "%FF"},
    {"", 0, 0, ""},
};

static void test_sig_encode_uri_encode(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(uri_encode_cases) / sizeof(uri_encode_cases[0]); i++) {
        char stack[64];
        sig_buf_t b;
        size_t len =
            uri_encode_cases[i].len ? uri_encode_cases[i].len : strlen(uri_encode_cases[i].in);

        sig_buf_init(&b, stack, sizeof(stack), 1024);
        assert_int_equal(
            sig_uri_encode(&b, uri_encode_cases[i].in, len, uri_encode_cases[i].keep_slash), 0);
        assert_mem_str(b.base, b.len, uri_encode_cases[i].want);
        sig_buf_free(&b);
    }
}

static const struct {
    const char *in;
    int rc;
    const char *want;
} uri_decode_cases[] = {
    {"%41%42", 0, "AB"},      {"a+b", 0, "a+b"},         {"%e1%88%b4", 0, "\xe1\x88\xb4"},
    {"%2F%2f", 0, "//"},      {"plain", 0, "plain"},     {"%", PX_EPARSE, NULL},
    {"%4", PX_EPARSE, NULL},  {"abc%", PX_EPARSE, NULL}, {"%zz", PX_EPARSE, NULL},
    {"%4g", PX_EPARSE, NULL}, {"%%41", PX_EPARSE, NULL},
};

static void test_sig_encode_uri_decode(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(uri_decode_cases) / sizeof(uri_decode_cases[0]); i++) {
        char stack[64];
        sig_buf_t b;
        int rc;

        sig_buf_init(&b, stack, sizeof(stack), 1024);
        rc = sig_uri_decode(&b, uri_decode_cases[i].in, strlen(uri_decode_cases[i].in));
        assert_int_equal(rc, uri_decode_cases[i].rc);
        if (rc == 0) {
            assert_mem_str(b.base, b.len, uri_decode_cases[i].want);
        }
        sig_buf_free(&b);
    }
}

static void test_sig_encode_hex_and_hashes(void **state)
{
    unsigned char bin[4];
    unsigned char key[32];
    unsigned char mac[32];
    char hex[64];
    size_t n = 0;

    (void)state;
    sig_hex_encode((const unsigned char *)"\x00\xab\xff\x10", 4, hex);
    assert_memory_equal(hex, "00abff10", 8);
    assert_int_equal(sig_hex_decode("00ABff10", 8, bin, sizeof(bin), &n), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(bin, "\x00\xab\xff\x10", 4);
    assert_int_equal(sig_hex_decode("abc", 3, bin, sizeof(bin), &n), PX_EPARSE);
    assert_int_equal(sig_hex_decode("zz", 2, bin, sizeof(bin), &n), PX_EPARSE);
    assert_int_equal(sig_hex_decode("0011223344", 10, bin, sizeof(bin), &n), PX_ETOOBIG);

    assert_int_equal(sig_sha256_hex("", 0, hex), 0);
    assert_memory_equal(hex, SIG_EMPTY_SHA256, 64);
    /* RFC 4231 test case 2 */
    assert_int_equal(sig_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac), 0);
    sig_hex_encode(mac, 32, hex);
    assert_memory_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
                        64);
    /* AWS documentation signing-key example (IAM, 20120215). */
    assert_int_equal(sig_v4_signing_key(tu_s("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                                        tu_s("20120215"), tu_s("us-east-1"), tu_s("iam"), key),
                     0);
    sig_hex_encode(key, 32, hex);
    assert_memory_equal(hex, "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d",
                        64);
}

static const struct {
    const char *in;
    const char *want;
} normalize_cases[] = {
    {"", "/"},
    {"/", "/"},
    {"//", "/"},
    {"/./", "/"},
    {"/.", "/"},
    {"/..", "/"},
    {"/example/..", "/"},
    {"/example1/example2/../..", "/"},
    {"//example//", "/example/"},
    {"/./example", "/example"},
    {"/a/b/../c", "/a/c"},
    {"/a/b/", "/a/b/"},
    {"/a/b/..", "/a"},
    {"/a/b/../", "/a/"},
    {"/../a", "/a"},
    {"/a/../../b/", "/b/"},
    {"/a/./b/./", "/a/b/"},
    {"/a/%2F/b", "/a/%2F/b"},
    {"/a/%2E%2E/b", "/a/%2E%2E/b"},
    {"/a/.../b", "/a/.../b"},
    {"/a/..b/.c", "/a/..b/.c"},
    {"a/b", "a/b"},
    {"a/../b", "b"},
    {"/example space/", "/example space/"},
};

static void test_sig_encode_normalize_path(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(normalize_cases) / sizeof(normalize_cases[0]); i++) {
        char stack[8]; /* small: exercises the heap spill and the '..' truncation together */
        sig_buf_t b;

        sig_buf_init(&b, stack, sizeof(stack), 1024);
        assert_int_equal(
            sig_normalize_path(&b, normalize_cases[i].in, strlen(normalize_cases[i].in)), 0);
        assert_mem_str(b.base, b.len, normalize_cases[i].want);
        sig_buf_free(&b);
    }
}

static const struct {
    sig_uri_mode_t mode;
    const char *in;
    int rc;
    const char *want;
} curi_cases[] = {
    {SIG_URI_NORMALIZE, "", 0, "/"},
    {SIG_URI_NORMALIZE, "/a/b/../c", 0, "/a/c"},
    {SIG_URI_NORMALIZE, "/my%20path/file", 0, "/my%2520path/file"},
    {SIG_URI_NORMALIZE, "/my path/file", 0, "/my%20path/file"},
    {SIG_URI_NORMALIZE, "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke", 0,
     "/model/eu.anthropic.claude-sonnet-4-5-20250929-v1%253A0/invoke"},
    {SIG_URI_NORMALIZE, "/a/b/", 0, "/a/b/"},
    {SIG_URI_NORMALIZE, "/a%2Fb", 0, "/a%252Fb"},
    {SIG_URI_NORMALIZE, "/test/@connections/JBDvjfGEIAMCERw%3D", 0,
     "/test/%40connections/JBDvjfGEIAMCERw%253D"},
    {SIG_URI_NORMALIZE, "/bad%zz", 0, "/bad%25zz"},
    {SIG_URI_NORMALIZE, "//example//", 0, "/example/"},
    {SIG_URI_DOUBLE, "//example//", 0, "//example//"},
    {SIG_URI_DOUBLE, "/./", 0, "/./"},
    {SIG_URI_DOUBLE, "", 0, "/"},
    {SIG_URI_DOUBLE, "/%3A", 0, "/%253A"},
    {SIG_URI_S3, "", 0, "/"},
    {SIG_URI_S3, "/bucket//key", 0, "/bucket//key"},
    {SIG_URI_S3, "/test$file.text", 0, "/test%24file.text"},
    {SIG_URI_S3, "/bucket/key%3Avalue", 0, "/bucket/key%3Avalue"},
    {SIG_URI_S3, "/bucket/user%40example.com", 0, "/bucket/user%40example.com"},
    {SIG_URI_S3, "/bucket/my%20file.txt", 0, "/bucket/my%20file.txt"},
    {SIG_URI_S3, "/my path/file", 0, "/my%20path/file"},
    {SIG_URI_S3, "/a/./b/../c/", 0, "/a/./b/../c/"},
    {SIG_URI_S3, "/%7Euser/%3a", 0, "/~user/%3A"},
    {SIG_URI_S3, "/a%2fb", 0, "/a/b"},
    {SIG_URI_S3, "/key+plus", 0, "/key%2Bplus"},
    {SIG_URI_S3, "/bad%zz", PX_EPARSE, NULL},
    {SIG_URI_S3, "/bad%", PX_EPARSE, NULL},
};

static void test_sig_encode_canonical_uri(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(curi_cases) / sizeof(curi_cases[0]); i++) {
        char stack[64];
        sig_buf_t b;
        int rc;

        sig_buf_init(&b, stack, sizeof(stack), 4096);
        rc = sig_canonical_uri(&b, curi_cases[i].in, strlen(curi_cases[i].in), curi_cases[i].mode);
        if (rc != curi_cases[i].rc) {
            fail_msg("case %zu (%s): rc %d want %d", i, curi_cases[i].in, rc, curi_cases[i].rc);
        }
        if (rc == 0) {
            assert_mem_str(b.base, b.len, curi_cases[i].want);
        }
        sig_buf_free(&b);
    }
}

static const struct {
    const char *in;
    unsigned flags;
    int rc;
    const char *want;
} cquery_cases[] = {
    {"", 0, 0, ""},
    {"b=2&a=1", 0, 0, "a=1&b=2"},
    {"a", 0, 0, "a="},
    {"lifecycle", 0, 0, "lifecycle="},
    {"max-keys=2&prefix=J", 0, 0, "max-keys=2&prefix=J"},
    {"x=a+b", 0, 0, "x=a%2Bb"}, /* aws-c-auth: '+' is a literal plus */
    {"x=a%20b", 0, 0, "x=a%20b"},
    {"x=a%2bb", 0, 0, "x=a%2Bb"},
    {"z=1&Z=2&_=3&~=4", 0, 0, "Z=2&_=3&z=1&~=4"},
    {"Param1=value2&Param1=Value1", 0, 0, "Param1=Value1&Param1=value2"},
    {"Param-3=Value3&Param=Value2&%E1%88%B4=Value1", 0, 0,
     "%E1%88%B4=Value1&Param=Value2&Param-3=Value3"},
    {"\xe1\x88\xb4=bar", 0, 0, "%E1%88%B4=bar"},
    {"k=%e1%88%b4", 0, 0, "k=%E1%88%B4"},
    {"a=1&&b=2&", 0, 0, "a=1&b=2"},
    {"&", 0, 0, ""},
    {"a==b", 0, 0, "a=%3Db"},
    {"=v", 0, 0, "=v"},
    {"a=&a", 0, 0, "a=&a="},
    {"key=/path;x,y", 0, 0, "key=%2Fpath%3Bx%2Cy"},
    {"ab=1&a=2", 0, 0, "a=2&ab=1"},
    {"a=10&a=1", 0, 0, "a=1&a=10"},
    {"X-Amz-Signature=abc&a=1", SIG_QUERY_SKIP_SIGNATURE, 0, "a=1"},
    {"X-Amz-Signature=abc&a=1", 0, 0, "X-Amz-Signature=abc&a=1"},
    {"X-Amz-Security-Token=t%2F&a=1", SIG_QUERY_SKIP_TOKEN, 0, "a=1"},
    {"X-Amz-Security-Token=t%2F&a=1", SIG_QUERY_SKIP_SIGNATURE, 0, "X-Amz-Security-Token=t%2F&a=1"},
    {"X%2DAmz-Signature=abc", SIG_QUERY_SKIP_SIGNATURE, 0, ""}, /* compared after decoding */
    {"a=%zz", 0, PX_EPARSE, NULL},
    {"a=%", 0, PX_EPARSE, NULL},
    {"%g0=1", 0, PX_EPARSE, NULL},
};

static void test_sig_encode_canonical_query(void **state)
{
    size_t i;
    char *big;
    sig_buf_t b;

    (void)state;
    for (i = 0; i < sizeof(cquery_cases) / sizeof(cquery_cases[0]); i++) {
        char stack[64];
        int rc;

        sig_buf_init(&b, stack, sizeof(stack), 4096);
        rc = sig_canonical_query(&b, cquery_cases[i].in, strlen(cquery_cases[i].in),
                                 cquery_cases[i].flags);
        if (rc != cquery_cases[i].rc) {
            fail_msg("case %zu (%s): rc %d want %d", i, cquery_cases[i].in, rc, cquery_cases[i].rc);
        }
        if (rc == 0) {
            assert_mem_str(b.base, b.len, cquery_cases[i].want);
        }
        sig_buf_free(&b);
    }
    /* More parameters than the cap (and more than the stack array below it). */
    big = malloc(SIG_QUERY_PARAMS_MAX * 4 + 8);
    for (i = 0; i < SIG_QUERY_PARAMS_MAX; i++) {
        memcpy(big + i * 4, i % 2 ? "b=2&" : "a=1&", 4);
    }
    sig_buf_init(&b, NULL, 0, SIG_CANON_MAX);
    assert_int_equal(sig_canonical_query(&b, big, SIG_QUERY_PARAMS_MAX * 4 - 1, 0), 0);
    assert_int_equal(b.len, SIG_QUERY_PARAMS_MAX * 4 - 1);
    assert_memory_equal(b.base, "a=1&a=1", 7);
    sig_buf_free(&b);
    memcpy(big + SIG_QUERY_PARAMS_MAX * 4, "c=3", 3);
    sig_buf_init(&b, NULL, 0, SIG_CANON_MAX);
    assert_int_equal(sig_canonical_query(&b, big, SIG_QUERY_PARAMS_MAX * 4 + 3, 0), PX_ETOOBIG);
    sig_buf_free(&b);
    free(big);
}

static const struct {
    const char *in;
    const char *want;
} hvalue_cases[] = {
    {"  example.com  ", "example.com"},
    {"a  b  c", "a b c"},
    {"\"a   b   c\"", "\"a b c\""},
    {"value1\n  value2\n     value3", "value1 value2 value3"},
    {"value1\r\n\tvalue2", "value1 value2"},
    {"", ""},
    {"   ", ""},
    {"\tx\t\ty ", "x y"},
    {"no-change", "no-change"},
};

static void test_sig_encode_header_value(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(hvalue_cases) / sizeof(hvalue_cases[0]); i++) {
        char stack[64];
        sig_buf_t b;

        sig_buf_init(&b, stack, sizeof(stack), 1024);
        assert_int_equal(
            sig_canonical_header_value(&b, hvalue_cases[i].in, strlen(hvalue_cases[i].in)), 0);
        assert_mem_str(b.base, b.len, hvalue_cases[i].want);
        sig_buf_free(&b);
    }
}

static void test_sig_encode_canonical_headers(void **state)
{
    sig_header_t h[] = {
        {{"Host", 4}, {"  example.com  ", 15}},
        {{"X-Custom", 8}, {"a  b  c", 7}},
        {{"My-Header1", 10}, {"value4", 6}},
        {{"my-header1", 10}, {" value1 ", 8}},
        {{"MY-HEADER1", 10}, {"value3", 6}},
        {{"My-Header1", 10}, {"value2", 6}},
        {{"X-Amz-Security-Token", 20}, {"surrogate", 9}},
        {{"X-Amz-Security-Token", 20}, {"second", 6}},
    };
    sig_names_t names;
    char stack[256];
    sig_buf_t b;

    (void)state;
    assert_int_equal(sig_names_parse("x-custom;host", 13, &names), 0);
    sig_buf_init(&b, stack, sizeof(stack), 4096);
    assert_int_equal(sig_canonical_headers(&b, h, 8, &names, (sig_str_t){NULL, 0}), 0);
    assert_mem_str(b.base, b.len, "host:example.com\nx-custom:a b c\n");

    b.len = 0;
    assert_int_equal(sig_names_parse("my-header1;missing;x-amz-security-token", 39, &names), 0);
    assert_int_equal(sig_canonical_headers(&b, h, 8, &names, (sig_str_t){NULL, 0}), 0);
    assert_mem_str(b.base, b.len,
                   "missing:\nmy-header1:value4,value1,value3,value2\n"
                   "x-amz-security-token:surrogate,second\n");

    b.len = 0;
    assert_int_equal(sig_canonical_headers(&b, h, 8, &names, tu_s(" real  token ")), 0);
    assert_mem_str(b.base, b.len,
                   "missing:\nmy-header1:value4,value1,value3,value2\n"
                   "x-amz-security-token:real token\n");
    sig_buf_free(&b);
}

static const struct {
    const char *in;
    int rc;
    const char *want;
} names_cases[] = {
    {"host;x-amz-date", 0, "host;x-amz-date"},
    {"x-amz-date;host", 0, "host;x-amz-date"},
    {"host", 0, "host"},
    {"x-amz-meta-b;x-amz-meta-a;content-type;host", 0,
     "content-type;host;x-amz-meta-a;x-amz-meta-b"},
    {"a~b;a!b;a.b", 0, "a!b;a.b;a~b"},
    {"", PX_EPARSE, NULL},
    {"host;", PX_EPARSE, NULL},
    {";host", PX_EPARSE, NULL},
    {"host;;x", PX_EPARSE, NULL},
    {"Host", PX_EPARSE, NULL},
    {"host;host", PX_EPARSE, NULL},
    {"ho st", PX_EPARSE, NULL},
    {"host,x", PX_EPARSE, NULL},
    {"host:x", PX_EPARSE, NULL},
    {":authority", PX_EPARSE, NULL},
};

static void test_sig_encode_signed_names(void **state)
{
    char list[64 * 8];
    sig_names_t names;
    size_t i;
    size_t n = 0;

    (void)state;
    for (i = 0; i < sizeof(names_cases) / sizeof(names_cases[0]); i++) {
        char stack[256];
        sig_buf_t b;
        int rc = sig_names_parse(names_cases[i].in, strlen(names_cases[i].in), &names);

        if (rc != names_cases[i].rc) {
            fail_msg("case %zu (%s): rc %d want %d", i, names_cases[i].in, rc, names_cases[i].rc);
        }
        if (rc == 0) {
            sig_buf_init(&b, stack, sizeof(stack), sizeof(stack));
            sig_names_join(&names, &b);
            assert_mem_str(b.base, b.len, names_cases[i].want);
        }
    }
    /* 64 names pass, 65 do not */
    for (i = 0; i < SIG_SIGNED_HEADERS_MAX + 1; i++) {
        n += (size_t)snprintf(list + n, sizeof(list) - n, "%sh%03zu", i ? ";" : "", i);
        if (i == SIG_SIGNED_HEADERS_MAX - 1) {
            assert_int_equal(sig_names_parse(list, n, &names), 0);
            assert_int_equal(names.n, SIG_SIGNED_HEADERS_MAX);
        }
    }
    assert_int_equal(sig_names_parse(list, n, &names), PX_ETOOBIG);

    assert_int_equal(sig_names_parse("host;x-amz-date", 15, &names), 0);
    assert_int_equal(sig_names_add(&names, tu_s("x-amz-content-sha256")), 0);
    assert_int_equal(sig_names_add(&names, tu_s("host")), 0);
    assert_int_equal(names.n, 3);
    assert_int_equal(sig_names_find(&names, "x-amz-content-sha256"), 1);
    sig_names_remove(&names, "host");
    sig_names_remove(&names, "absent");
    assert_int_equal(names.n, 2);
    assert_int_equal(sig_names_find(&names, "x-amz-date"), 1);
}

static void test_sig_encode_target_split(void **state)
{
    sig_str_t p;
    sig_str_t q;

    (void)state;
    sig_target_split(tu_s("/path?query=1?x"), &p, &q);
    assert_mem_str(p.base, p.len, "/path");
    assert_mem_str(q.base, q.len, "query=1?x");
    sig_target_split(tu_s("/path"), &p, &q);
    assert_mem_str(p.base, p.len, "/path");
    assert_int_equal(q.len, 0);
    sig_target_split(tu_s("/?"), &p, &q);
    assert_mem_str(p.base, p.len, "/");
    assert_int_equal(q.len, 0);
    sig_target_split((sig_str_t){NULL, 0}, &p, &q);
    assert_int_equal(p.len, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sig_encode_buf_caps),
        cmocka_unit_test(test_sig_encode_uri_encode),
        cmocka_unit_test(test_sig_encode_uri_decode),
        cmocka_unit_test(test_sig_encode_hex_and_hashes),
        cmocka_unit_test(test_sig_encode_normalize_path),
        cmocka_unit_test(test_sig_encode_canonical_uri),
        cmocka_unit_test(test_sig_encode_canonical_query),
        cmocka_unit_test(test_sig_encode_header_value),
        cmocka_unit_test(test_sig_encode_canonical_headers),
        cmocka_unit_test(test_sig_encode_signed_names),
        cmocka_unit_test(test_sig_encode_target_split),
    };

    return cmocka_run_group_tests_name("sig_encode", tests, NULL, NULL);
}
