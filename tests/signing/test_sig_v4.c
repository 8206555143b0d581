/* SigV4 vector suites, case by case, read at run time from tests/signing/vectors (its README):
 *   v4/<case> x {header, query}: canonical request, string to sign and signature byte for byte,
 *     and the re-signed Authorization / query equal to the vector's signed request;
 *   v4-classic: the 31 classic AWS cases (errata 1-3 of vectors/README.md special-cased);
 *   v4-extra: double URI encoding (Lambda ARN path, API Gateway @connections path);
 *   s3-docs: S3 single-chunk examples and the presigned GET example (S3 URI rules).
 * Every case re-signs the signed request with the same credentials through the high-level API
 * (sig_auth_parse_* + sig_resign_*), so the identity "re-signed == original" must hold, and
 * sig_verify() must accept the original signature. */
#include "tests/signing/sig_test_resign.h"

#include "base/px_err.h"
#include "signing/sig_auth.h"
#include "signing/sig_resign.h"
#include "signing/sig_v4.h"

#define V4_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define S3_AKID "AKIAIOSFODNN7EXAMPLE"
#define S3_SECRET "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"

/* ------------------------------------------------------------------ v4/ */

static void v4_case(void **state, int query)
{
    const char *name = *state;
    const char *var = query ? "query" : "header";
    char *ctx_text = tu_read(NULL, VEC_DIR "/v4/%s/context.json", name);
    tj_t *ctx = tj_parse(ctx_text);
    tj_t *cj = tj_get(ctx, "credentials");
    size_t len;
    char *text = tu_read(&len, VEC_DIR "/v4/%s/%s-signed-request.txt", name, var);
    char *want_creq = tu_read(NULL, VEC_DIR "/v4/%s/%s-canonical-request.txt", name, var);
    char *want_sts = tu_read(NULL, VEC_DIR "/v4/%s/%s-string-to-sign.txt", name, var);
    char *want_sig = tu_read(NULL, VEC_DIR "/v4/%s/%s-signature.txt", name, var);
    tu_req_t req;
    sig_creds_t creds;
    sig_auth_t auth;
    sig_str_t want_auth = {NULL, 0};
    char hash[65];
    run_t r;

    tu_chomp(want_sig);
    tu_parse_request(text, len, &req);
    if (!query) {
        want_auth = tu_trim(req.headers[tu_find(&req, "authorization")].value);
    }
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s(tj_str(cj, "access_key_id"));
    creds.secret = tu_s(tj_str(cj, "secret_access_key"));
    if (tj_get(cj, "token") != NULL) {
        creds.session_token = tu_s(tj_str(cj, "token"));
    }
    body_hash(&req, hash);
    /* Header form: the payload line comes from x-amz-content-sha256 when the request has it. */
    resign(&req, query, &creds, tj_bool(ctx, "normalize") ? SIG_URI_NORMALIZE : SIG_URI_DOUBLE,
           (!query && tu_find(&req, "x-amz-content-sha256") >= 0) ? NULL : hash,
           query && tj_bool(ctx, "omit_session_token") ? SIG_OPT_UNSIGNED_TOKEN : 0, &auth, &r, 0);
    assert_mem_str(r.creq.base, r.creq.len, want_creq);
    assert_mem_str(r.sts.base, r.sts.len, want_sts);
    assert_mem_str(r.res.signature, r.res.signature_len, want_sig);
    if (query) {
        sig_str_t p;
        sig_str_t q;

        sig_target_split(req.target, &p, &q);
        assert_int_equal(r.out_len, q.len);
        assert_memory_equal(r.out, q.base, q.len);
    } else {
        assert_int_equal(r.out_len, want_auth.len);
        assert_memory_equal(r.out, want_auth.base, want_auth.len);
    }
    run_free(&r);
    free(want_sig);
    free(want_sts);
    free(want_creq);
    free(text);
    tj_free(ctx);
    free(ctx_text);
}

static void test_sig_v4_header(void **state)
{
    v4_case(state, 0);
}

static void test_sig_v4_query(void **state)
{
    v4_case(state, 1);
}

/* ------------------------------------------------------------------ v4-classic/ */

