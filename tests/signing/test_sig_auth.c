/* Strict parsers for the Authorization header and presigned query parameters: valid and
 * malformed tables, truncations and stray bytes; helpers (dates, algorithms, S3 services). */
#include "tests/signing/sig_test_resign.h"

#include "signing/sig_v4a.h"

#define SIG64 "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
#define SIG140                                                                                     \
    "3044022003c85b459488bd3d7df2e321e0f40a9d2384034b247f3995253c088967f8aff002201c1eb3d2a50bd"    \
    "30ea98805426a2363fd567844d8c6480552151ec671281b8f36"
#define CRED_V4 "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"

#define HBAD PX_EPARSE, 0, NULL, NULL, NULL
#define QBAD PX_EPARSE, 0, NULL, 0

static const struct {
    const char *in;
    int rc;
    sig_alg_t alg;
    const char *akid;
    const char *region;
    const char *service;
} header_cases[] = {
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host;x-amz-date, Signature=" SIG64, 0,
     SIG_ALG_V4, "AKIDEXAMPLE", "us-east-1", "service"},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ",SignedHeaders=host;x-amz-date,Signature=" SIG64, 0,
     SIG_ALG_V4, "AKIDEXAMPLE", "us-east-1", "service"},
    {"  AWS4-HMAC-SHA256\t Signature=" SIG64 " ,\tCredential=" CRED_V4 " , SignedHeaders=host \t",
     0, SIG_ALG_V4, "AKIDEXAMPLE", "us-east-1", "service"},
    {"AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE/20150830/service/aws4_request, "
     "SignedHeaders=host;x-amz-date;x-amz-region-set, Signature=" SIG140,
     0, SIG_ALG_V4A, "AKIDEXAMPLE", "", "service"},
    {"AWS4-HMAC-SHA256 Credential=AKIA_SURROGATE/20260101/eu-central-1/bedrock-runtime/"
     "aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" SIG64,
     0, SIG_ALG_V4, "AKIA_SURROGATE", "eu-central-1", "bedrock-runtime"},
    {"", HBAD},
    {"   ", HBAD},
    {"AWS4-HMAC-SHA256", HBAD},
    {"AWS4-HMAC-SHA256 ", HBAD},
    {"Bearer some_token", HBAD},
    {"aws4-hmac-sha256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256x Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256,Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host", HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", Credential=" CRED_V4
     ", SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64
     ", Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64 ", Foo=bar",
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64 ",", HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ",, SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential =" CRED_V4 ", SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG64
     ", AWS4-HMAC-SHA256 Credential=" CRED_V4,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE, SignedHeaders=host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=/20150830/us-east-1/service/aws4_request, SignedHeaders=host, "
     "Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKID EX/20150830/us-east-1/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/service/aws4_request, SignedHeaders=host, "
     "Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/x/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015083/us-east-1/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/2015083x/us-east-1/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_requests, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830//service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us east/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request/, "
     "SignedHeaders=host, Signature=" SIG64,
     HBAD},
    {"AWS4-ECDSA-P256-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG140, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=" SIG140, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature=abc", HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature="
     "AEEED9BBCCD4D02EE5C0109B86D86835F995330DA4C265957D157751F604D404",
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host, Signature="
     "aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d40g",
     HBAD},
    {"AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE/20150830/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG140 "0",
     HBAD},
    {"AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE/20150830/service/aws4_request, "
     "SignedHeaders=host, Signature=" SIG140 "0000**",
     HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=Host, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host;;x, Signature=" SIG64, HBAD},
    {"AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host;host, Signature=" SIG64, HBAD},
};

static void test_sig_auth_parse_header_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(header_cases) / sizeof(header_cases[0]); i++) {
        sig_auth_t a;
        int rc = sig_auth_parse_header(header_cases[i].in, strlen(header_cases[i].in), &a);

        if (rc != header_cases[i].rc) {
            fail_msg("case %zu: rc %d want %d: %s", i, rc, header_cases[i].rc, header_cases[i].in);
        }
        if (rc != 0) {
            continue;
        }
        assert_int_equal(a.alg, header_cases[i].alg);
        assert_int_equal(a.presigned, 0);
        assert_mem_str(a.access_key_id.base, a.access_key_id.len, header_cases[i].akid);
        assert_mem_str(a.region.base, a.region.len, header_cases[i].region);
        assert_mem_str(a.service.base, a.service.len, header_cases[i].service);
        assert_int_equal(a.date.len, 8);
        assert_true(a.signed_headers.len > 0);
        assert_true(a.signature.len == 64 || a.signature.len == 140);
    }
}

static void test_sig_auth_parse_header_bytes(void **state)
{
    const char good[] =
        "AWS4-HMAC-SHA256 Credential=" CRED_V4 ", SignedHeaders=host;x-amz-date, Signature=" SIG64;
    char buf[sizeof(good) + 8];
    sig_auth_t a;
    size_t i;

    (void)state;
    /* no NUL termination is assumed: parse the exact length of a longer buffer */
    memcpy(buf, good, sizeof(good) - 1);
    memcpy(buf + sizeof(good) - 1, "garbage", 8);
    assert_int_equal(sig_auth_parse_header(buf, sizeof(good) - 1, &a), 0);
    assert_mem_str(a.scope.base, a.scope.len, "20150830/us-east-1/service/aws4_request");
    /* every truncation is rejected or parses to something shorter, never crashes */
    for (i = 0; i < sizeof(good) - 1; i++) {
        assert_int_equal(sig_auth_parse_header(good, i, &a), PX_EPARSE);
    }
    /* a NUL or control byte anywhere inside a part is rejected */
    for (i = 17; i < sizeof(good) - 1; i++) {
        memcpy(buf, good, sizeof(good));
        buf[i] = '\0';
        if (sig_auth_parse_header(buf, sizeof(good) - 1, &a) == 0) {
            fail_msg("NUL at %zu accepted", i);
        }
    }
}

