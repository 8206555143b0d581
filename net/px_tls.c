#include "net/px_tls.h"

#include <pthread.h>
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "base/px_limits.h"
#include "base/px_err.h"
#include "net/px_hello.h"
#include "net/px_tlsbio.h"

/* Framing one TLS record adds to its plaintext, at most: TLS 1.3 header, content type and AEAD
 * tag (22), TLS 1.2 GCM header, explicit nonce and tag (29). */
#define PX__TLS_RECORD_OVERHEAD 32

struct px_tls {
    SSL *ssl;
    px_tlsbio_t bio;      /* the bytes between ssl and the socket */
    char *host;           /* upstream only: the name given to SNI and verification (session key) */
    uint16_t port;        /* ... with this port */
    int offered;          /* a remembered session was set on ssl */
    time_t verified_at;   /* when the offered session's certificate was verified */
    int peer_alert;       /* the last alert the peer sent (description), or -1 */
    int sent_cert;        /* server side: our Certificate went out */
    px_runtime_t runtime; /* server side: who sent the ClientHello, as far as it shows */
    int streaming;        /* full records are going through: buffers kept until px_tls_trim */
};

static int px__tls_idx = -1; /* SSL ex_data slot: the px_tls_t of every SSL made here */
static pthread_once_t px__tls_idx_once = PTHREAD_ONCE_INIT;
static void px__tls_idx_init(void)
{
    px__tls_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* The client-facing context's certificate callback and its argument (freed with the context). */
typedef struct px__server_cb {
    int (*cert_cb)(SSL *ssl, void *arg);
    void *arg;
} px__server_cb_t;

static px_tls_t *px__tls_of(const SSL *ssl)
{
    return px__tls_idx >= 0 ? SSL_get_ex_data(ssl, px__tls_idx) : NULL;
}

static void on_tls_info(const SSL *ssl, int where, int ret)
{
    px_tls_t *t = px__tls_of(ssl);
    if (t == NULL)
        return;
    if (where & SSL_CB_READ_ALERT)
        t->peer_alert = ret & 0xff;
    if ((where & SSL_CB_LOOP) && SSL_get_state(ssl) == TLS_ST_SW_CERT)
        t->sent_cert = 1;
}

/* Notes who seems to be calling, from the ClientHello as it came (px_hello_runtime). */
static int on_client_hello(SSL *ssl, int *alert, void *arg)
{
    (void)alert;
    (void)arg;
    px_tls_t *t = px__tls_of(ssl);
    if (t == NULL)
        return SSL_CLIENT_HELLO_SUCCESS;
    const unsigned char *cs = NULL;
    size_t cslen = SSL_client_hello_get0_ciphers(ssl, &cs);
    uint16_t ciphers[128];
    size_t nc = 0;
    for (size_t i = 0; i + 1 < cslen && nc < sizeof(ciphers) / sizeof(ciphers[0]); i += 2)
        ciphers[nc++] = (uint16_t)((cs[i] << 8) | cs[i + 1]);
    int *exts = NULL;
    size_t ne = 0;
    if (SSL_client_hello_get1_extensions_present(ssl, &exts, &ne) != 1) {
        exts = NULL;
        ne = 0;
    }
    const unsigned char *alpn = NULL;
    size_t alen = 0;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_application_layer_protocol_negotiation, &alpn,
                                  &alen) == 1 &&
        alen >= 2) {
        alpn += 2;
        alen -= 2;
    } else {
        alpn = NULL;
        alen = 0;
    }
    px_hello_info_t h = {ciphers, nc, exts, ne, alpn, alen};
    t->runtime = px_hello_runtime(&h);
    OPENSSL_free(exts);
    return SSL_CLIENT_HELLO_SUCCESS;
}

static void px__ssl_err(char *err, size_t errlen, const char *what)
{
    unsigned long e = ERR_get_error();
    char buf[256] = "";
    if (e != 0)
        ERR_error_string_n(e, buf, sizeof(buf));
    snprintf(err, errlen, "%s%s%s", what, buf[0] ? ": " : "", buf);
    ERR_clear_error();
}