/* Case paths relative to v4-classic (normalize-path/ and post-sts-token/ hold sub-cases). */
static size_t classic_cases(char ***out)
{
    char **top;
    size_t ntop = tu_list_dirs(VEC_DIR "/v4-classic", &top);
    char **all = NULL;
    size_t n = 0;
    size_t i;
    size_t j;

    for (i = 0; i < ntop; i++) {
        if (strcmp(top[i], "normalize-path") == 0 || strcmp(top[i], "post-sts-token") == 0) {
            char dir[512];
            char **sub;
            size_t nsub;

            snprintf(dir, sizeof(dir), VEC_DIR "/v4-classic/%s", top[i]);
            nsub = tu_list_dirs(dir, &sub);
            for (j = 0; j < nsub; j++) {
                char path[512];

                snprintf(path, sizeof(path), "%s/%s", top[i], sub[j]);
                all = realloc(all, (n + 1) * sizeof(*all));
                all[n++] = strdup(path);
                free(sub[j]);
            }
            free(sub);
        } else {
            all = realloc(all, (n + 1) * sizeof(*all));
            all[n++] = strdup(top[i]);
        }
        free(top[i]);
    }
    free(top);
    *out = all;
    return n;
}

static void test_sig_v4_classic(void **state)
{
    const char *path = *state;
    const char *base = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
    size_t len;
    char *text;
    char *want_creq;
    char *want_sts;
    char *want_authz;
    tu_req_t req;
    sig_creds_t creds;
    sig_auth_t auth;
    char hash[65];
    int tok;
    run_t r;

    text = tu_read(&len, VEC_DIR "/v4-classic/%s/%s.sreq", path, base);
    want_creq = tu_read(NULL, VEC_DIR "/v4-classic/%s/%s.creq", path, base);
    want_sts = tu_read(NULL, VEC_DIR "/v4-classic/%s/%s.sts", path, base);
    want_authz = tu_read(NULL, VEC_DIR "/v4-classic/%s/%s.authz", path, base);
    tu_chomp(want_authz);
    tu_parse_request(text, len, &req);
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s("AKIDEXAMPLE");
    creds.secret = tu_s(V4_SECRET);
    tok = tu_find(&req, "x-amz-security-token");
    if (tok >= 0) {
        creds.session_token = tu_trim(req.headers[tok].value);
    }
    body_hash(&req, hash);
    /* errata 3: the classic multiline signature was made over commas, so it cannot verify */
    resign(&req, 0, &creds, SIG_URI_NORMALIZE, hash, 0, &auth, &r,
           strcmp(base, "get-header-value-multiline") == 0 ? PX_ESIGNING : 0);
    if (strcmp(base, "get-header-value-multiline") == 0) {
        /* Errata 3: the classic suite joins folded lines with commas; aws-c-auth and v4/ use
         * spaces. Expect the space form and the v4/ signature. */
        char *p = strstr(want_creq, "value1,value2,value3");
        char *v4sig = tu_read(NULL, VEC_DIR "/v4/get-header-value-multiline/header-signature.txt");

        assert_non_null(p);
        p[6] = ' ';
        p[13] = ' ';
        tu_chomp(v4sig);
        assert_mem_str(r.creq.base, r.creq.len, want_creq);
        assert_mem_str(r.res.signature, r.res.signature_len, v4sig);
        free(v4sig);
    } else {
        if (strcmp(base, "post-x-www-form-urlencoded") != 0) {
            /* Errata 1: this .creq lists content-length, which .sts/.authz were not computed
             * with; trust .sts and .authz there. */
            assert_mem_str(r.creq.base, r.creq.len, want_creq);
        }
        assert_mem_str(r.sts.base, r.sts.len, want_sts);
        assert_mem_str(r.out, r.out_len, want_authz);
    }
    run_free(&r);
    free(want_authz);
    free(want_sts);
    free(want_creq);
    free(text);
}

/* ------------------------------------------------------------------ v4-extra/ */

