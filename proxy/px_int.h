/* Internals shared by the proxy/ engine files (px_engine.c, px_conn.c, px_upstream.c,
 * px_head.c). Nothing outside proxy/ includes this header. */
#ifndef PX_INT_H
#define PX_INT_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "addons/addon.h"
#include "proxy/px_config.h"
#include "proxy/px_log.h"

#define px_container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* Buffers and queues. */
#define PX_READ_BUF 65536            /* one read from a socket */
#define PX_HEAD_BUF_MAX (PX_HEAD_MAX + PX_READ_BUF) /* head bytes plus what came with them */
#define PX_WQ_HIGH (1024 * 1024)     /* stop reading the other side above this queue */
#define PX_WQ_LOW (256 * 1024)       /* resume below this */
#define PX_POOL_IDLE_MAX 1024        /* idle upstream connections kept in all */
#define PX_POOL_PER_KEY_MAX 256      /* idle upstream connections per host:port:scheme */
#define PX_POOL_IDLE_MS (60 * 1000)  /* an idle upstream connection is closed after this */
#define PX_POOL_BUCKETS 64
#define PX_HOST_MAX 255              /* a host name */
#define PX_BODY_DISCARD_MAX (64 * 1024 * 1024) /* body bytes swallowed after a 403 */

typedef struct px_engine px_engine_t;
typedef struct px_conn px_conn_t;
typedef struct px_upstream px_upstream_t;
typedef struct px_snapshot px_snapshot_t;

/* A span of a head buffer, as offsets (the buffer may move while it grows). */
typedef struct px_span {
    uint32_t off;
    uint32_t len;
} px_span_t;

/* A request or response head being read: raw bytes plus spans found by llhttp. */
typedef struct px_head {
    char *buf;
    size_t len;
    size_t cap;
    size_t parsed;      /* bytes of buf already given to llhttp */
    size_t msg_start;   /* offset where this message starts */
    size_t head_end;    /* offset just after the blank line, when complete */
    px_span_t url;      /* request target, or status text */
    px_span_t names[PX_HEADERS_MAX];
    px_span_t values[PX_HEADERS_MAX];
    size_t n;
    int last_was_value;
    int too_many;
    int complete;       /* on_headers_complete fired */
    int msg_done;       /* on_message_complete fired (parser paused there) */
    int no_body;        /* set by the owner: a response to HEAD (llhttp cannot know) */
    size_t trailer_bytes;  /* trailer section so far (never stored: see px_head.c) */
    size_t trailer_fields;
    void *owner;        /* for on_body (the body-filter settings only) */
    int (*on_body)(void *owner, const char *at, size_t len);
} px_head_t;

typedef enum px_listener_kind {
    PX_LISTEN_HTTP = 0,
    PX_LISTEN_HTTPS,
    PX_LISTEN_PROXY,
    PX_LISTEN_TRANSPARENT,
} px_listener_kind_t;

typedef struct px_listener {
    uv_tcp_t tcp;
    px_engine_t *eng;
    px_listener_kind_t kind;
} px_listener_t;

/* The state of a client connection (STYLE.md: one enum, changed in one function). */
typedef enum px_state {
    PX_ST_TLS_HANDSHAKE = 0,
    PX_ST_READ_HEAD,
    PX_ST_POLICY,
    PX_ST_RESOLVE,
    PX_ST_CONNECT,
    PX_ST_UPSTREAM_TLS,
    PX_ST_RELAY_BODY,
    PX_ST_READ_RESPONSE,
    PX_ST_DISCARD_BODY, /* our answer went out; the request body is read and dropped */
    PX_ST_UPGRADED,
    PX_ST_TUNNEL_HELLO, /* explicit proxy, passthrough: reading the ClientHello for its SNI */
    PX_ST_CLOSING,
} px_state_t;

struct px_conn {
    uv_tcp_t tcp;
    uv_timer_t timer;
    px_engine_t *eng;
    px_conn_t *prev, *next;   /* engine's list */
    px_listener_kind_t kind;
    px_state_t state;
    int tls;                  /* scheme https on this connection */
    int closing;
    int handles_open;
    int reading;
    int close_after_write;    /* close once the write queue drains */
    int paused_by_upstream;   /* reads stopped for backpressure */
    int up_paused;            /* upstream reads stopped: the client is slow to read */
    int answers_paused;       /* pipelined requests wait: our answers fill the client queue */
    uint64_t id;