/* 1 when the ALPN list in[0..inlen) holds proto (its length n); *at is its place. */
static int px__alpn_find(const unsigned char *in, unsigned inlen, const char *proto, unsigned n,
                         const unsigned char **at)
{
    for (unsigned i = 0; i < inlen;) {
        unsigned l = in[i];
        if (i + 1 + l > inlen)
            return 0;
        if (l == n && memcmp(in + i + 1, proto, n) == 0) {
            *at = in + i + 1;
            return 1;
        }
        i += 1 + l;
    }
    return 0;
}

/* h2 when offered (whatever the client's order: it is ours to pick), else http/1.1; neither:
 * no ALPN in the answer, and the connection speaks HTTP/1.1. */
static int on_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                          const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    if (px__alpn_find(in, inlen, "h2", 2, out)) {
        *outlen = 2;
        return SSL_TLSEXT_ERR_OK;
    }
    if (px__alpn_find(in, inlen, "http/1.1", 8, out)) {
        *outlen = 8;
        return SSL_TLSEXT_ERR_OK;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* The ClientHello's extensions are parsed (SNI known), no cipher is chosen yet: the owner's
 * cert_cb picks the certificate here, where a refusal can carry an alert of our choosing (an
 * OpenSSL cert_cb that fails always sends internal_error). Runs for resumed handshakes too, so
 * a name refused now is refused whatever session the client offers. */
static int on_server_name(SSL *ssl, int *alert, void *arg)
{
    const px__server_cb_t *cb = arg;
    int rc = cb->cert_cb(ssl, cb->arg);
    if (rc == 1)
        return SSL_TLSEXT_ERR_OK;
    *alert = rc == PX_TLS_REFUSED    ? PX_TLS_REFUSED_ALERT
             : rc == PX_TLS_BAD_NAME ? SSL_AD_UNRECOGNIZED_NAME
                                     : SSL_AD_INTERNAL_ERROR;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}

/* CRYPTO_EX_free for the server context's callback pair. */
static void on_server_ctx_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                               void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    free(ptr);
}

/* What the client-facing context accepts: TLS 1.2 with AEAD suites only (Mozilla's
 * "intermediate" profile: ECDHE key exchange, AES-GCM or ChaCha20-Poly1305; no CBC, so no
 * Lucky13-style padding oracles; no finite-field DHE, see PX_TLS_GROUPS), TLS 1.3 with
 * OpenSSL's default suites (all AEAD); no compression (CRIME), no renegotiation. OpenSSL 3.0
 * answers a client's max_fragment_length (RFC 6066) and has no switch against it. */
int px_tls_server_ctx_new(int (*cert_cb)(SSL *ssl, void *arg), void *arg, SSL_CTX **out, char *err,
                          size_t errlen)
{
    static int cb_idx = -1; /* one slot for every server context; set up at start-up */
    if (cb_idx < 0)
        cb_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, on_server_ctx_free);
    px__server_cb_t *cb = NULL;
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL)
        goto fail;
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* SSL_MODE_RELEASE_BUFFERS: no record buffer is kept between messages; a stream turns it
     * off for its duration (px__tls_streaming) */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_ENABLE_PARTIAL_WRITE);
    /* Tickets stay: their key lives in this process's memory only, beside the CA key, and a
     * TLS 1.3 resumption runs a fresh ECDHE; stateful resumption would cost a server cache. */
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(ctx, PX_TLS12_CIPHERS) != 1 ||
        SSL_CTX_set1_groups_list(ctx, PX_TLS_GROUPS) != 1)
        goto fail;
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"airlock", 7);
    cb = malloc(sizeof(*cb));
    if (cb == NULL || cb_idx < 0 || SSL_CTX_set_ex_data(ctx, cb_idx, cb) != 1)
        goto fail;
    cb->cert_cb = cert_cb; /* from here SSL_CTX_free() frees cb */
    cb->arg = arg;
    SSL_CTX_set_tlsext_servername_callback(ctx, on_server_name);
    SSL_CTX_set_tlsext_servername_arg(ctx, cb);
    SSL_CTX_set_client_hello_cb(ctx, on_client_hello, NULL);
    SSL_CTX_set_info_callback(ctx, on_tls_info);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn_select, NULL);
    *out = ctx;
    return 0;