static void test_sig_v4_extra_double_url_encode(void **state)
{
    size_t len;
    char *text = tu_read(&len, VEC_DIR "/v4-extra/double-url-encode/header-signed-request.txt");
    char *want_creq =
        tu_read(NULL, VEC_DIR "/v4-extra/double-url-encode/header-canonical-request.txt");
    char *want_sts = tu_read(NULL, VEC_DIR "/v4-extra/double-url-encode/header-string-to-sign.txt");
    tu_req_t req;
    sig_creds_t creds;
    sig_auth_t auth;
    sig_str_t want_auth;
    run_t r;

    (void)state;
    tu_chomp(want_sts); /* the file's final newline is not part of the string to sign */
    tu_parse_request(text, len, &req);
    want_auth = tu_trim(req.headers[tu_find(&req, "authorization")].value);
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s("AKIDEXAMPLE");
    creds.secret = tu_s(V4_SECRET);
    resign(&req, 0, &creds, SIG_URI_NORMALIZE, SIG_EMPTY_SHA256, 0, &auth, &r, 0);
    assert_mem_str(r.creq.base, r.creq.len, want_creq);
    assert_mem_str(r.sts.base, r.sts.len, want_sts);
    assert_mem_str(r.res.signature, r.res.signature_len,
                   "4b93abbcc68be32bd64c18e2c71150660ab4c29bbd6c32a383a7517a88fc1804");
    assert_int_equal(r.out_len, want_auth.len);
    assert_memory_equal(r.out, want_auth.base, want_auth.len);
    run_free(&r);
    free(want_sts);
    free(want_creq);
    free(text);
}

static void test_sig_v4_extra_double_encode_path(void **state)
{
    size_t len;
    char *text = tu_read(&len, VEC_DIR "/v4-extra/double-encode-path/request.txt");
    char *want = tu_read(NULL, VEC_DIR "/v4-extra/double-encode-path/header-canonical-request.txt");
    char *line2 = strchr(want, '\n') + 1;
    tu_req_t req;
    sig_buf_t b;

    (void)state;
    /* Errata 5: only the canonical URI of this case is consistent. */
    *strchr(line2, '\n') = '\0';
    tu_parse_request(text, len, &req);
    sig_buf_init(&b, NULL, 0, 4096);
    assert_int_equal(sig_canonical_uri(&b, req.target.base, req.target.len, SIG_URI_NORMALIZE), 0);
    assert_mem_str(b.base, b.len, line2);
    sig_buf_free(&b);
    free(want);
    free(text);
}

/* ------------------------------------------------------------------ s3-docs/ */

static const struct {
    const char *name;
    const char *target; /* wire path and query of the documented request */
} s3_targets[] = {
    {"get-object-range", "/test.txt"},
    {"put-object", "/test$file.text"},
    {"get-bucket-lifecycle", "/?lifecycle"},
    {"list-objects", "/?max-keys=2&prefix=J"},
};

static void s3_case_check(const tj_t *doc, const tj_t *c, int query, const char *target)
{
    const tj_t *hj = tj_get(c, "headers");
    tu_req_t req;
    sig_creds_t creds;
    sig_auth_t auth;
    char key_hex[64];
    size_t i;
    run_t r;

    memset(&req, 0, sizeof(req));
    req.method = tu_s(tj_str(c, "method"));
    req.target = tu_s(target);
    for (i = 0; i < hj->n; i++) {
        req.headers[i].name = tu_s(hj->keys[i]);
        req.headers[i].value = tu_s(hj->items[i]->str);
    }
    req.nheaders = hj->n;
    if (!query) {
        req.headers[req.nheaders].name = tu_s("Authorization");
        req.headers[req.nheaders].value = tu_s(tj_str(c, "authorization"));
        req.nheaders++;
    }
    memset(&creds, 0, sizeof(creds));
    creds.access_key_id = tu_s(tj_str(doc, "access_key_id"));
    creds.secret = tu_s(tj_str(doc, "secret_access_key"));
    resign(&req, query, &creds, SIG_URI_S3, NULL, 0, &auth, &r, 0);
    assert_mem_str(r.creq.base, r.creq.len, tj_str(c, "canonical_request"));
    assert_mem_str(r.sts.base, r.sts.len, tj_str(c, "string_to_sign"));
    assert_mem_str(r.res.signature, r.res.signature_len, tj_str(c, "signature"));
    sig_hex_encode(r.res.v4_key, 32, key_hex);
    assert_mem_str(key_hex, 64, tj_str(doc, "signing_key_hex"));
    assert_int_equal(sig_service_is_s3(auth.service), 1);
    if (query) {
        const char *q = strchr(target, '?') + 1;

        assert_mem_str(r.out, r.out_len, q);
    } else {
        assert_mem_str(r.out, r.out_len, tj_str(c, "authorization"));
    }
    run_free(&r);
}

