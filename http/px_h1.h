/* The HTTP/1 codec: pure (no I/O). A parser turns bytes into a message head (px_msg_t), body
 * bytes with their framing removed, and trailer fields, each with a cap; serializers write
 * heads and chunk framing. Built on llhttp in strict mode, plus what strict mode leaves to us:
 * no bare LF, no obs-fold, caps on head size, header count and trailers.
 *
 * The parser stops at the end of every message, so bytes of a pipelined message are never
 * parsed ahead of their turn: the owner calls px_h1_next() when it is ready for the next one. */
#ifndef PX_H1_H
#define PX_H1_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>

#include "http/px_msg.h"

/* What the parser hands out. Each may return 1 to pause the parser after it (the rest of the
 * input is left unconsumed), or 0 to go on. */
typedef struct px_h1_cbs {
    /* The head is complete. m is taken: the owner frees it with px_msg_free(). */
    int (*on_head)(void *owner, px_msg_t *m);
    /* Body bytes, framing removed (borrowed for the call). */
    int (*on_data)(void *owner, const char *data, size_t len);
    /* The message ended; t (trailer fields, may be NULL) is borrowed for the call. */
    int (*on_end)(void *owner, const px_fields_t *t);
} px_h1_cbs_t;

typedef enum px_h1_state {
    PX_H1_HEAD = 0, /* reading a head */
    PX_H1_BODY,     /* reading a body */
    PX_H1_DONE,     /* a message ended: px_h1_next() before more input */
    PX_H1_UPGRADED, /* the message ended and the rest is another protocol */
} px_h1_state_t;

typedef struct px_h1 {
    llhttp_t llh;
    const px_h1_cbs_t *cbs;
    void *owner;
    px_h1_state_t state;
    int is_request;
    int no_body;        /* the responses answer HEAD: no body whatever they say */
    int status;         /* the status of the response being read */
    unsigned interim;   /* interim (1xx) responses read before the final one */
    int paused;         /* a callback asked to pause */
    int err;            /* PX_EPARSE / PX_ETOOBIG after a failure */
    const char *reason; /* why, static text */
    /* the head being read */
    char *hbuf;
    size_t hlen, hcap;
    const char *base; /* the input llhttp is reading, for span offsets */
    size_t base_off;  /* head bytes before base */
    px_msg_t *m;      /* spans recorded so far */
    int last_was_value;
    /* trailer fields */
    px_fields_t *trailers;
    int trailer_last_was_value;
    unsigned starts; /* messages started (px_h1_next and interims): one begun from a callback */
} px_h1_t;

/* Sets up a parser for requests (is_request 1) or responses. cbs and owner are kept. */
void px_h1_init(px_h1_t *p, int is_request, const px_h1_cbs_t *cbs, void *owner);

/* Frees what the parser holds (a partial head, trailer storage). */
void px_h1_free(px_h1_t *p);

/* The responses to come answer a HEAD request: the final one has no body. */
void px_h1_expect_no_body(px_h1_t *p);

/* Parses data[0..len) (borrowed). Returns 0 with *used bytes consumed (fewer than len when the
 * message ended or a callback paused), or PX_EPARSE / PX_ETOOBIG (431-worthy: head or header
 * count over the caps) with p->reason set. For responses, an interim (1xx, not 101) response
 * is handed out with on_head alone and the next head is read on at once, at most
 * PX_INTERIM_MAX of them (then PX_EPARSE). */
int px_h1_feed(px_h1_t *p, const char *data, size_t len, size_t *used);

/* After a pause by a callback: goes on (the next feed continues where it stopped). */
void px_h1_resume(px_h1_t *p);

/* After PX_H1_DONE: ready for the next message on the same connection (for responses: the next
 * request's, so the HEAD mark and the interim count start over). May be called from on_end:
 * px_h1_feed then returns with the ended message's bytes used, and the next feed begins the
 * next message. */
void px_h1_next(px_h1_t *p);

/* The connection ended: a response delimited by the close ends here (on_end fires). Returns 0,
 * or PX_EPARSE when the message was cut short. */
int px_h1_finish(px_h1_t *p);

/* 1 when a head is partly read (bytes since the last message ended). */
int px_h1_mid_head(const px_h1_t *p);

/* ---- serializing ---- */

/* 1 when field name (of m) is hop-by-hop: the fixed list (Connection, Keep-Alive,
 * Proxy-Connection, TE, Proxy-Authorization, Upgrade, Expect) or named by m's Connection field
 * (except Host and the framing fields). conn is m's Connection value (may be NULL). */
int px_h1_hop_by_hop(const char *name, size_t nlen, const char *conn, size_t conn_len);

/* Writes a chunk header for len bytes ("%zx\r\n") into out (>= 20 bytes); returns its length. */
size_t px_h1_chunk_head(char *out, size_t len);

/* Room for the last chunk with any trailer section. */
#define PX_H1_LAST_CHUNK_MAX (PX_TRAILER_MAX + 4 * PX_TRAILERS_MAX + 8)

/* The last chunk with trailer fields t (may be NULL), into out (>= PX_H1_LAST_CHUNK_MAX bytes).
 * Returns its length. */
size_t px_h1_last_chunk(char *out, const px_fields_t *t);

#endif