fail:
    px__ssl_err(err, errlen, "cannot set up the client-facing TLS context");
    free(cb);
    SSL_CTX_free(ctx);
    return PX_ETLS;
}

/* ---- upstream sessions ------------------------------------------------------------------
 * Per host:port, kept by the upstream context: the most recent TLS 1.2 session (reused), or
 * up to PX_TLS_TICKETS_PER_KEY TLS 1.3 tickets (each used once, newest first).
 *
 * Why the key is the exact host name and port: SNI and SSL_set1_host() (or the IP check) are
 * per SSL, and a resumed handshake carries no certificate, so OpenSSL verifies neither chain
 * nor name on resumption; SSL_get_verify_result() then reports what was saved with the
 * session. A session is therefore offered only to the very name (and port) it was verified
 * for: the key is the same normalized string px_tls_set_upstream_host() hands to SNI and to
 * the name check, never an address, so two names on one IP never share a session. Sessions
 * enter only through new_session_cb, which OpenSSL calls once the handshake is complete
 * (TLS 1.2) or for tickets after it (TLS 1.3), i.e. after SSL_VERIFY_PEER accepted chain and
 * name (a failure aborts the handshake first); every ticket kept under a key was received on
 * a connection to that very key. The trust store is fixed for the context's life. A failed
 * handshake forgets all of its key's sessions; a TLS 1.3 ticket is taken out when offered
 * (single use, RFC 8446 appendix C.4), the tickets a connection receives join the ones left
 * (the oldest go when PX_TLS_TICKETS_PER_KEY are kept), so concurrent connections to one key
 * can each resume; a TLS 1.2 session stays for reuse and replaces whatever the key held.
 * Memory: at most PX_TLS_SESSIONS_MAX keys x PX_TLS_TICKETS_PER_KEY sessions. */

#define PX__SESS_BUCKETS 256

typedef struct px__ticket {
    SSL_SESSION *sess;  /* one reference */
    time_t verified_at; /* the full handshake this session descends from */
} px__ticket_t;

typedef struct px__sess {
    struct px__sess *hnext;                  /* same bucket */
    struct px__sess *newer, *older;          /* least recently used order */
    px__ticket_t tk[PX_TLS_TICKETS_PER_KEY]; /* oldest first; one TLS 1.2 session, or tickets */
    size_t ntk;                              /* 1..PX_TLS_TICKETS_PER_KEY */
    uint16_t port;
    char host[];
} px__sess_t;

typedef struct px__sessions {
    px__sess_t *buckets[PX__SESS_BUCKETS];
    px__sess_t *newest, *oldest;
    size_t n;     /* keys, at most PX_TLS_SESSIONS_MAX */
    size_t nsess; /* sessions under all keys */
    int ssl_idx;  /* SSL ex_data slot: the px_tls_t of an upstream connection */
} px__sessions_t;

static int on_upstream_session(SSL *ssl, SSL_SESSION *sess);

/* The store of ctx, or NULL when ctx is not an upstream context. */
static px__sessions_t *px__sessions_of(SSL_CTX *ctx)
{
    if (SSL_CTX_sess_get_new_cb(ctx) != on_upstream_session)
        return NULL;
    return SSL_CTX_get_app_data(ctx);
}

static unsigned px__sess_hash(const char *host, uint16_t port)
{
    unsigned h = 2166136261u;
    for (const char *s = host; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ (port & 0xffu)) * 16777619u;
    h = (h ^ (unsigned)(port >> 8)) * 16777619u;
    return h % PX__SESS_BUCKETS;
}

/* The link pointing at host:port's entry, or at the NULL that ends its bucket. */
static px__sess_t **px__sess_link(px__sessions_t *st, const char *host, uint16_t port)
{
    px__sess_t **l = &st->buckets[px__sess_hash(host, port)];
    while (*l != NULL && ((*l)->port != port || strcmp((*l)->host, host) != 0))
        l = &(*l)->hnext;
    return l;
}