static void test_sig_v4_s3_single_chunk(void **state)
{
    const char *name = *state;
    char *text = tu_read(NULL, VEC_DIR "/s3-docs/single-chunk.json");
    tj_t *doc = tj_parse(text);
    tj_t *cases = tj_get(doc, "cases");
    size_t i;
    size_t j;
    int found = 0;

    for (i = 0; i < cases->n; i++) {
        if (strcmp(tj_str(cases->items[i], "name"), name) != 0) {
            continue;
        }
        for (j = 0; j < sizeof(s3_targets) / sizeof(s3_targets[0]); j++) {
            if (strcmp(s3_targets[j].name, name) == 0) {
                s3_case_check(doc, cases->items[i], 0, s3_targets[j].target);
                found = 1;
            }
        }
    }
    assert_true(found);
    tj_free(doc);
    free(text);
}

static void test_sig_v4_s3_presigned_get(void **state)
{
    char *text = tu_read(NULL, VEC_DIR "/s3-docs/presigned-get.json");
    tj_t *doc = tj_parse(text);
    const char *url = tj_str(doc, "url");
    const char *target = strchr(strstr(url, "://") + 3, '/');

    (void)state;
    s3_case_check(doc, doc, 1, target);
    tj_free(doc);
    free(text);
}

int main(void)
{
    tu_tests_t ts = {NULL, 0};
    char **cases;
    size_t n = tu_list_dirs(VEC_DIR "/v4", &cases);
    size_t i;
    int failed = 0;

    if (n != 38) {
        fprintf(stderr, "expected 38 v4 cases under %s, found %zu\n", VEC_DIR "/v4", n);
        return 1;
    }
    for (i = 0; i < n; i++) {
        char tname[256];

        snprintf(tname, sizeof(tname), "v4/%s/header", cases[i]);
        tu_tests_add(&ts, tname, test_sig_v4_header, cases[i]);
        snprintf(tname, sizeof(tname), "v4/%s/query", cases[i]);
        tu_tests_add(&ts, tname, test_sig_v4_query, cases[i]);
    }
    failed += tu_tests_run("sig_v4 suite v4", &ts);
    for (i = 0; i < n; i++) {
        free(cases[i]);
    }
    free(cases);

    n = classic_cases(&cases);
    if (n != 31) {
        fprintf(stderr, "expected 31 v4-classic cases, found %zu\n", n);
        return 1;
    }
    for (i = 0; i < n; i++) {
        char tname[256];

        snprintf(tname, sizeof(tname), "v4-classic/%s", cases[i]);
        if (strcmp(cases[i], "post-x-www-form-urlencoded-parameters") == 0) {
            /* Errata 2: signed with "charset=utf8" and without content-length while .req/.creq
             * say otherwise; .authz and .sreq disagree. Not registered (a skip would read as a
             * run test); the v4/ suite's consistent version of it runs. */
            print_message("v4-classic/%s: excluded (errata 2 of the suite)\n", cases[i]);
            continue;
        }
        tu_tests_add(&ts, tname, test_sig_v4_classic, cases[i]);
    }
    failed += tu_tests_run("sig_v4 suite v4-classic", &ts);
    for (i = 0; i < n; i++) {
        free(cases[i]);
    }
    free(cases);

    tu_tests_add(&ts, "v4-extra/double-url-encode", test_sig_v4_extra_double_url_encode, NULL);
    tu_tests_add(&ts, "v4-extra/double-encode-path", test_sig_v4_extra_double_encode_path, NULL);
    for (i = 0; i < sizeof(s3_targets) / sizeof(s3_targets[0]); i++) {
        char tname[256];

        snprintf(tname, sizeof(tname), "s3-docs/single-chunk/%s", s3_targets[i].name);
        tu_tests_add(&ts, tname, test_sig_v4_s3_single_chunk, (void *)s3_targets[i].name);
    }
    tu_tests_add(&ts, "s3-docs/presigned-get", test_sig_v4_s3_presigned_get, NULL);
    failed += tu_tests_run("sig_v4 suites v4-extra, s3-docs", &ts);
    return failed;
}