    /* TLS toward the client */
    struct px_tls *tls_state; /* NULL on plain HTTP */
    int sniffed;              /* the first bytes were looked at */
    int tls_done;             /* handshake complete */
    int in_pump;              /* inside the plaintext loop (re-entrancy guard) */
    int pump_again;
    int in_pending;           /* inside px__process_pending (re-entrancy guard) */
    int has_sni;
    char sni[PX_HOST_MAX + 1];/* normalized SNI */

    /* explicit proxy (CONNECT) and transparent mode */
    int in_tunnel;            /* inside an accepted CONNECT: TLS to the CONNECT host */
    int passthrough;          /* the tunnel is relayed unread */
    char tunnel_host[PX_HOST_MAX + 1]; /* normalized CONNECT host */
    uint16_t tunnel_port;
    uint16_t orig_port;       /* transparent: the original destination port */

    /* request */
    llhttp_t req_parser;
    px_head_t rq;
    addon_req_t *req;         /* the view handed to addons, valid from POLICY to the end */
    px_snapshot_t *snap;      /* the configuration this request started with (a reference) */
    char *pending;            /* client bytes read but not yet parsed (pipelining) */
    size_t pending_len;
    int req_done;             /* request message complete */
    int req_keepalive;
    int req_is_head;
    int req_upgrade;
    int req_expect_continue;
    int filter;               /* an addon rewrites the body (ADDON_BODY_STREAM / _BUFFER) */
    int rechunk;              /* the body is re-framed with chunked encoding upstream */
    int filter_err;           /* an addon failed on the body */
    char *bodybuf;            /* ADDON_BODY_BUFFER: the body gathered so far */
    size_t bodylen, bodycap;
    char *outbody;            /* ADDON_BODY_BUFFER: what the addon made of it */
    size_t outlen, outcap;
    uint64_t discarded;
    char url[2048];           /* for the log line: scheme://host[:port]path */
    char method[24];
    int logged;

    /* upstream side of the exchange */
    px_upstream_t *up;
    void *resolve_req;
    char host[PX_HOST_MAX + 1]; /* routing host: lowercase, no brackets, no trailing dot */
    uint16_t port;
    llhttp_t resp_parser;
    px_head_t rs;
    int resp_started;        /* response head forwarded to the client */
    int resp_done;
    int resp_status;
    int resp_close;          /* close the client after this response */
    unsigned interim;        /* 1xx heads of this request so far */
};

struct px_upstream {
    uv_tcp_t tcp;
    uv_connect_t connect_req;
    uv_timer_t timer;
    px_engine_t *eng;
    px_conn_t *conn;          /* owner while in use; NULL while pooled */
    px_upstream_t *pool_next, *pool_prev;
    char key[PX_HOST_MAX + 16];
    unsigned bucket;
    int in_pool;
    int connected;
    int closing;
    int handles_open;
    int reading;
    int got_bytes;           /* any response byte since it was (re)used */
    int reused;
    void *dial;              /* addresses still to try while connecting */
    struct px_tls *tls;      /* NULL for plain HTTP upstreams */
    int tls_done;
    int in_pump;
    int pump_again;
};

typedef struct px_pool {
    px_upstream_t *buckets[PX_POOL_BUCKETS];
    size_t idle;
} px_pool_t;

typedef struct dns_server dns_server_t;
typedef struct ca ca_t;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct dns_resolver dns_resolver_t;

struct px_engine {
    uv_loop_t *loop;
    const px_config_t *cfg;
    px_log_t *log;
    px_snapshot_t *snap;           /* current configuration (a reference) */
    px_listener_t listeners[4];
    int nlisteners;
    uv_signal_t sig_term, sig_int, sig_hup;
    uv_check_t log_kick;           /* hands the loop turn's log lines to the writer */
    dns_server_t *dns;
    dns_resolver_t *resolver;
    px_pool_t pool;
    px_conn_t *conns;
    size_t nconns;
    size_t nconns_peak;            /* highest nconns since the last heap trim */
    uv_timer_t trim;               /* returns a finished burst's heap to the OS */
    uint64_t next_id;
    int stopping;
    int exit_code;
    uint32_t proxy_ip;             /* network order */
    px_cidr_t own[64];             /* the machine's own addresses (refused upstream) */
    size_t n_own;
    ca_t *ca;
    SSL_CTX *tls_server;          /* client side: airlock is the server */
    SSL_CTX *tls_client;          /* upstream side */
    llhttp_settings_t req_settings;
    llhttp_settings_t resp_settings;
    llhttp_settings_t body_settings;   /* request bodies an addon rewrites */
};