static void px__lru_unlink(px__sessions_t *st, px__sess_t *e)
{
    if (e->newer != NULL)
        e->newer->older = e->older;
    else
        st->newest = e->older;
    if (e->older != NULL)
        e->older->newer = e->newer;
    else
        st->oldest = e->newer;
    e->newer = e->older = NULL;
}

static void px__lru_push(px__sessions_t *st, px__sess_t *e)
{
    e->newer = NULL;
    e->older = st->newest;
    if (st->newest != NULL)
        st->newest->newer = e;
    else
        st->oldest = e;
    st->newest = e;
}

/* Frees e's sessions from index i on. */
static void px__sess_truncate(px__sessions_t *st, px__sess_t *e, size_t i)
{
    while (e->ntk > i) {
        SSL_SESSION_free(e->tk[--e->ntk].sess);
        st->nsess--;
    }
}

/* Takes e's session i out (its reference goes to the caller). */
static SSL_SESSION *px__sess_take(px__sessions_t *st, px__sess_t *e, size_t i)
{
    SSL_SESSION *sess = e->tk[i].sess;
    memmove(&e->tk[i], &e->tk[i + 1], (e->ntk - i - 1) * sizeof(e->tk[0]));
    e->ntk--;
    st->nsess--;
    return sess;
}

/* Unlinks the entry *link points at and frees it with its session references. */
static void px__sess_remove(px__sessions_t *st, px__sess_t **link)
{
    px__sess_t *e = *link;
    *link = e->hnext;
    px__lru_unlink(st, e);
    px__sess_truncate(st, e, 0);
    free(e);
    st->n--;
}

static void px__sess_drop(px__sessions_t *st, const char *host, uint16_t port)
{
    px__sess_t **l = px__sess_link(st, host, port);
    if (*l != NULL)
        px__sess_remove(st, l);
}

static int px__sess_is_tls13(SSL_SESSION *sess)
{
    return SSL_SESSION_get_protocol_version(sess) >= TLS1_3_VERSION;
}

/* Remembers sess (taken on success) for host:port: a TLS 1.3 ticket joins the key's tickets
 * as the newest (dropping the oldest when PX_TLS_TICKETS_PER_KEY are kept), anything else
 * replaces what the key held. Evicts the least recently used key when full. Returns 0 or
 * PX_ENOMEM. */
static int px__sess_put(px__sessions_t *st, const char *host, uint16_t port, SSL_SESSION *sess,
                        time_t verified_at)
{
    px__sess_t *e = *px__sess_link(st, host, port);
    if (e != NULL) {
        if (!px__sess_is_tls13(sess) || !px__sess_is_tls13(e->tk[0].sess))
            px__sess_truncate(st, e, 0); /* TLS 1.2, or the version changed */
        else if (e->ntk == PX_TLS_TICKETS_PER_KEY)
            SSL_SESSION_free(px__sess_take(st, e, 0));
        px__lru_unlink(st, e);
        px__lru_push(st, e);
    } else {
        size_t len = strlen(host);
        e = malloc(sizeof(*e) + len + 1);
        if (e == NULL)
            return PX_ENOMEM;
        if (st->n >= PX_TLS_SESSIONS_MAX)
            px__sess_drop(st, st->oldest->host, st->oldest->port);
        memcpy(e->host, host, len + 1);
        e->port = port;
        e->ntk = 0;
        unsigned b = px__sess_hash(host, port);
        e->hnext = st->buckets[b];
        st->buckets[b] = e;
        px__lru_push(st, e);
        st->n++;
    }
    e->tk[e->ntk].sess = sess;
    e->tk[e->ntk].verified_at = verified_at;
    e->ntk++;
    st->nsess++;
    return 0;
}

