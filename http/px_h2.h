/* The HTTP/2 server-side codec: pure (no I/O), on nghttp2. Bytes received from the client (after
 * TLS, starting with the connection preface) go in with px_h2_feed(); each request stream comes
 * out as a request head (px_msg_t, as px_h1 makes them, so the pre-checks and the policy read it
 * unchanged), body bytes and an end with trailer fields. Responses go in per stream; the bytes to
 * send come out of px_h2_take_output(), which the owner pulls only while its socket has room: the
 * output is generated lazily, so a client that never reads cannot grow memory (acks it provokes
 * meanwhile are capped by PX_H2_MAX_OUTBOUND_ACK, then the connection ends).
 *
 * Flow control is per stream: a stream's window opens again only as the owner reports bytes
 * forwarded (px_h2_consume), so at most PX_H2_STREAM_WINDOW unconsumed bytes wait per stream,
 * and the connection window (PX_H2_CONN_WINDOW, every stream's window at once) never lets one
 * slow stream stall the others. Response bytes the client's windows do not take yet wait in a
 * queue per stream; on_drain says when a full one (over PX_H2_QUEUE_HIGH) emptied.
 *
 * Callbacks fire only inside px_h2_feed() and px_h2_take_output(); inside them the owner may
 * call any px_h2_* function except px_h2_free(). */
#ifndef PX_H2_H
#define PX_H2_H

#include <stddef.h>
#include <stdint.h>

#include "http/px_msg.h"

/* ---- limits (what each one stops) ---- */
/* Concurrent streams (announced): a stream past it is refused with REFUSED_STREAM while the
 * client has not acknowledged the SETTINGS yet, and ends the connection (GOAWAY
 * PROTOCOL_ERROR, nghttp2's rule) once it has. */
#define PX_H2_MAX_STREAMS 100
/* Closed streams are not kept in nghttp2 (a kept one is ~250 bytes and a slot of its stream
 * table, whose page an idle connection then keeps: ~4 KiB). What RFC 9113 5.1 asks of them is
 * done here: the ids of the last PX_H2_CLOSED_MAX streams the client closed itself (END_STREAM
 * or RST_STREAM) are remembered, and a DATA or HEADERS frame on one once nghttp2 forgot it is a
 * connection error, STREAM_CLOSED; on older ones, and on streams only airlock reset (frames in
 * flight are no error), such a frame is ignored, as 5.1 allows. RFC 7540 priorities stay on so
 * that an invalid PRIORITY frame is PROTOCOL_ERROR (6.3): nghttp2 keeps at most 100 idle
 * streams that PRIORITY frames name (its own bound, ~250 bytes each). */
#define PX_H2_CLOSED_MAX 8
/* Ranges of stream ids a client skipped over (never opened, so closed): a HEADERS frame on one
 * of them is a connection error, PROTOCOL_ERROR (RFC 9113 5.1.1); past the last
 * PX_H2_SKIPPED_MAX ranges such a frame is ignored, as nghttp2 does (clients skip none). */
#define PX_H2_SKIPPED_MAX 4
/* A request's fields (name + value + 32 each, as RFC 9113 counts them): over it, the codec
 * answers 431 on the stream (the connection goes on); one field alone over nghttp2's own limit
 * (64 KiB) is a connection error (COMPRESSION_ERROR). Also the SETTINGS_MAX_HEADER_LIST_SIZE
 * announced. At most PX_HEADERS_MAX fields fit a head (with Host and Cookie): more, 431 too. */
#define PX_H2_HEADER_LIST_MAX PX_HEAD_MAX
/* Decoded request header bytes held by streams (PX_H2_*_HEADS_MAX in px_config.h), counted per
 * field as the 431 cap counts them, from the field's decoding until the stream closes (or the
 * owner px_h2_discard()s it): per connection, and in counters shared with other connections
 * (px_h2_share(): the sandbox's, the process's). A field that would pass a bound refuses its
 * stream before anything of it is kept: the rest of the block is decoded (HPACK state) and
 * dropped, and the stream is reset (on_refused says so) with
 *  - ENHANCE_YOUR_CALM past the connection's own bound: only this client's streams hold it, and
 *    no real client comes near it;
 *  - REFUSED_STREAM past a shared bound: other connections may hold it, so the client is told
 *    that nothing was processed and it may retry (RFC 9113 section 8.7).
 * A connection with more than PX_H2_HEADS_REFUSED_MAX such refusals keeps trying: GOAWAY
 * ENHANCE_YOUR_CALM, and its streams end. */
