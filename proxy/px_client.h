/* A client connection: the socket the agent opened, TLS when it speaks TLS (port 443, a
 * ClientHello sniffed on port 80, inside an intercepted CONNECT), and what runs on it: the
 * HTTP/1 server side (requests read and answered in order, each one an exchange), an
 * explicit-proxy CONNECT, or a tunnel. */
#ifndef PX_CLIENT_H
#define PX_CLIENT_H

#include <openssl/ssl.h>

#include <uv.h>

#include "proxy/px_ctx.h"
#include "proxy/px_precheck.h"

/* Accepts a connection waiting on server, a listener of the given kind. Failures are logged
 * on stderr. The connection joins ctx->clients and takes its scope (ctx->scope_for). */
void px_client_accept(px_ctx_t *ctx, uv_stream_t *server, px_listener_kind_t kind);

/* Closes c: an exchange in flight is logged with reason. */
void px_client_close(px_client_t *c, const char *reason);

/* Closes every connection of ctx (the shutdown). */
void px_client_close_all(px_ctx_t *ctx, const char *reason);

/* --sandboxes, after a SIGHUP removed a sandbox or changed one's sources: every connection
 * whose sandbox went, or whose source left it, takes no new request. Idle ones and tunnels
 * close now, one with a request in flight closes after it (HTTP/2: GOAWAY). */
void px_client_sandboxes_changed(px_ctx_t *ctx);

/* The client-side SSL_CTX's certificate callback: mints (or takes from the cache) the leaf for
 * the ClientHello's SNI, or for the proxy IP without one. arg is the px_ctx_t. */
int px_client_cert_cb(SSL *ssl, void *arg);

#endif
