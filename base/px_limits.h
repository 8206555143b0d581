/* The engine's named limits and defaults (README.md, "Limits"): the codecs, sockets and
 * connections all read them, so they live below every folder that does. */
#ifndef PX_LIMITS_H
#define PX_LIMITS_H

/* Named limits and defaults (README.md, "Limits"). */
#define PX_HEAD_MAX (64 * 1024)                /* request or response head bytes */
#define PX_HEADERS_MAX 100                     /* header lines in one head */
#define PX_TRAILER_MAX (16 * 1024)             /* bytes of a chunked message's trailer section */
#define PX_TRAILERS_MAX 32                     /* trailer fields in one message */
#define PX_INTERIM_MAX 16                      /* 1xx responses before the final one */
#define PX_BODY_DISCARD_MAX (64 * 1024 * 1024) /* request body bytes dropped after an answer */
#define PX_HOST_MAX 255                        /* a host name */
#define PX_IN_MAX (PX_HEAD_MAX + 65536)        /* client bytes read ahead of their turn */
#define PX_POOL_IDLE_MAX 256                   /* idle upstream connections kept in all */
#define PX_POOL_PER_KEY_MAX 128                /* idle upstream connections per host:port:scheme */
#define PX_POOL_IDLE_MS (60 * 1000)    /* an idle upstream connection is closed after this */
#define PX_POOL_CORE_PER_KEY 16        /* ... those idle beyond this many per key (a burst's */
#define PX_POOL_SURPLUS_MS 1000        /* surplus) after this: each holds tens of KB */
#define PX_REJECT_EVERY_MS (60 * 1000) /* one TLS REJECTED line per host this often */
#define PX_REJECT_HOSTS 64             /* hosts remembered for that */
#define PX_CLIENT_IDLE_MS (600 * 1000) /* idle client connection */
#define PX_UPSTREAM_FIRST_BYTE_MS (600 * 1000) /* slow LLM calls */
#define PX_CONNECT_MS (10 * 1000)              /* upstream TCP connect */
#define PX_HANDSHAKE_MS (10 * 1000)            /* client TLS handshake */
#define PX_CIDR_MAX 32                         /* --allow-upstream-cidr entries */
#define PX_CONNS_MAX 20000                     /* client connections at once */
#define PX_WORKERS_MAX 64        /* --workers: event loops (each a thread with its own listeners) */
#define PX_TRIM_CHECK_MS 1000    /* how often to look for a finished burst or quiet */
#define PX_TRIM_DROP 64          /* connections gone since the peak = a burst ended */
#define PX_TLS_SESSIONS_MAX 1024 /* upstream host:port keys with TLS sessions (LRU) */
#define PX_SCRUB_HOLD_MAX (64 * 1024) /* a scrubbed body held to keep its Content-Length */
#define PX_TLS_TICKETS_PER_KEY 4      /* TLS 1.3 tickets kept per key (one TLS 1.2 session) */
/* Free heap the allocator keeps at its top while traffic flows (app/px_engine.c on_trim gives it
 * back when the traffic goes quiet) */
#define PX_HEAP_TOP_KEEP (4 * 1024 * 1024)
/* Decoded HTTP/2 request header bytes (name + value + 32 a field, as RFC 9113 counts them) held
 * by streams from their HEADERS frame until they close: HPACK lets ~50 bytes on the wire decode
 * to a 64 KiB list, which a stream waiting on a slow upstream holds (with its copies toward the
 * upstream: about 3x). Real clients send a few KiB per request (100 streams at once). */
#define PX_H2_CONN_HEADS_MAX (1024 * 1024)         /* one connection's streams */
#define PX_H2_SANDBOX_HEADS_MAX (16 * 1024 * 1024) /* one sandbox's connections (--sandboxes) */
#define PX_H2_PROCESS_HEADS_MAX (64 * 1024 * 1024) /* every connection */
#define PX_H2_HEADS_REFUSED_MAX 8 /* streams refused for those bounds before the GOAWAY */

/* Held requests (`on_block: hold`, proxy/px_hold.h, docs/approvals.md). A held request costs
 * its head and the client bytes read ahead of their turn (its body is paused): PX_HOLD_COST. */
#define PX_HOLD_SECONDS_DEFAULT 30 /* hold_seconds when the allowlist does not say */
#define PX_HOLD_SECONDS_MAX 300    /* the most hold_seconds may say */
#define PX_HOLD_SCOPE_MAX 32       /* requests held at once in one conversation */
#define PX_HOLD_PROCESS_MAX 256    /* requests held at once in all */
#define PX_HOLD_COST 65536 /* a held request: its head buffer and this much client read-ahead */
#define PX_HOLD_SCOPE_BYTES_MAX (8 * 1024 * 1024)    /* held bytes in one conversation */
#define PX_HOLD_PROCESS_BYTES_MAX (48 * 1024 * 1024) /* held bytes in all */
#define PX_HOLD_RULES_MAX 256     /* conversation-scope approvals kept (oldest go first) */
#define PX_HOLD_FIELD_MAX 2048    /* a held request's host or path kept for the question */
#define PX_CONTROL_LINE_MAX 512   /* a command line on the control socket */
#define PX_CONTROL_CLIENTS_MAX 16 /* control connections at once */

#endif
