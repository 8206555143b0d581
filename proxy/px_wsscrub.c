#include "proxy/px_wsscrub.h"

#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"
#include "base/px_grow.h"
#include "base/px_wsframe.h"

#define PX__WS_HDR 16 /* room before the payload for the longest unmasked header (10), aligned */

struct px_wsscrub {
    const addon_scrub_t *m;
    addon_scrub_stream_t *st; /* the open data message's */
    px_wsframe_t fp;
    int opcode;   /* the open message's first opcode (text, binary) */
    int opened;   /* a frame of it went out: the next ones are continuations */
    int whole;    /* the frame being read was handled whole at its header: skip its payload */
    px_buf_t out; /* [PX__WS_HDR] header room, then the frame's scrubbed payload */
    char ctl[PX_WSFRAME_CONTROL_MAX];
    size_t ctl_len;
    uint64_t *once_counts; /* replacements in control frames and whole frames, per item */
    uint64_t *taken;       /* the stream's counts at the last take */
    uint64_t *counts;      /* what px_wsscrub_counts hands out */
    size_t nitems;
    const char *why;
    px_wsscrub_emit_cb emit; /* during a feed */
    void *arg;
};

px_wsscrub_t *px_wsscrub_new(const addon_scrub_t *m)
{
    px_wsscrub_t *w = calloc(1, sizeof(*w));
    if (w == NULL)
        return NULL;
    w->m = m;
    w->nitems = addon_scrub_item_count(m);
    px_wsframe_init(&w->fp, 0);
    px_buf_init(&w->out, 4096, PX__WS_HDR + PX_WSSCRUB_FRAME_MAX);
    w->st = addon_scrub_stream_new(m);
    w->once_counts = calloc(w->nitems + 1, sizeof(uint64_t));
    w->taken = calloc(w->nitems + 1, sizeof(uint64_t));
    w->counts = calloc(w->nitems + 1, sizeof(uint64_t));
    if (w->st == NULL || w->once_counts == NULL || w->taken == NULL || w->counts == NULL ||
        px_buf_reserve(&w->out, PX__WS_HDR) != 0) {
        px_wsscrub_free(w);
        return NULL;
    }
    w->out.len = PX__WS_HDR; /* the header room: written before each frame goes */
    return w;
}

void px_wsscrub_free(px_wsscrub_t *w)
{
    if (w == NULL)
        return;
    addon_scrub_stream_free(w->st);
    px_buf_free(&w->out);
    free(w->once_counts);
    free(w->taken);
    free(w->counts);
    free(w);
}

/* Writes the header of an unmasked frame (b0: FIN and opcode) of payload length n just before
 * p; its length. */
static size_t px__ws_head(char *p, unsigned b0, uint64_t n)
{
    uint8_t h[PX__WS_HDR];
    size_t hl;
    h[0] = (uint8_t)b0;
    if (n < 126) {
        h[1] = (uint8_t)n;
        hl = 2;
    } else if (n <= 0xFFFF) {
        h[1] = 126;
        h[2] = (uint8_t)(n >> 8);
        h[3] = (uint8_t)n;
        hl = 4;
    } else {
        h[1] = 127;
        for (int i = 0; i < 8; i++)
            h[2 + i] = (uint8_t)(n >> (56 - 8 * i));
        hl = 10;
    }
    memcpy(p - hl, h, hl);
    return hl;
}

/* The gathered payload goes out as one frame of the open message (the last one when fin). */
static int px__ws_frame(px_wsscrub_t *w, int fin)
{
    size_t n = w->out.len - PX__WS_HDR;
    unsigned b0 = (fin ? 0x80u : 0u) | (unsigned)(w->opened ? PX_WSFRAME_CONT : w->opcode);
    char *p = w->out.data + PX__WS_HDR;
    size_t hl = px__ws_head(p, b0, n);
    w->out.len = PX__WS_HDR;
    w->opened = !fin;
    return w->emit(w->arg, p - hl, hl + n);
}

/* The stream's output: gathered into the frame, which goes out as a fragment when full. */
static int px__ws_put(void *arg, const char *data, size_t len)
{
    px_wsscrub_t *w = arg;
    while (len > 0) {
        size_t room = w->out.max - w->out.len;
        size_t n = len < room ? len : room;
        int rc = px_buf_append(&w->out, data, n);
        if (rc != 0)
            return rc == PX_ETOOBIG ? PX_ENOMEM : rc;
        data += n;
        len -= n;
        if (w->out.len == w->out.max && (rc = px__ws_frame(w, 0)) != 0)
            return rc;
    }
    return 0;
}

/* A control frame is whole: its payload scrubbed, then out. A longer result than a control
 * frame may carry is cut to 125 bytes (a close frame keeps only its status code then). */
static int px__ws_control(px_wsscrub_t *w)
{
    char *s = NULL;
    size_t sl = 0;
    int rc = addon_scrub_once(w->m, w->ctl, w->ctl_len, &s, &sl, w->once_counts);
    if (rc < 0)
        return rc;
    const char *p = rc == 1 ? s : w->ctl;
    size_t n = rc == 1 ? sl : w->ctl_len;
    if (n > PX_WSFRAME_CONTROL_MAX)
        n = w->fp.opcode == PX_WSFRAME_CLOSE ? 2 : PX_WSFRAME_CONTROL_MAX;
    char f[2 + PX_WSFRAME_CONTROL_MAX];
    f[0] = (char)(0x80 | w->fp.opcode);
    f[1] = (char)n;
    if (n > 0)
        memcpy(f + 2, p, n);
    free(s);
    return w->emit(w->arg, f, 2 + n);
}

