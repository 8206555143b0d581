/* The HTTP/2 client-side codec: pure (no I/O), on nghttp2. The upstream client opens request
 * streams with a head (px_h2c_open), body bytes and an end with trailer fields; each response
 * comes out as a head (px_msg_t, as px_h1 makes them, so the exchange reads it unchanged), body
 * bytes and an end with trailer fields. Bytes received from the server (after TLS) go in with
 * px_h2c_feed(); the bytes to send come out of px_h2c_take_output(), which the owner pulls only
 * while its socket has room: output is generated lazily, so a server that never reads cannot
 * grow memory (acks it provokes meanwhile are capped by PX_H2C_MAX_OUTBOUND_ACK).
 *
 * Flow control is per stream: response bytes are handed out as they come and the stream's
 * window reopens for exactly those; while a stream is paused (px_h2c_pause) its bytes are held,
 * neither handed out nor counted as consumed, so at most PX_H2C_STREAM_WINDOW bytes wait per
 * stream, and the connection window (every stream's window at once) never lets one slow stream
 * stall the others. Request bytes the server's windows do not take yet wait in a queue per
 * stream; on_drain says when a full one (over PX_H2C_QUEUE_HIGH) emptied.
 *
 * Callbacks fire only inside px_h2c_feed(), px_h2c_take_output() and px_h2c_resume(); inside
 * them the owner may call any px_h2c_* function except px_h2c_free(). */
#ifndef PX_H2CLI_H
#define PX_H2CLI_H

#include <stddef.h>
#include <stdint.h>

#include "http/px_h2.h"
#include "http/px_msg.h"

/* ---- limits (what each one stops) ---- */
/* Concurrent streams we open on one connection, whatever the server allows (the lower of the
 * two counts): a connection's memory and the work one upstream can hold stay bounded. */
#define PX_H2C_MAX_STREAMS 100
/* A response's fields (name + value + 32 each, as RFC 9113 counts them), announced as
 * SETTINGS_MAX_HEADER_LIST_SIZE; over it, or more than PX_HEADERS_MAX fields, or trailers over
 * PX_TRAILER_MAX / PX_TRAILERS_MAX: that stream is reset and fails, the connection goes on. */
#define PX_H2C_HEADER_LIST_MAX PX_HEAD_MAX
/* HPACK dynamic table, both directions: an HPACK bomb cannot make us keep more. */
#define PX_H2C_HPACK_TABLE 4096
/* CONTINUATION frames after one HEADERS frame: more is a flood, the connection ends. */
#define PX_H2C_MAX_CONTINUATIONS 8
/* SETTINGS/PING acks waiting to go out: more is a flood, the connection ends. */
#define PX_H2C_MAX_OUTBOUND_ACK 100
/* Entries in one SETTINGS frame: more, the connection ends. */
#define PX_H2C_MAX_SETTINGS 32
/* Interim (1xx) heads before the final one: more, the stream fails. */
#define PX_H2C_MAX_INTERIM PX_INTERIM_MAX
/* Response bytes the server may send ahead on a stream (its window: what a paused stream
 * holds at most), and on the connection (every stream's at once). */
#define PX_H2C_STREAM_WINDOW (256 * 1024)
#define PX_H2C_CONN_WINDOW (PX_H2C_MAX_STREAMS * PX_H2C_STREAM_WINDOW)
/* Output prepared ahead of px_h2c_take_output(). */
#define PX_H2C_OUT_MAX (64 * 1024)
/* Request bytes queued on a stream: above HIGH the owner stops feeding it until on_drain, which
 * fires below LOW; px_h2c_send_data() fails past MAX. */
#define PX_H2C_QUEUE_HIGH (256 * 1024)
#define PX_H2C_QUEUE_LOW (64 * 1024)
#define PX_H2C_QUEUE_MAX (2 * 1024 * 1024)

typedef struct px_h2c px_h2c_t;
typedef struct px_h2cs px_h2cs_t;

/* A request head: views borrowed for the call. Fields are lowercased on the way out; Host (it
 * becomes :authority when authority is empty) and connection-specific fields (Connection,
 * Keep-Alive, Proxy-Connection, Transfer-Encoding, Upgrade, and TE unless it is "trailers")
 * are dropped. */
typedef struct px_h2c_req {
    const char *method;
    size_t method_len;
    const char *scheme;
    size_t scheme_len;
    const char *authority; /* may be empty: the Host field's value then */
    size_t authority_len;
    const char *path;
    size_t path_len;
    const px_h2_field_t *f;
    size_t n;
} px_h2c_req_t;