/* Sets the newest good session remembered for t's key on t->ssl, dropping expired ones. */
static void px__sess_offer(px__sessions_t *st, px_tls_t *t)
{
    px__sess_t **l = px__sess_link(st, t->host, t->port);
    px__sess_t *e = *l;
    if (e == NULL)
        return;
    time_t now = time(NULL);
    while (e->ntk > 0) {
        px__ticket_t *tk = &e->tk[e->ntk - 1];
        long age = (long)now - SSL_SESSION_get_time(tk->sess);
        if (SSL_SESSION_is_resumable(tk->sess) && age < SSL_SESSION_get_timeout(tk->sess) &&
            now - tk->verified_at < PX_TLS_SESSION_LIFETIME_MAX)
            break;
        px__sess_truncate(st, e, e->ntk - 1);
    }
    if (e->ntk == 0) {
        px__sess_remove(st, l);
        return;
    }
    px__ticket_t *tk = &e->tk[e->ntk - 1];
    if (SSL_set_session(t->ssl, tk->sess) != 1) { /* takes its own reference */
        ERR_clear_error();
        return;
    }
    t->offered = 1;
    t->verified_at = tk->verified_at;
    if (px__sess_is_tls13(tk->sess)) {
        px__sess_truncate(st, e, e->ntk - 1); /* one use per ticket */
        if (e->ntk == 0) {
            px__sess_remove(st, l);
            return;
        }
    }
    px__lru_unlink(st, e);
    px__lru_push(st, e);
}

/* A handshake for t's key failed (or never finished): forget all of that key's sessions,
 * whichever connections brought them, so the next connection starts with a full handshake. */
static void px__sess_forget(px_tls_t *t)
{
    px__sessions_t *st = px__sessions_of(SSL_get_SSL_CTX(t->ssl));
    if (st != NULL && t->host != NULL)
        px__sess_drop(st, t->host, t->port);
    t->offered = 0;
}

/* A TLS 1.2 handshake resumed t's session. OpenSSL calls no new_session_cb then; when the
 * server renewed its ticket, the SSL holds a new session and the offered one was marked not
 * resumable, so the one the SSL holds now is remembered (often the same object). */
static void px__sess_keep_resumed(px_tls_t *t)
{
    px__sessions_t *st = px__sessions_of(SSL_get_SSL_CTX(t->ssl));
    SSL_SESSION *sess = SSL_get1_session(t->ssl);
    if (st == NULL || sess == NULL)
        return;
    if (!SSL_SESSION_is_resumable(sess) ||
        px__sess_put(st, t->host, t->port, sess, t->verified_at) != 0)
        SSL_SESSION_free(sess);
}

/* new_session_cb: a resumable session for an upstream connection, after verification (see
 * above). Returning 1 keeps the reference OpenSSL passes. */
static int on_upstream_session(SSL *ssl, SSL_SESSION *sess)
{
    px__sessions_t *st = px__sessions_of(SSL_get_SSL_CTX(ssl));
    px_tls_t *t = st != NULL ? SSL_get_ex_data(ssl, st->ssl_idx) : NULL;
    if (t == NULL || t->host == NULL || SSL_get_verify_result(ssl) != X509_V_OK ||
        !SSL_SESSION_is_resumable(sess))
        return 0;
    /* a ticket from a resumed connection descends from the same verification */
    time_t verified_at = SSL_session_reused(ssl) ? t->verified_at : time(NULL);
    return px__sess_put(st, t->host, t->port, sess, verified_at) == 0;
}

/* CRYPTO_EX_free for the context's store: runs from SSL_CTX_free() once the last SSL made
 * from the context is gone, so no connection can still reach the store. */
static void on_client_ctx_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                               void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    px__sessions_t *st = ptr;
    if (st == NULL)
        return;
    for (size_t b = 0; b < PX__SESS_BUCKETS; b++)
        while (st->buckets[b] != NULL)
            px__sess_remove(st, &st->buckets[b]);
    free(st);
}

/* Attaches an empty store to ctx: found through the app data, freed through a second slot
 * whose free callback SSL_CTX_free() runs (the app data slot has none). Both slot numbers
 * are allocated per context; a process makes one upstream context. */
