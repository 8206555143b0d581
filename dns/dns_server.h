/* The DNS responder on libuv: UDP and TCP (RFC 7766) listeners on one address and port,
 * answering every query through dns_codec. Nothing is ever forwarded (docs/network-log.md, DNS). */
#ifndef DNS_SERVER_H
#define DNS_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "dns/dns_codec.h"

/* Concurrent TCP clients; one more is accepted and closed at once. */
#define DNS_SERVER_TCP_CONNS_MAX 256
/* A TCP client that neither completes a query nor takes an answer for this long is dropped
 * (RFC 7766 §6.2.3). */
#define DNS_SERVER_TCP_IDLE_MS 10000
/* Longest query taken over TCP; a longer length prefix closes the connection. */
#define DNS_SERVER_TCP_MSG_MAX 4096
/* Answer bytes queued per TCP client before its reading pauses. */
#define DNS_SERVER_TCP_OUT_MAX 8192
/* UDP answers that may wait for a full socket buffer; more are dropped (clients retry). */
#define DNS_SERVER_UDP_SEND_POOL 64

typedef struct dns_server dns_server_t;

/* Receives what the log says of each answered query (the proxy writes the line "DNS A
 * example.com -> 10.199.1.100"); f is borrowed for the call. Never called when no answer is
 * sent. */
typedef void (*dns_server_log_cb)(void *data, const dns_log_fields_t *f);
/* Where a query from src goes (several sandboxes behind one responder): the data handed to
 * log_cb for its line, or NULL to send no answer at all. Called for every query, synchronously;
 * the pointer is used only within the call. */
typedef void *(*dns_server_route_cb)(void *data, const struct sockaddr *src);

/* Fires once, after the last handle of the server closed; the server is gone by then. */
typedef void (*dns_server_close_cb)(void *data);

typedef struct dns_server_stats {
    uint64_t udp_answers;
    uint64_t udp_dropped; /* answers lost to a full send pool or a send error */
    uint64_t tcp_answers;
    uint64_t tcp_accepted;
    uint64_t tcp_refused; /* closed at once: over DNS_SERVER_TCP_CONNS_MAX */
    uint64_t tcp_timeouts;
    unsigned tcp_open;
} dns_server_stats_t;

/* Binds UDP and TCP on addr (port 0: one free port shared by both) and starts answering every
 * A query with proxy_ip (dotted IPv4 text). Borrows addr and proxy_ip; keeps log_cb and data
 * until the close callback. Returns 0 and *out, or a negative code (UV_EADDRINUSE, UV_EINVAL). */
int dns_server_start(uv_loop_t *loop, const struct sockaddr *addr, const char *proxy_ip,
                     dns_server_log_cb log_cb, void *data, dns_server_t **out);

/* Routes every query by its source from now on (route gets the data given to
 * dns_server_start); NULL: every query is answered and logged with that data. */
void dns_server_set_route(dns_server_t *srv, dns_server_route_cb route);

/* Writes the bound address (with the real port) into *out. Returns 0 or a libuv code. */
int dns_server_address(const dns_server_t *srv, struct sockaddr_storage *out);

/* Sets the TCP idle/stall timeout for connections accepted from now on (default
 * DNS_SERVER_TCP_IDLE_MS); tests use a few hundred ms. */
void dns_server_set_tcp_timeout(dns_server_t *srv, uint64_t ms);

/* Copies the counters into *out. */
void dns_server_get_stats(const dns_server_t *srv, dns_server_stats_t *out);

/* Stops answering and closes every handle, TCP clients included. close_cb (may be NULL) fires
 * with data after the last close, then the server is freed. Idempotent: later calls do nothing. */
void dns_server_close(dns_server_t *srv, dns_server_close_cb close_cb, void *data);

#endif