typedef struct px_h2_share {
    size_t *held;       /* the counter (kept until px_h2_unshare()) */
    size_t max;         /* the bound on it */
    const char *reason; /* static: why a stream is refused, for on_refused */
} px_h2_share_t;
#define PX_H2_SHARES 2
/* HPACK dynamic table of the requests (announced as SETTINGS_HEADER_TABLE_SIZE). Responses are
 * encoded without one (px__options in px_h2.c). */
#define PX_H2_HPACK_TABLE 4096
/* CONTINUATION frames after one HEADERS frame: more is a flood, GOAWAY ENHANCE_YOUR_CALM. */
#define PX_H2_MAX_CONTINUATIONS 8
/* SETTINGS/PING acks waiting to go out (beyond PX_H2_OUT_MAX prepared): more is a flood from a
 * client that does not read, GOAWAY ENHANCE_YOUR_CALM. */
#define PX_H2_MAX_OUTBOUND_ACK 100
/* Entries in one SETTINGS frame: more, GOAWAY ENHANCE_YOUR_CALM. */
#define PX_H2_MAX_SETTINGS 32
/* RST_STREAM frames from the client, a token bucket (burst, per second): empty, GOAWAY. */
#define PX_H2_RST_BURST 200
#define PX_H2_RST_RATE 33
/* Rapid reset: of the last PX_H2_RESET_WINDOW requests handed out (a decaying window), more
 * than PX_H2_RESET_MAX cancelled by the client before their response ended: GOAWAY
 * ENHANCE_YOUR_CALM. */
#define PX_H2_RESET_WINDOW 100
#define PX_H2_RESET_MAX 50
/* Request body bytes handed out and not consumed, per stream (the stream window), and the
 * connection window: every stream's at once, so one slow stream never stalls the others. */
#define PX_H2_STREAM_WINDOW (64 * 1024)
#define PX_H2_CONN_WINDOW (PX_H2_MAX_STREAMS * PX_H2_STREAM_WINDOW)
/* Request body bytes a stream may still send after px_h2_discard() (its answer was complete
 * before it): consumed and dropped; past this the stream is reset with NO_ERROR. */
#define PX_H2_DISCARD_MAX (64 * 1024 * 1024)
/* Output prepared ahead of px_h2_take_output(). */
#define PX_H2_OUT_MAX (64 * 1024)
/* Response bytes queued on a stream: above HIGH the owner stops feeding it until on_drain,
 * which fires below LOW; px_h2_send_data() fails past MAX. */
#define PX_H2_QUEUE_HIGH (64 * 1024)
#define PX_H2_QUEUE_LOW (16 * 1024)
#define PX_H2_QUEUE_MAX (1024 * 1024)

/* HTTP/2 error codes the owner may use (RFC 9113 section 7). */
#define PX_H2_NO_ERROR 0x0
#define PX_H2_PROTOCOL_ERROR 0x1
#define PX_H2_INTERNAL_ERROR 0x2
#define PX_H2_REFUSED_STREAM 0x7
#define PX_H2_CANCEL 0x8
#define PX_H2_ENHANCE_YOUR_CALM 0xb

typedef struct px_h2 px_h2_t;

/* What a request carried besides its head: spans into the head's buffer (len 0: absent). */
typedef struct px_h2_req {
    px_span_t scheme;    /* :scheme (absent for a plain CONNECT) */
    px_span_t authority; /* :authority (absent when the client sent only Host) */
    px_span_t protocol;  /* :protocol of an extended CONNECT (RFC 8441), e.g. "websocket" */
    int host_conflict;   /* a Host field and :authority differ: the head has both */
} px_h2_req_t;

