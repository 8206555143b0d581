/* A client connection: the socket the agent opened, TLS when it speaks TLS (port 443, a
 * ClientHello sniffed on port 80, inside an intercepted CONNECT), and what runs on it: the
 * HTTP/1 server side (requests read and answered in order, each one an exchange), an
 * explicit-proxy CONNECT, or a tunnel. */
#ifndef PX_CLIENT_H
#define PX_CLIENT_H

#include <openssl/ssl.h>

#include "proxy/px_engine.h"

/* Accepts a connection waiting on listener l. Failures are counted and logged on stderr. */
void px_client_accept(px_listener_t *l);

/* The engine's list links of c (two pointers, the engine's to use). */
void *px_client_links(px_client_t *c);

/* Closes c (engine shutdown): an exchange in flight is logged with reason. */
void px_client_close(px_client_t *c, const char *reason);

/* --sandboxes, after a SIGHUP removed a sandbox or changed one's sources: every connection
 * whose sandbox went, or whose source left it, takes no new request. Idle ones and tunnels
 * close now, one with a request in flight closes after it (HTTP/2: GOAWAY). */
void px_client_sandboxes_changed(px_engine_t *eng);

/* The client-side SSL_CTX's certificate callback: mints (or takes from the cache) the leaf for
 * the ClientHello's SNI, or for the proxy IP without one. arg is the engine. */
int px_client_cert_cb(SSL *ssl, void *arg);

#endif