static int px__sessions_attach(SSL_CTX *ctx)
{
    px__sessions_t *st = calloc(1, sizeof(*st));
    if (st == NULL)
        return PX_ENOMEM;
    int free_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, on_client_ctx_free);
    if (free_idx < 0 || SSL_CTX_set_ex_data(ctx, free_idx, st) != 1) {
        free(st);
        return PX_ENOMEM;
    }
    /* from here SSL_CTX_free() frees st */
    st->ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
    if (st->ssl_idx < 0 || SSL_CTX_set_app_data(ctx, st) != 1)
        return PX_ENOMEM;
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, on_upstream_session);
    return 0;
}

size_t px_tls_client_sessions(SSL_CTX *ctx)
{
    px__sessions_t *st = px__sessions_of(ctx);
    return st != NULL ? st->nsess : 0;
}

/* ---- contexts --------------------------------------------------------------------------- */

int px_tls_client_ctx_new(const char *ca_file, SSL_CTX **out, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) {
        px__ssl_err(err, errlen, "SSL_CTX_new");
        return PX_ETLS;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    /* SSL_MODE_RELEASE_BUFFERS: no record buffer is kept between messages; a stream turns it
     * off for its duration (px__tls_streaming) */
    SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_ENABLE_PARTIAL_WRITE);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    if (SSL_CTX_set1_groups_list(ctx, PX_TLS_GROUPS) != 1) {
        px__ssl_err(err, errlen, "cannot set the key-exchange groups");
        SSL_CTX_free(ctx);
        return PX_ETLS;
    }
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
    /* h2 first: the upstream picks; a WebSocket upgrade's connection offers http/1.1 alone */
    static const unsigned char alpn[] = "\x02h2\x08http/1.1";
    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1);
    if (px__sessions_attach(ctx) != 0) {
        px__ssl_err(err, errlen, "cannot set up the upstream session store");
        SSL_CTX_free(ctx);
        return PX_ETLS;
    }
    *out = ctx;
    return 0;
}

px_tls_t *px_tls_new(SSL_CTX *ctx, int server, void *app)
{
    px_tls_t *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->ssl = SSL_new(ctx);
    if (t->ssl == NULL || px_tlsbio_attach(&t->bio, t->ssl) != 0) {
        SSL_free(t->ssl);
        free(t);
        ERR_clear_error();
        return NULL;
    }
    SSL_set_app_data(t->ssl, app);
    t->peer_alert = -1;
    pthread_once(&px__tls_idx_once, px__tls_idx_init); /* loops make SSLs at once */
    if (px__tls_idx >= 0)
        SSL_set_ex_data(t->ssl, px__tls_idx, t);
    if (server)
        SSL_set_accept_state(t->ssl);
    else
        SSL_set_connect_state(t->ssl);
    return t;
}

int px_tls_set_upstream_host(px_tls_t *t, const char *host, uint16_t port)
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
    px__sessions_t *st = px__sessions_of(SSL_get_SSL_CTX(t->ssl));
    if (st == NULL)
        return 0;
    /* the session key is this very string: the name just given to SNI and verification */
    free(t->host);
    t->host = strdup(host);
    if (t->host == NULL)
        return PX_ENOMEM;
    t->port = port;
    if (SSL_set_ex_data(t->ssl, st->ssl_idx, t) != 1) {
        ERR_clear_error();
        return PX_ENOMEM;
    }
    px__sess_offer(st, t);
    return 0;
}

void px_tls_free(px_tls_t *t)
{
    if (t == NULL)
        return;
    if (t->host != NULL && !SSL_is_init_finished(t->ssl)) {
        if (t->offered)
            px__sess_forget(t); /* a resumption that failed or was abandoned */
    } else if (t->host != NULL) {
        /* airlock closes upstream connections without a close_notify; SSL_free() would then
         * mark the session (shared with the store) not resumable. TLS 1.1+ no longer ties
         * resumption to a clean close (RFC 5246 section 7.2.1); a fatal alert still
         * invalidates it, OpenSSL marks the session when one is sent or received. */
        SSL_set_shutdown(t->ssl, SSL_get_shutdown(t->ssl) | SSL_SENT_SHUTDOWN);
    }
    SSL_free(t->ssl); /* frees both BIOs */
    px_tlsbio_free(&t->bio);
    free(t->host);
    free(t);
}