/* The shortest header's length for a payload of n bytes, unmasked. */
static size_t px__ws_hlen(uint64_t n)
{
    return n < 126 ? 2 : n <= 0xFFFF ? 4 : 10;
}

/* A one-frame message whose shortest header (hl bytes, just before p) and payload p[0..n) are
 * all in this read, scrubbed in one go: without a value it goes on as it came, without a copy
 * (what the stream would write byte for byte, as n fits one frame); else its scrubbed payload
 * goes the stream's way. 0 or a negative error. */
static int px__ws_whole(px_wsscrub_t *w, const char *p, size_t hl, size_t n)
{
    char *s = NULL;
    size_t sl = 0;
    int rc = addon_scrub_once(w->m, p, n, &s, &sl, w->once_counts);
    if (rc < 0)
        return rc;
    w->whole = 1;
    if (rc == 0)
        return w->emit(w->arg, p - hl, hl + n);
    rc = px__ws_put(w, s, sl);
    free(s);
    return rc != 0 ? rc : px__ws_frame(w, 1);
}

static int px__ws_fail(px_wsscrub_t *w, const char *why)
{
    w->why = why;
    return PX_EPARSE;
}

/* One event of the reader. 0 or a negative error. */
static int px__ws_event(px_wsscrub_t *w, int ev, const char *run, size_t rlen)
{
    int ctl = px_wsframe_is_control(w->fp.opcode);
    if (ev == PX_WSFRAME_HEAD) {
        if (w->fp.masked)
            return px__ws_fail(w, "a frame from the upstream with a mask");
        if (ctl)
            w->ctl_len = 0;
        else if (w->fp.opcode != PX_WSFRAME_CONT)
            w->opcode = w->fp.opcode; /* a new message (the stream is fresh since the last) */
        return 0;
    }
    if (w->whole) { /* its payload and end: already out */
        if (ev == PX_WSFRAME_END)
            w->whole = 0;
        return 0;
    }
    if (ev == PX_WSFRAME_DATA) {
        if (!ctl)
            return addon_scrub_stream_feed(w->st, run, rlen, px__ws_put, w);
        memcpy(w->ctl + w->ctl_len, run, rlen); /* the reader keeps it within 125 */
        w->ctl_len += rlen;
        return 0;
    }
    /* END */
    if (ctl)
        return px__ws_control(w);
    if (!w->fp.message_end)
        return w->out.len > PX__WS_HDR ? px__ws_frame(w, 0) : 0;
    int rc = addon_scrub_stream_flush(w->st, px__ws_put, w);
    return rc != 0 ? rc : px__ws_frame(w, 1);
}

int px_wsscrub_feed(px_wsscrub_t *w, const char *data, size_t len, px_wsscrub_emit_cb emit,
                    void *arg)
{
    if (w->why != NULL)
        return PX_EPARSE;
    w->emit = emit;
    w->arg = arg;
    size_t at = 0;
    for (;;) {
        size_t used, rlen;
        const char *run;
        size_t had = w->fp.hlen; /* header bytes read before: 0 when a header begins here */
        int ev = px_wsframe_next(&w->fp, data + at, len - at, &used, &run, &rlen);
        at += used;
        if (ev < 0)
            return px__ws_fail(w, w->fp.why);
        if (ev == PX_WSFRAME_MORE)
            return 0;
        int rc = px__ws_event(w, ev, run, rlen);
        /* a one-frame message of at most a frame's worth, its shortest header (all of it read
         * now: a server's frame is unmasked) and its payload in this read */
        if (rc == 0 && ev == PX_WSFRAME_HEAD && w->fp.fin && !px_wsframe_is_control(w->fp.opcode) &&
            w->fp.opcode != PX_WSFRAME_CONT && w->fp.len <= PX_WSSCRUB_FRAME_MAX &&
            w->fp.len <= len - at && had == 0 && used == px__ws_hlen(w->fp.len))
            rc = px__ws_whole(w, data + at, used, (size_t)w->fp.len);
        if (rc != 0) {
            if (w->why == NULL)
                w->why = rc == PX_ENOMEM ? "out of memory" : "the output failed";
            return rc;
        }
    }
}

const char *px_wsscrub_why(const px_wsscrub_t *w)
{
    return w->why;
}

const uint64_t *px_wsscrub_counts(const px_wsscrub_t *w, uint64_t *total)
{
    uint64_t t = 0;
    for (size_t i = 0; i < w->nitems; i++) {
        w->counts[i] = addon_scrub_stream_count(w->st, i) - w->taken[i] + w->once_counts[i];
        t += w->counts[i];
    }
    *total = t;
    return w->counts;
}

void px_wsscrub_take_counts(px_wsscrub_t *w)
{
    for (size_t i = 0; i < w->nitems; i++) {
        w->taken[i] = addon_scrub_stream_count(w->st, i);
        w->once_counts[i] = 0;
    }
}