/* A field to send: views, borrowed for the call. Names are lowercased on the way out;
 * connection-specific fields (Connection, Keep-Alive, Proxy-Connection, Transfer-Encoding,
 * Upgrade, TE) are dropped. */
typedef struct px_h2_field {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} px_h2_field_t;

typedef struct px_h2_cbs {
    /* A request head arrived on stream sid. m is taken (px_msg_free). The head has method
     * (llhttp_method_t), target (:path; :authority for a plain CONNECT), version 2.0, a Host
     * field made from :authority, first, when the client sent none or a different one (then
     * both are there and rq->host_conflict is set: px_precheck() answers 400 "duplicate Host
     * header"; the same host in another case keeps the client's only), Cookie crumbs joined into
     * one field, flags PX_MSG_LENGTH (content-length), PX_MSG_NO_BODY (the HEADERS frame ended the
     * stream), PX_MSG_UPGRADE (CONNECT, extended or not). Neither LENGTH nor NO_BODY: a body of
     * unknown length follows. rq is borrowed for the call. */
    void (*on_request)(void *owner, int32_t sid, px_msg_t *m, const px_h2_req_t *rq);
    /* Request body bytes (borrowed). The stream's window opens again by px_h2_consume(). */
    void (*on_data)(void *owner, int32_t sid, const char *data, size_t len);
    /* The request ended; trailer fields t (NULL when none) are borrowed for the call. */
    void (*on_end)(void *owner, int32_t sid, const px_fields_t *t);
    /* A stream handed out by on_request closed before the owner saw both ends (its on_end and
     * its own px_h2_end): the client reset it (its code), or the request broke
     * (PROTOCOL_ERROR, ENHANCE_YOUR_CALM for trailers over the caps). A response that ends
     * first leaves the request going on: the owner takes the rest or px_h2_discard()s it. The
     * last callback for sid. Not after px_h2_reset() or px_h2_discard(). */
    void (*on_reset)(void *owner, int32_t sid, uint32_t code);
    /* The response queue of sid fell below PX_H2_QUEUE_LOW after passing PX_H2_QUEUE_HIGH.
     * May be NULL. */
    void (*on_drain)(void *owner, int32_t sid);
    /* The codec answered a request itself (431: fields over the caps; 400: a method llhttp
     * does not know, or a :scheme other than http/https) without handing it out, or reset it
     * for the header bytes held (431: the connection's bound, ENHANCE_YOUR_CALM; 503: a shared
     * one, REFUSED_STREAM); for the log. reason is static. May be NULL. */
    void (*on_refused)(void *owner, int32_t sid, int status, const char *reason);
} px_h2_cbs_t;

/* A server session: SETTINGS (the limits above, extended CONNECT on) wait in the output. cbs
 * and owner are kept. Returns NULL when out of memory. */
px_h2_t *px_h2_new(const px_h2_cbs_t *cbs, void *owner);

/* Counts the header bytes h's streams hold in s[0..n) too (n <= PX_H2_SHARES; copied, the
 * counters kept until px_h2_unshare()). Before the first px_h2_feed(). */
void px_h2_share(px_h2_t *h, const px_h2_share_t *s, size_t n);

/* What h's streams hold goes back to the shared counters and h forgets them: before a counter
 * goes away (h then counts for itself only). Idempotent; may be called inside a callback. */
void px_h2_unshare(px_h2_t *h);

/* Decoded header bytes h's streams hold now (its own counter). */
size_t px_h2_heads_held(const px_h2_t *h);

/* Frees the session and every stream state (no callback fires). Not inside a callback. */
void px_h2_free(px_h2_t *h);

/* Consumes data[0..len) (borrowed) from the client. Returns 0, or a connection error:
 * PX_EPARSE (not HTTP/2, a protocol error, a flood, rapid reset; px_h2_reason() says which),
 * PX_ENOMEM. After an error the owner sends what px_h2_take_output() still gives and
 * closes. */
int px_h2_feed(px_h2_t *h, const char *data, size_t len);

/* Bytes to send: *data (borrowed until the next px_h2_* call) and *len (0: nothing now). The
 * owner writes them all and calls again while its socket has room. Returns 0, or PX_ENOMEM /
 * PX_EPARSE when the session broke (close). */