/* px_head.c */
void px_head_settings(llhttp_settings_t *req, llhttp_settings_t *resp, llhttp_settings_t *body);
void px_head_reset(px_head_t *h);
void px_head_free(px_head_t *h);
/* Appends data and parses. Returns 1 when the message head is complete, 0 when more is
 * needed, PX_ETOOBIG (431), or PX_EPARSE (400) with *reason set to a static text. */
int px_head_feed(px_head_t *h, llhttp_t *p, const char *data, size_t len, const char **reason);
int px_head_find(const px_head_t *h, const char *name);
int px_head_count(const px_head_t *h, const char *name);
int px_span_ieq(const px_head_t *h, px_span_t s, const char *lit);

/* px_conn.c */
void px_conn_accept(px_listener_t *l);
void px_conn_close(px_conn_t *c);
void px_conn_send(px_conn_t *c, const char *data, size_t len);
void px_conn_send_take(px_conn_t *c, char *buf, size_t len);
void px_conn_upstream_failed(px_conn_t *c, const char *why);
void px_conn_upstream_ready(px_conn_t *c);
void px_conn_upstream_data(px_conn_t *c, const char *data, size_t len);
void px_conn_upstream_eof(px_conn_t *c, int err);
void px_conn_upstream_drained(px_conn_t *c);
void px_conn_log_line(px_conn_t *c, const char *verdict, int status, const char *tail);
/* The client-side SSL_CTX's certificate callback (SNI → minted leaf). */
int px_conn_tls_cert_cb(SSL *ssl, void *arg);

/* Internal to the client side (px_conn.c, px_request.c, px_body.c, px_response.c). */
void px__conn_set_state(px_conn_t *c, px_state_t st);
px_upstream_t *px__up_detach(px_conn_t *c);
void px__up_drop(px_conn_t *c);
void px__client_raw(px_conn_t *c, char *buf, size_t len);
void px__connect(px_conn_t *c, const char *target, size_t tlen);
int px__norm_host(char *out, size_t cap, const char *h, size_t len);
int px__split_authority(const char *a, size_t len, const char **host, size_t *hlen,
                        uint16_t *port, int *bracketed);
void px__client_read_start(px_conn_t *c);
void px__client_read_stop(px_conn_t *c);
void px__process_pending(px_conn_t *c);
void px__exchange_done(px_conn_t *c);
void px__close_when_flushed(px_conn_t *c);
void px__pending_add(px_conn_t *c, const char *data, size_t len);
void px__addons_end(px_conn_t *c);
void px__answer(px_conn_t *c, int status, const char *json, size_t json_len, int close);
void px__answer_error(px_conn_t *c, int status, const char *error, const char *message);
void px__answer_error_keep(px_conn_t *c, int status, const char *error, const char *message);
void px__bad_request(px_conn_t *c, int status, const char *reason);
void px__addon_answer(px_conn_t *c, const addon_answer_t *ans);
void px__after_answer(px_conn_t *c);
void px__request_head_done(px_conn_t *c);
void px__start_upstream(px_conn_t *c);
int px__hop_by_hop(const px_head_t *h, px_span_t name, const char *conn_val, size_t conn_len);
size_t px__body_feed(px_conn_t *c, char *data, size_t len, char *owned, int *took);
void px__filter_begin(px_conn_t *c);
void px__filter_end(px_conn_t *c);
void px__pause_upstream(px_conn_t *c);
/* (Re)starts the client's one-shot idle timeout (--client-idle-timeout). */
void px__client_idle_start(px_conn_t *c);
void px__body_done(px_conn_t *c);
void px__pause_client(px_conn_t *c);
int px__sink_upstream(void *data, const char *buf, size_t len);
char *px__upstream_head(px_conn_t *c, size_t *outlen);

/* px_upstream.c */
/* Starts resolve+connect (or takes a pooled connection) for c->host:c->port. */
void px_upstream_start(px_conn_t *c);
void px_upstream_send(px_upstream_t *u, const char *data, size_t len);
void px_upstream_send_take(px_upstream_t *u, char *buf, size_t len);
/* The exchange finished cleanly: pool u if reusable, else close it. */
void px_upstream_release(px_upstream_t *u, int reusable);
void px_upstream_close(px_upstream_t *u);
void px_upstream_read_start(px_upstream_t *u);
void px_upstream_read_stop(px_upstream_t *u);
size_t px_upstream_queued(px_upstream_t *u);
void px_upstream_first_byte_timer(px_upstream_t *u, uint64_t ms);
void px_pool_close_all(px_engine_t *eng);

/* px_engine.c */
px_snapshot_t *px_engine_snapshot_ref(px_engine_t *eng);
void px_engine_conn_closed(px_engine_t *eng, px_conn_t *c);

#endif
