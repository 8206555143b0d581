/* TLS on libuv: an SSL object between two BIOs over the socket's bytes (px_tlsbio.h: net→SSL
 * reads the caller's buffer, SSL→net collects records). The owner feeds or lends received
 * ciphertext, drives the handshake, reads plaintext out, and after every call takes the
 * ciphertext to write with px_tls_take_output(). Contexts are long-lived and
 * shared: one for the client side (airlock as server), one for upstream (airlock as client). */
#ifndef PX_TLS_H
#define PX_TLS_H

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>

#include "net/px_hello.h"

#define PX_TLS_READ_CHUNK 16384 /* plaintext bytes per px_tls_read() call */
/* Longest an upstream session is offered after the full handshake that verified the peer's
 * certificate: resumed connections hand out new tickets, which would otherwise extend it for
 * ever (RFC 8446 section 4.6.1 asks for such a limit). Seconds. */
#define PX_TLS_SESSION_LIFETIME_MAX (60 * 60)

/* Key-exchange groups offered and accepted on both legs. Finite-field groups (ffdhe2048-8192,
 * OpenSSL's defaults too) cost ~100 ms of CPU per handshake for nothing the client pays: a
 * replayed ClientHello offering only those would be a cheap way to burn airlock's CPU. Every
 * client runtime agents use offers X25519 or P-256 (curl/OpenSSL, Python, Node, Go, Java, the
 * AWS SDKs), so they only meet a HelloRetryRequest at worst. */
#define PX_TLS_GROUPS "X25519:P-256:P-384"

typedef struct px_tls px_tls_t;

/* TLS 1.2 suites toward the agent: Mozilla's "intermediate" profile without finite-field DHE
 * (AEAD only). airlock's leaves are ECDSA P-256 whatever the CA's key: the RSA ones are inert. */
#define PX_TLS12_CIPHERS                                                                           \
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"                                   \
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"                                   \
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305"

/* What cert_cb returns besides 1 (certificate set) and 0 (internal failure: internal_error
 * alert): PX_TLS_REFUSED, this client may have no certificate for the name it asked for
 * (PX_TLS_REFUSED_ALERT: curl, Python and Node print "tlsv1 alert access denied"), or
 * PX_TLS_BAD_NAME, the name is one no certificate can carry (unrecognized_name). */
#define PX_TLS_REFUSED (-2)
#define PX_TLS_BAD_NAME (-3)
#define PX_TLS_REFUSED_ALERT SSL_AD_ACCESS_DENIED

/* The client-facing context: TLS 1.2-1.3 (PX_TLS12_CIPHERS on TLS 1.2), ALPN h2 or http/1.1
 * (h2 whenever offered), session tickets, and cert_cb choosing the certificate once the
 * ClientHello's SNI is known, resumed handshakes included (arg is kept). Returns 0 or PX_ETLS
 * with a reason in err. */
int px_tls_server_ctx_new(int (*cert_cb)(SSL *ssl, void *arg), void *arg, SSL_CTX **out, char *err,
                          size_t errlen);

/* The upstream context: TLS 1.2+, peer verification against ca_file (PEM bundle) or, when
 * NULL, the system's default store; ALPN h2 and http/1.1; a store of resumable sessions per
 * host:port (at most PX_TLS_SESSIONS_MAX keys): the most recent TLS 1.2 session, or up to
 * PX_TLS_TICKETS_PER_KEY TLS 1.3 tickets, each used once; freed with the context. */
int px_tls_client_ctx_new(const char *ca_file, SSL_CTX **out, char *err, size_t errlen);

/* Sessions (TLS 1.2 sessions and TLS 1.3 tickets, under all keys) the upstream context ctx
 * remembers now (0 for any other context). */
size_t px_tls_client_sessions(SSL_CTX *ctx);

/* A TLS state for one connection. server: 1 for the client side. app is stored as the SSL's
 * app data. Returns NULL when out of memory. */
px_tls_t *px_tls_new(SSL_CTX *ctx, int server, void *app);

/* Sets SNI and hostname (or IP) verification for an upstream connection to host:port and
 * offers the newest session remembered for exactly that host and port, if any; sessions this
 * connection receives are remembered under the same key. host is borrowed (copied). Returns
 * 0, or PX_ETLS / PX_ENOMEM. */
int px_tls_set_upstream_host(px_tls_t *t, const char *host, uint16_t port);

void px_tls_free(px_tls_t *t);
SSL *px_tls_ssl(px_tls_t *t);

/* The last alert the peer sent (its description number, e.g. 48 unknown_ca), or -1. */
int px_tls_peer_alert(const px_tls_t *t);

/* Server side: 1 once our Certificate message went out. */
int px_tls_sent_certificate(const px_tls_t *t);

/* 1 when ALPN chose h2 on this connection. */
int px_tls_alpn_h2(const px_tls_t *t);

/* Server side: the runtime the ClientHello looked like (px_hello_runtime). */
px_runtime_t px_tls_runtime(const px_tls_t *t);

/* Gives back the connection's TLS buffers (OpenSSL's record buffers, ours) when they are
 * empty (the connection is between messages). Call it once the connection has gone quiet: a
 * stream would only allocate them again. */
void px_tls_trim(px_tls_t *t);

/* Hands received ciphertext to OpenSSL (copied). Returns 0 or PX_ENOMEM. */
int px_tls_feed(px_tls_t *t, const char *data, size_t len);

/* Lends received ciphertext instead (data borrowed until px_tls_keep(), read after anything fed
 * before): the handshake and px_tls_read() take it from there without a copy. px_tls_keep()
 * ends the lend and copies the part not read yet (a partial record). Returns 0 or PX_ENOMEM. */
void px_tls_lend(px_tls_t *t, const char *data, size_t len);
int px_tls_keep(px_tls_t *t);

/* Drives the handshake. Returns 1 when complete, 0 when more input is needed, or PX_ETLS with
 * a reason in err (e.g. "certificate verify failed: unable to get local issuer
 * certificate"). */
int px_tls_handshake(px_tls_t *t, char *err, size_t errlen);

/* Decrypts into buf. Returns bytes (>0), 0 when no more plaintext is available now, UV_EOF
 * after the peer's close_notify, or PX_ETLS. */
int px_tls_read(px_tls_t *t, char *buf, size_t cap);

/* Encrypts len bytes. Returns 0 or PX_ETLS. */
int px_tls_write(px_tls_t *t, const char *data, size_t len);

/* Queues a close_notify alert. */
void px_tls_shutdown(px_tls_t *t);

/* Ciphertext waiting to be sent, as a malloc'd buffer the caller takes, or NULL. */
char *px_tls_take_output(px_tls_t *t, size_t *len);

/* Bytes of ciphertext waiting to be taken. */
size_t px_tls_output_len(const px_tls_t *t);

/* 1 when data looks like the start of a TLS handshake record. */
int px_tls_sniff(const char *data, size_t len);

#endif