/* Per stream; sowner is the stream's owner given to px_h2c_open(). */
typedef struct px_h2c_cbs {
    /* A response head: interim (1xx) or final; m is taken (px_msg_free). The final head has
     * version 2.0, no reason phrase, flags PX_MSG_KEEPALIVE and one of PX_MSG_LENGTH
     * (content-length, in m->length), PX_MSG_NO_BODY (HEADERS ended the stream, a HEAD
     * request, 204, 304) or PX_MSG_CHUNKED (length unknown: the body ends with the stream;
     * no Transfer-Encoding field is added). */
    void (*on_head)(void *sowner, px_msg_t *m);
    /* Response body bytes (borrowed). */
    void (*on_data)(void *sowner, const char *data, size_t len);
    /* The response ended; trailer fields t (may be NULL) are borrowed for the call. */
    void (*on_end)(void *sowner, const px_fields_t *t);
    /* The stream failed before its response ended: reset by the server (code), refused by a
     * GOAWAY, over a cap, or the session broke. why is borrowed. The last callback. */
    void (*on_error)(void *sowner, uint32_t code, const char *why);
    /* The request queue fell below PX_H2C_QUEUE_LOW after passing PX_H2C_QUEUE_HIGH. May be
     * NULL. */
    void (*on_drain)(void *sowner);
} px_h2c_cbs_t;

/* A client session: the preface and SETTINGS (the limits above, no push) wait in the output.
 * cbs is kept. Returns NULL when out of memory. */
px_h2c_t *px_h2c_new(const px_h2c_cbs_t *cbs);

/* Frees the session and every stream (no callback fires). Not inside a callback. */
void px_h2c_free(px_h2c_t *h);

/* Consumes data[0..len) (borrowed) from the server. Returns 0, or a connection error:
 * PX_EPARSE (a protocol error, a flood; px_h2c_reason() says which), PX_ENOMEM. After an error
 * the streams still open are the owner's to fail (px_h2c_fail_all). */
int px_h2c_feed(px_h2c_t *h, const char *data, size_t len);

/* Bytes to send: *data (borrowed until the next px_h2c_* call) and *len (0: nothing now).
 * The owner writes them all and calls again while its socket has room. Returns 0, or
 * PX_ENOMEM / PX_EPARSE when the session broke. */
int px_h2c_take_output(px_h2c_t *h, const char **data, size_t *len);

/* 1 when output is pending. */
int px_h2c_want_write(const px_h2c_t *h);

/* 1 when a new stream may be opened now: the session runs, no GOAWAY came or went, and fewer
 * streams are open than the lower of the server's SETTINGS_MAX_CONCURRENT_STREAMS and
 * PX_H2C_MAX_STREAMS. */
int px_h2c_can_open(const px_h2c_t *h);

/* 1 once a GOAWAY came or went, or the session broke: it takes no new stream. */
int px_h2c_closing(const px_h2c_t *h);

/* Streams opened and not yet closed by px_h2c_close(). */
size_t px_h2c_streams(const px_h2c_t *h);

/* For a session gone quiet with no stream open: gives back the pages of nghttp2's frame buffer
 * (when it holds no frame) and of its other large blocks that are back to zeros. Returns the
 * bytes given back; the session goes on as before. */
size_t px_h2c_trim(px_h2c_t *h);

/* Bytes of those blocks in memory now (a test's view). */
size_t px_h2c_paged_resident(const px_h2c_t *h);

/* Why the session ended or failed: static text, "" while it runs. */
const char *px_h2c_reason(const px_h2c_t *h);

/* Opens a request stream: head q (copied); has_body 0 ends the stream with the head;
 * is_head: the response has no body (a HEAD request). sowner is kept for the callbacks.
 * Returns 0 with *out set (valid until px_h2c_close), PX_ESTATE (px_h2c_can_open() says 0),
 * PX_ENOMEM. */
int px_h2c_open(px_h2c_t *h, const px_h2c_req_t *q, int has_body, int is_head, void *sowner,
                px_h2cs_t **out);

/* Queues len request body bytes (copied). Returns 0, PX_ESTATE (no body open, or the stream is
 * closed: the bytes are dropped), PX_ETOOBIG (past PX_H2C_QUEUE_MAX). */
int px_h2c_send_data(px_h2c_t *h, px_h2cs_t *st, const char *data, size_t len);

/* Ends the request body, with trailer fields t (copied; may be NULL). Returns 0 or PX_ESTATE /
 * PX_ENOMEM. */
int px_h2c_end(px_h2c_t *h, px_h2cs_t *st, const px_fields_t *t);

/* Request bytes queued on st and not yet sent. */
size_t px_h2c_queued(const px_h2cs_t *st);

/* 1: response bytes of st are held (not handed out, the window stays shut); 0: handed out
 * again from the next px_h2c_resume() on. */
void px_h2c_pause(px_h2c_t *h, px_h2cs_t *st, int pause);

/* Hands out what st held while paused (on_data, then on_end if the response ended there). */
void px_h2c_resume(px_h2c_t *h, px_h2cs_t *st);

/* The owner lets go of st: no callback follows. cancel 1, or the response or request not
 * complete: RST_STREAM(CANCEL) unless the stream is closed; a complete request whose body
 * still waits for windows goes on sending. */
void px_h2c_close(px_h2c_t *h, px_h2cs_t *st, int cancel);

/* Every stream still open gets on_error(why) (the connection broke); the session takes no new
 * stream. */
void px_h2c_fail_all(px_h2c_t *h, const char *why);

/* Graceful end: GOAWAY(NO_ERROR); open streams go on, no new one opens. */
void px_h2c_shutdown(px_h2c_t *h);

#endif
