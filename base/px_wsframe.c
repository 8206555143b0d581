#include "base/px_wsframe.h"

#include <string.h>

#include "base/px_err.h"

enum { PX__WSF_HEAD = 0, PX__WSF_PAYLOAD, PX__WSF_END, PX__WSF_ERROR };

void px_wsframe_init(px_wsframe_t *p, int need_mask)
{
    memset(p, 0, sizeof(*p));
    p->need_mask = need_mask;
}

static int px__wsf_fail(px_wsframe_t *p, const char *why)
{
    p->why = why;
    p->stage = PX__WSF_ERROR;
    return PX_EPARSE;
}

/* The header's length so far known from its first two bytes (2, 4 or 10, plus 4 masked). */
static size_t px__wsf_hdr_need(const uint8_t *h)
{
    size_t n = 2;
    uint8_t l = h[1] & 0x7F;
    if (l == 126)
        n += 2;
    else if (l == 127)
        n += 8;
    if (h[1] & 0x80)
        n += 4;
    return n;
}

/* Checks the first two bytes, as soon as they are there. */
static int px__wsf_check(px_wsframe_t *p)
{
    const uint8_t *h = p->hdr;
    int opcode = h[0] & 0x0F;
    int fin = (h[0] & 0x80) != 0;
    if (h[0] & 0x70)
        return px__wsf_fail(p, "a frame with RSV bits set (no extension was negotiated)");
    if ((opcode > PX_WSFRAME_BINARY && opcode < PX_WSFRAME_CLOSE) || opcode > PX_WSFRAME_PONG)
        return px__wsf_fail(p, "a frame with a reserved opcode");
    if (p->need_mask && !(h[1] & 0x80))
        return px__wsf_fail(p, "a client frame without a mask");
    if (px_wsframe_is_control(opcode)) {
        if (!fin)
            return px__wsf_fail(p, "a fragmented control frame");
        if ((h[1] & 0x7F) > PX_WSFRAME_CONTROL_MAX)
            return px__wsf_fail(p, "a control frame longer than 125 bytes");
    } else if (opcode == PX_WSFRAME_CONT && !p->in_message) {
        return px__wsf_fail(p, "a continuation frame outside a fragmented message");
    } else if (opcode != PX_WSFRAME_CONT && p->in_message) {
        return px__wsf_fail(p, "a new message inside a fragmented one");
    }
    return 0;
}

/* The header is whole: the frame's fields. */
static int px__wsf_head(px_wsframe_t *p)
{
    const uint8_t *h = p->hdr;
    size_t at = 2;
    uint64_t len = h[1] & 0x7F;
    if (len == 126) {
        len = ((uint64_t)h[2] << 8) | h[3];
        at = 4;
    } else if (len == 127) {
        len = 0;
        for (int i = 0; i < 8; i++)
            len = (len << 8) | h[2 + i];
        at = 10;
    }
    p->opcode = h[0] & 0x0F;
    p->fin = (h[0] & 0x80) != 0;
    p->masked = (h[1] & 0x80) != 0;
    if (p->masked)
        memcpy(p->key, h + at, 4);
    else
        memset(p->key, 0, 4);
    p->len = len;
    p->off = 0;
    p->message_end = 0;
    if (!px_wsframe_is_control(p->opcode)) {
        p->in_message = !p->fin;
        p->message_end = p->fin;
    }
    p->hlen = 0;
    p->stage = len > 0 ? PX__WSF_PAYLOAD : PX__WSF_END;
    return PX_WSFRAME_HEAD;
}

int px_wsframe_next(px_wsframe_t *p, const char *data, size_t len, size_t *used, const char **run,
                    size_t *run_len)
{
    *used = 0;
    *run = NULL;
    *run_len = 0;
    switch (p->stage) {
    case PX__WSF_ERROR:
        return PX_EPARSE;
    case PX__WSF_END:
        p->stage = PX__WSF_HEAD;
        return PX_WSFRAME_END;
    case PX__WSF_PAYLOAD: {
        if (len == 0)
            return PX_WSFRAME_MORE;
        uint64_t left = p->len - p->off;
        size_t n = left < len ? (size_t)left : len;
        *run = data;
        *run_len = n;
        *used = n;
        p->off += n;
        if (p->off == p->len)
            p->stage = PX__WSF_END;
        return PX_WSFRAME_DATA;
    }
    default:
        break;
    }
    size_t at = 0;
    while (at < len) {
        p->hdr[p->hlen++] = (uint8_t)data[at++];
        int rc = 0;
        if (p->hlen == 2)
            rc = px__wsf_check(p);
        else if (p->hlen == 3 && (p->hdr[1] & 0x7F) == 127 && (p->hdr[2] & 0x80))
            rc = px__wsf_fail(p, "a 64-bit payload length with its top bit set");
        if (rc < 0) {
            *used = at;
            return rc;
        }
        if (p->hlen >= 2 && p->hlen == px__wsf_hdr_need(p->hdr)) {
            *used = at;
            return px__wsf_head(p);
        }
    }
    *used = at;
    return PX_WSFRAME_MORE;
}

void px_wsframe_unmask(const uint8_t key[4], uint64_t off, const char *in, char *out, size_t len)
{
    size_t k = (size_t)(off & 3);
    size_t i = 0;
    /* byte by byte up to a key boundary, then four bytes at a time with the key rotated */
    for (; i < len && k != 0; i++, k = (k + 1) & 3)
        out[i] = (char)(in[i] ^ key[k]);
    uint32_t k32;
    memcpy(&k32, key, 4);
    for (; i + 4 <= len; i += 4) {
        uint32_t w;
        memcpy(&w, in + i, 4);
        w ^= k32;
        memcpy(out + i, &w, 4);
    }
    for (; i < len; i++, k = (k + 1) & 3)
        out[i] = (char)(in[i] ^ key[k]);
}