int px_h2_take_output(px_h2_t *h, const char **data, size_t *len);

/* 1 when output is pending (px_h2_take_output() would give bytes). */
int px_h2_want_write(const px_h2_t *h);

/* 1 when the connection is over: a GOAWAY went out or came in and no stream is left, and all
 * output was taken. The owner closes once its socket flushed. */
int px_h2_done(const px_h2_t *h);

/* Why the session ended or failed: static text, "" while it runs. */
const char *px_h2_reason(const px_h2_t *h);

/* Bytes of nghttp2's large buffers (its frame buffer) the kernel holds in memory now: the pages
 * frames were written into, not the buffer's size (px_h2mem.h). For tests and benchmarks. */
size_t px_h2_paged_resident(const px_h2_t *h);

/* For a connection gone quiet: frees the output buffer (px_h2_trim_output) and gives back the
 * pages of nghttp2's large blocks that hold nothing (its frame buffer while it has no frame to
 * send, its stream table once no stream is left); what the session does next is the same.
 * Returns the bytes given back. */
size_t px_h2_trim(px_h2_t *h);

/* The buffer px_h2_take_output hands out is kept from one call to the next (up to
 * PX_H2_OUT_MAX and a frame); this frees it when the owner has taken all of it, for a
 * connection gone quiet with streams still open. Returns its size, or 0. */
size_t px_h2_trim_output(px_h2_t *h);

/* Bytes of that output buffer held now. For tests. */
size_t px_h2_output_held(const px_h2_t *h);

/* The owner forwarded n body bytes of sid: the client may send n more. Unknown streams are
 * ignored. */
void px_h2_consume(px_h2_t *h, int32_t sid, size_t n);

/* Answers sid: status with fields f[0..n) (copied). A 1xx status (not 101) is interim: a final
 * one follows. has_body 0: the response ends here (px_h2_end() is then not needed); 1: the
 * body follows with px_h2_send_data() and px_h2_end(). Returns 0, PX_ESTATE (unknown or reset
 * stream, a second final response, 101), PX_ENOMEM. */
int px_h2_respond(px_h2_t *h, int32_t sid, int status, const px_h2_field_t *f, size_t n,
                  int has_body);

/* Queues len response body bytes of sid (copied). Returns 0, PX_ESTATE (no body open), or
 * PX_ETOOBIG (the queue would pass PX_H2_QUEUE_MAX: the owner ignored px_h2_stream_queued). */
int px_h2_send_data(px_h2_t *h, int32_t sid, const char *data, size_t len);

/* Ends the response body of sid, with trailer fields t (copied; may be NULL). Returns 0 or
 * PX_ESTATE / PX_ENOMEM. */
int px_h2_end(px_h2_t *h, int32_t sid, const px_fields_t *t);

/* Resets sid with code (PX_H2_*): the owner is done with it, no callback follows. Unknown
 * streams are ignored. */
void px_h2_reset(px_h2_t *h, int32_t sid, uint32_t code);

/* The owner is done with sid's request (its answer may be complete before the request is): its
 * head no longer counts as held, the rest of the body is consumed and dropped here, no callback
 * for sid follows, and past
 * PX_H2_DISCARD_MAX the stream is reset with NO_ERROR. A client thus finishes sending a body
 * that was answered early, as many clients expect, without holding the windows. */
void px_h2_discard(px_h2_t *h, int32_t sid);

/* Response bytes of sid queued and not yet sent (0 for an unknown stream). */
size_t px_h2_stream_queued(const px_h2_t *h, int32_t sid);

/* Response bytes of sid the client's windows (the stream's and the connection's) take now: what
 * the next px_h2_take_output may send of it at most (0 for an unknown stream). */
size_t px_h2_stream_sendable(const px_h2_t *h, int32_t sid);

/* Graceful end: a GOAWAY(NO_ERROR) naming the last stream seen; open streams go on, new ones
 * are refused; px_h2_done() once they all ended. */
void px_h2_shutdown(px_h2_t *h);

#endif