SSL *px_tls_ssl(px_tls_t *t)
{
    return t->ssl;
}

int px_tls_peer_alert(const px_tls_t *t)
{
    return t->peer_alert;
}

int px_tls_alpn_h2(const px_tls_t *t)
{
    const unsigned char *p = NULL;
    unsigned int n = 0;
    SSL_get0_alpn_selected(t->ssl, &p, &n);
    return n == 2 && memcmp(p, "h2", 2) == 0;
}

int px_tls_sent_certificate(const px_tls_t *t)
{
    return t->sent_cert;
}

px_runtime_t px_tls_runtime(const px_tls_t *t)
{
    return t->runtime;
}

/* Full records are going through: SSL_MODE_RELEASE_BUFFERS would free and allocate OpenSSL's
 * record buffers (~17 KiB each way) per record, so they stay until px_tls_trim (quiet). */
static void px__tls_streaming(px_tls_t *t)
{
    if (!t->streaming) {
        t->streaming = 1;
        SSL_clear_mode(t->ssl, SSL_MODE_RELEASE_BUFFERS);
    }
}

/* Both the record buffers inside OpenSSL (~33 KiB once a record went each way) and ours. */
void px_tls_trim(px_tls_t *t)
{
    if (t == NULL || !SSL_is_init_finished(t->ssl))
        return;
    if (t->streaming) {
        t->streaming = 0;
        SSL_set_mode(t->ssl, SSL_MODE_RELEASE_BUFFERS);
    }
    SSL_free_buffers(t->ssl); /* keeps them when a record is half read or written */
    px_tlsbio_trim(&t->bio);
}

int px_tls_feed(px_tls_t *t, const char *data, size_t len)
{
    return px_tlsbio_feed(&t->bio, data, len) == 0 ? 0 : PX_ENOMEM;
}

void px_tls_lend(px_tls_t *t, const char *data, size_t len)
{
    px_tlsbio_lend(&t->bio, data, len);
}

int px_tls_keep(px_tls_t *t)
{
    return px_tlsbio_keep(&t->bio) == 0 ? 0 : PX_ENOMEM;
}

size_t px_tls_output_len(const px_tls_t *t)
{
    return t->bio.out_len;
}

static void px__describe(px_tls_t *t, int rc, char *err, size_t errlen)
{
    long vr = SSL_get_verify_result(t->ssl);
    if (vr != X509_V_OK) {
        snprintf(err, errlen, "certificate verify failed: %s", X509_verify_cert_error_string(vr));
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
    if (rc == 1) {
        if (t->offered && SSL_session_reused(t->ssl) && SSL_version(t->ssl) < TLS1_3_VERSION)
            px__sess_keep_resumed(t);
        return 1;
    }
    int e = SSL_get_error(t->ssl, rc);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
        return 0;
    px__describe(t, rc, err, errlen);
    if (t->host != NULL)
        px__sess_forget(t);
    return PX_ETLS;
}

int px_tls_read(px_tls_t *t, char *buf, size_t cap)
{
    ERR_clear_error();
    int n = SSL_read(t->ssl, buf, cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap);
    if (n >= SSL3_RT_MAX_PLAIN_LENGTH)
        px__tls_streaming(t);
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
    if (len >= SSL3_RT_MAX_PLAIN_LENGTH)
        px__tls_streaming(t);
    /* the records' room in one allocation rather than a doubling per record */
    size_t records = len / SSL3_RT_MAX_PLAIN_LENGTH + 1;
    if (len <= SIZE_MAX / 2 &&
        px_tlsbio_reserve(&t->bio, len + records * PX__TLS_RECORD_OVERHEAD) != 0)
        return PX_ETLS;
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
    return px_tlsbio_take(&t->bio, len);
}

int px_tls_sniff(const char *data, size_t len)
{
    /* ContentType handshake (22), major version 3 */
    return len >= 1 && (unsigned char)data[0] == 0x16 && (len < 2 || data[1] == 0x03);
}
