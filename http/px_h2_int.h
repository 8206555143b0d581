/* Internals shared by px_h2.c (the session, frames in, request heads) and px_h2_resp.c (the
 * responses and their output). Nothing else includes this header. */
#ifndef PX_H2_INT_H
#define PX_H2_INT_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>

#include "http/px_h2.h"
#include "http/px_h2io.h"
#include "http/px_h2mem.h"

/* One request stream. Lives from its first HEADERS frame until nghttp2 closes the stream. */
typedef struct px_h2s px_h2s_t;
struct px_h2s {
    px_h2_t *h;
    px_h2s_t *prev, *next; /* every live stream of h */
    int32_t id;
    px_msg_t *m; /* the head being read, until on_request */
    size_t mcap;
    px_h2_req_t rq;
    px_span_t method, path;
    char *cookie; /* Cookie crumbs joined with "; " */
    size_t cookie_len, cookie_cap;
    size_t hsize;     /* header list bytes so far, as RFC 9113 counts them */
    size_t held;      /* of them, counted as held (px__heads_charge) */
    int bad_status;   /* the codec answers this instead of handing the request out */
    uint32_t bad_rst; /* ... or resets the stream with this code (a bound on the bytes held) */
    const char *bad;
    px_fields_t *trailers;
    size_t unconsumed; /* body bytes handed out and not consumed yet */
    px_h2io_q_t q;     /* the response body waiting for the client's windows, its trailers */
    unsigned reported : 1, req_ended : 1; /* on_request fired; on_end fired (or would have) */
    unsigned resp_started : 1, resp_body : 1, resp_end : 1;
    unsigned owner_done : 1;  /* the owner ended its response (or reset) */
    unsigned owner_reset : 1; /* the owner reset the stream: nothing more is reported */
    unsigned trailer_bad : 1;
    unsigned discard : 1; /* px_h2_discard(): the rest of the request body is dropped here */
    uint64_t discarded;
};

struct px_h2 {
    nghttp2_session *ses;
    px_h2mem_t mem; /* nghttp2's allocations (its frame buffer in pages of its own) */
    const px_h2_cbs_t *cbs;
    void *owner;
    px_h2s_t *streams;
    px_h2io_out_t out; /* output prepared for px_h2_take_output() */
    size_t owed;       /* connection window owed for streams closed with bytes unconsumed */
    unsigned win_reqs, win_resets;     /* rapid reset accounting */
    size_t held;                       /* decoded header bytes the streams hold */
    px_h2_share_t share[PX_H2_SHARES]; /* counted there too */
    size_t nshare;
    unsigned heads_refused; /* streams refused for those bounds */
    int failed;             /* PX_ENOMEM / PX_EPARSE: the session cannot go on */
    int term;               /* a GOAWAY with an error is on its way */
    int any_drain;
    int32_t top_sid;                       /* the highest stream id a client HEADERS used */
    int32_t skipped[PX_H2_SKIPPED_MAX][2]; /* [first, last] ids it skipped, newest last */
    unsigned nskipped;
    uint32_t closed[PX_H2_CLOSED_MAX]; /* streams the client closed (a ring; 0: none) */
    unsigned closed_next;
    uint8_t scan_hd[9]; /* px__scan(): a frame header read so far */
    unsigned scan_hn;   /* ... its bytes */
    unsigned scan_pre;  /* connection preface bytes passed */
    size_t scan_skip;   /* payload bytes left of the frame */
    const char *reason;
    char *reason_own; /* a GOAWAY's reason, made when it is sent (PX_H2_REASON_MAX), or NULL */
};

#define PX_H2_REASON_MAX 160

static inline px_h2s_t *px__stream(const px_h2_t *h, int32_t sid)
{
    return sid > 0 ? nghttp2_session_get_stream_user_data(h->ses, sid) : NULL;
}

#define px__grow px_h2io_grow
#define PX_H2_FRAME_HDLEN 9 /* a frame header's bytes (RFC 9113 4.1) */

/* px_h2.c: st's header bytes no longer count as held. */
void px__heads_release(px_h2_t *h, px_h2s_t *st);

/* px_h2_resp.c: nghttp2's data source of a response body. */
ssize_t px__h2_read(nghttp2_session *ses, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                    nghttp2_data_source *src, void *ud);

#endif
