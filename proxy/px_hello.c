#include "proxy/px_hello.h"

#include <string.h>

#include "proxy/px_err.h"

static unsigned px__u16(const unsigned char *p)
{
    return ((unsigned)p[0] << 8) | p[1];
}

int px_hello_sni(const unsigned char *data, size_t len, char *sni, size_t cap)
{
    if (len < 5)
        return 0;
    if (data[0] != 0x16 || data[1] != 0x03)
        return PX_EPARSE;
    size_t rec = px__u16(data + 3);
    if (rec < 4 || rec > PX_HELLO_MAX - 5)
        return PX_EPARSE;
    if (len < 5 + rec)
        return 0;
    const unsigned char *p = data + 5;
    const unsigned char *end = p + rec;
    if (p[0] != 0x01) /* ClientHello */
        return PX_EPARSE;
    size_t hlen = ((size_t)p[1] << 16) | ((size_t)p[2] << 8) | p[3];
    p += 4;
    if (hlen > (size_t)(end - p))
        return PX_EPARSE; /* a hello split over records: not supported, fail closed */
    end = p + hlen;
    if (end - p < 2 + 32 + 1)
        return PX_EPARSE;
    p += 2 + 32;
    size_t sid = p[0];
    p += 1;
    if ((size_t)(end - p) < sid + 2)
        return PX_EPARSE;
    p += sid;
    size_t cs = px__u16(p);
    p += 2;
    if ((size_t)(end - p) < cs + 1)
        return PX_EPARSE;
    p += cs;
    size_t comp = p[0];
    p += 1;
    if ((size_t)(end - p) < comp + 2)
        return PX_EPARSE;
    p += comp;
    size_t exts = px__u16(p);
    p += 2;
    if ((size_t)(end - p) < exts)
        return PX_EPARSE;
    const unsigned char *eend = p + exts;
    while (eend - p >= 4) {
        unsigned type = px__u16(p);
        size_t elen = px__u16(p + 2);
        p += 4;
        if ((size_t)(eend - p) < elen)
            return PX_EPARSE;
        if (type == 0) { /* server_name */
            const unsigned char *q = p;
            if (elen < 2)
                return PX_EPARSE;
            size_t list = px__u16(q);
            q += 2;
            if (list > elen - 2)
                return PX_EPARSE;
            const unsigned char *lend = q + list;
            while (lend - q >= 3) {
                unsigned nt = q[0];
                size_t nl = px__u16(q + 1);
                q += 3;
                if ((size_t)(lend - q) < nl)
                    return PX_EPARSE;
                if (nt == 0) {
                    if (nl == 0 || nl >= cap || memchr(q, 0, nl) != NULL)
                        return PX_EPARSE;
                    memcpy(sni, q, nl);
                    sni[nl] = '\0';
                    return 1;
                }
                q += nl;
            }
            return PX_EPARSE;
        }
        p += elen;
    }
    return PX_EPARSE;
}