static const struct {
    const char *in;
    int rc;
    sig_alg_t alg;
    const char *akid;
    int has_token;
} query_cases[] = {
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     0, SIG_ALG_V4, "AKIA_SURROGATE", 0},
    {"a=1&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE%2F20260101%2Fus-east-1"
     "%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders="
     "host%3Bx-amz-date&X-Amz-Signature=" SIG64 "&X-Amz-Security-Token=tok%2Fen&&b",
     0, SIG_ALG_V4, "AKIA_SURROGATE", 1},
    {"X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fservice%2F"
     "aws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&"
     "X-Amz-Region-Set=us-east-1%2Cus-west-2&X-Amz-Signature=" SIG140,
     0, SIG_ALG_V4A, "AKIDEXAMPLE", 0},
    {"X%2DAmz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A/20260101/r/s/aws4_request&"
     "X-Amz-Date=20260101T000000Z&X-Amz-Expires=1&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64
     "&X-Amz-Some-Very-Long-Parameter-Name-Ignored=1",
     0, SIG_ALG_V4, "A", 0},
    {"", QBAD},
    {"a=1&b=2", QBAD},
    {"X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request&X-Amz-Date="
     "20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&"
     "X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host",
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential="
     "AKIA_SURROGATE/20260101/us-east-1/s3/aws4_request&X-Amz-Date=20260101T000000Z&"
     "X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260102/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=36x&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=12345678&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=Host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG140,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE%2/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=noslash&X-Amz-Date=20260101T000000Z&"
     "X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64,
     QBAD},
    {"X-Amz-Algorithm=AWS4-ECDSA-P256-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20150830%2Fservice%2F"
     "aws4_request&X-Amz-Date=20150830T123600Z&X-Amz-SignedHeaders=host&X-Amz-Expires=3600&"
     "X-Amz-Signature=" SIG140,
     QBAD},
    {"X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA_SURROGATE/20260101/us-east-1/s3/"
     "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
     "X-Amz-Signature=" SIG64 "&X-Amz-Security-Token=a&X-Amz-Security-Token=b",
     QBAD},
    {"%zz=1&X-Amz-Algorithm=AWS4-HMAC-SHA256", QBAD},
};

static void test_sig_auth_parse_query_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(query_cases) / sizeof(query_cases[0]); i++) {
        sig_auth_t a;
        int rc = sig_auth_parse_query(query_cases[i].in, strlen(query_cases[i].in), &a);

        if (rc != query_cases[i].rc) {
            fail_msg("case %zu: rc %d want %d: %s", i, rc, query_cases[i].rc, query_cases[i].in);
        }
        if (rc != 0) {
            continue;
        }
        assert_int_equal(a.presigned, 1);
        assert_int_equal(a.alg, query_cases[i].alg);
        assert_mem_str(a.access_key_id.base, a.access_key_id.len, query_cases[i].akid);
        assert_int_equal(a.has_token, query_cases[i].has_token);
        assert_int_equal(a.amz_date.len, 16);
    }
}

static void test_sig_auth_parse_query_caps(void **state)
{
    const char head[] = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A/20260101/r/s/"
                        "aws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=1&"
                        "X-Amz-SignedHeaders=host&X-Amz-Signature=" SIG64 "&X-Amz-Region-Set=";
    size_t big = SIG_AUTH_STORE_MAX + 10;
    char *q = malloc(sizeof(head) + big);
    sig_auth_t a;

    (void)state;
    memcpy(q, head, sizeof(head) - 1);
    memset(q + sizeof(head) - 1, 'r', big);
    assert_int_equal(sig_auth_parse_query(q, sizeof(head) - 1 + big, &a), PX_ETOOBIG);
    assert_int_equal(sig_auth_parse_query(q, sizeof(head) - 1 + 100, &a), 0);
    assert_int_equal(a.region_set.len, 100);
    free(q);
}

static void test_sig_auth_misc(void **state)
{
    (void)state;
    assert_true(sig_amz_date_valid("20150830T123600Z", 16));
    assert_false(sig_amz_date_valid("20150830T123600", 15));
    assert_false(sig_amz_date_valid("20150830X123600Z", 16));
    assert_false(sig_amz_date_valid("2015083aT123600Z", 16));
    assert_true(sig_service_is_s3(tu_s("s3")));
    assert_true(sig_service_is_s3(tu_s("s3express")));
    assert_true(sig_service_is_s3(tu_s("s3-object-lambda")));
    assert_false(sig_service_is_s3(tu_s("s3x")));
    assert_false(sig_service_is_s3(tu_s("S3")));
    assert_false(sig_service_is_s3(tu_s("bedrock-runtime")));
    assert_int_equal(sig_alg_from_name("AWS4-HMAC-SHA256", 16), SIG_ALG_V4);
    assert_int_equal(sig_alg_from_name("AWS4-ECDSA-P256-SHA256", 22), SIG_ALG_V4A);
    assert_int_equal(sig_alg_from_name("AWS4-HMAC-SHA25", 15), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sig_auth_parse_header_table),
        cmocka_unit_test(test_sig_auth_parse_header_bytes),
        cmocka_unit_test(test_sig_auth_parse_query_table),
        cmocka_unit_test(test_sig_auth_parse_query_caps),
        cmocka_unit_test(test_sig_auth_misc),
    };

    return cmocka_run_group_tests_name("sig_auth", tests, NULL, NULL);
}
