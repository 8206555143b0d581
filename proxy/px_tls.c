#include "proxy/px_tls.h"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "proxy/px_err.h"

struct px_tls {
    SSL *ssl;
    BIO *rbio; /* network → SSL */
    BIO *wbio; /* SSL → network */
};

static void px__ssl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
}

static int on_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    /* http/1.1 when offered; never h2 (HTTP/2 does not exist here yet) */
    for (unsigned i = 0; i < inlen;) {
        unsigned n = in[i];
        if (i + 1 + n > inlen)
            break;
        if (n == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

int px_tls_server_ctx_new(int (*cert_cb)(SSL *ssl, void *arg), void *arg, SSL_CTX **out,
                          char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        px__ssl_err(err, errlen, "SSL_CTX_new");
        return PX_ETLS;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"airlock", 7);
    SSL_CTX_set_cert_cb(ctx, cert_cb, arg);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn_select, NULL);
    *out = ctx;
    return 0;
}

int px_tls_client_ctx_new(const char *ca_file, SSL_CTX **out, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        px__ssl_err(err, errlen, "SSL_CTX_new");
        return PX_ETLS;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = ca_file != NULL ? SSL_CTX_load_verify_locations(ctx, ca_file, NULL)
                             : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
        char what[512];
        snprintf(what, sizeof(what), "cannot load upstream CA bundle %s",
                 ca_file != NULL ? ca_file : "(system default)");
        px__ssl_err(err, errlen, what);
        SSL_CTX_free(ctx);
        return PX_ETLS;
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    *out = ctx;
    return 0;
}

px_tls_t *px_tls_new(SSL_CTX *ctx, int server, void *app)
{
    px_tls_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->ssl = SSL_new(ctx);
    t->rbio = BIO_new(BIO_s_mem());
    t->wbio = BIO_new(BIO_s_mem());
    if (t->ssl == NULL || t->rbio == NULL || t->wbio == NULL) {
        BIO_free(t->rbio);
        BIO_free(t->wbio);
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return NULL;
    }
    BIO_set_mem_eof_return(t->rbio, -1);
    SSL_set_bio(t->ssl, t->rbio, t->wbio);
    SSL_set_app_data(t->ssl, app);
    if (server)
        SSL_set_accept_state(t->ssl);
    else
        SSL_set_connect_state(t->ssl);
    return t;
}

int px_tls_set_upstream_host(px_tls_t *t, const char *host)
{
    unsigned char tmp[16];
    int is_ip = inet_pton(AF_INET, host, tmp) == 1 || inet_pton(AF_INET6, host, tmp) == 1;
    if (is_ip) {
        X509_VERIFY_PARAM *vp = SSL_get0_param(t->ssl);
        if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1)
            return PX_ETLS;
    } else {
        if (SSL_set_tlsext_host_name(t->ssl, host) != 1 || SSL_set1_host(t->ssl, host) != 1) {
            ERR_clear_error();
            return PX_ETLS;
        }
        SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    return 0;
}

void px_tls_free(px_tls_t *t)
{
    if (t == NULL)
        return;
    SSL_free(t->ssl); /* frees both BIOs */
    free(t);
}

SSL *px_tls_ssl(px_tls_t *t)
{
    return t->ssl;
}

int px_tls_feed(px_tls_t *t, const char *data, size_t len)
{
    while (len > 0) {
        int chunk = len > (size_t)INT32_MAX ? INT32_MAX : (int)len;
        int n = BIO_write(t->rbio, data, chunk);
        if (n <= 0)
            return PX_ENOMEM;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

static void px__describe(px_tls_t *t, int rc, char *err, size_t errlen)
{
    long vr = SSL_get_verify_result(t->ssl);
    if (vr != X509_V_OK) {
        snprintf(err, errlen, "certificate verify failed: %s",
                 X509_verify_cert_error_string(vr));
        ERR_clear_error();
        return;
    }
    int e = SSL_get_error(t->ssl, rc);
    unsigned long q = ERR_peek_last_error();
    if (q != 0) {
        const char *reason = ERR_reason_error_string(q);
        snprintf(err, errlen, "TLS handshake failed: %s", reason ? reason : "unknown error");
    } else if (e == SSL_ERROR_SYSCALL || e == SSL_ERROR_ZERO_RETURN) {
        snprintf(err, errlen, "TLS handshake failed: connection closed");
    } else {
        snprintf(err, errlen, "TLS handshake failed (error %d)", e);
    }
    ERR_clear_error();
}

int px_tls_handshake(px_tls_t *t, char *err, size_t errlen)
{
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    if (rc == 1)
        return 1;
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    px__describe(t, rc, err, errlen);
    return PX_ETLS;
}

int px_tls_read(px_tls_t *t, char *buf, size_t cap)
{
    ERR_clear_error();
    int n = SSL_read(t->ssl, buf, cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap);
    if (n > 0)
        return n;
    int e = SSL_get_error(t->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    if (e == SSL_ERROR_ZERO_RETURN)
        return UV_EOF;
    ERR_clear_error();
    return PX_ETLS;
}

int px_tls_write(px_tls_t *t, const char *data, size_t len)
{
    ERR_clear_error();
    while (len > 0) {
        int chunk = len > (size_t)INT32_MAX ? INT32_MAX : (int)len;
        int n = SSL_write(t->ssl, data, chunk);
        if (n <= 0) {
            ERR_clear_error();
            return PX_ETLS;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

void px_tls_shutdown(px_tls_t *t)
{
    ERR_clear_error();
    if (SSL_is_init_finished(t->ssl))
        SSL_shutdown(t->ssl);
    ERR_clear_error();
}

char *px_tls_take_output(px_tls_t *t, size_t *len)
{
    size_t n = BIO_ctrl_pending(t->wbio);
    if (n == 0)
        return NULL;
    char *buf = malloc(n);
    if (buf == NULL)
        return NULL;
    int got = BIO_read(t->wbio, buf, (int)n);
    if (got <= 0) {
        free(buf);
        return NULL;
    }
    *len = (size_t)got;
    return buf;
}

int px_tls_sniff(const char *data, size_t len)
{
    /* ContentType handshake (22), major version 3 */
    return len >= 1 && (unsigned char)data[0] == 0x16 && (len < 2 || data[1] == 0x03);
}
