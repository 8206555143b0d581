#include "net/px_hello.h"

#include <string.h>

#include "base/px_err.h"

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

static int px__has_ext(const px_hello_info_t *h, int type)
{
    for (size_t i = 0; i < h->nexts; i++)
        if (h->exts[i] == type)
            return 1;
    return 0;
}

/* 1 when the ALPN list holds proto. */
static int px__alpn_has(const px_hello_info_t *h, const char *proto)
{
    size_t n = strlen(proto);
    for (size_t i = 0; h->alpn != NULL && i < h->alpn_len;) {
        size_t l = h->alpn[i];
        if (i + 1 + l > h->alpn_len)
            break;
        if (l == n && memcmp(h->alpn + i + 1, proto, n) == 0)
            return 1;
        i += 1 + l;
    }
    return 0;
}

px_runtime_t px_hello_runtime(const px_hello_info_t *h)
{
    enum { SIG_ALGS_CERT = 50, RENEGO = 65281, SCT = 18, ALPN = 16, PHA = 49 };
    if (h->nciphers == 0)
        return PX_RT_UNKNOWN;
    /* Java (JSSE): signature_algorithms_cert, which OpenSSL clients do not send, and its TLS 1.3
     * suites in the order AES-256, AES-128, ChaCha20 (OpenSSL 3 only lists extensions it
     * knows, so status_request_v2 cannot be seen) */
    if (px__has_ext(h, SIG_ALGS_CERT) && h->nciphers >= 3 && h->ciphers[0] == 0x1302 &&
        h->ciphers[1] == 0x1301)
        return PX_RT_JAVA;
    /* Go (crypto/tls): renegotiation_info and SCT as extensions, and its TLS 1.2 suites listed
     * first (the TLS 1.3 ones are not configurable there) */
    if (px__has_ext(h, RENEGO) && px__has_ext(h, SCT) && (h->ciphers[0] >> 8) != 0x13)
        return PX_RT_GO;
    /* the rest speak OpenSSL; Node's default cipher list puts ECDHE-RSA-AES128-GCM-SHA256
     * (c02f) right after the TLS 1.3 suites, OpenSSL's puts an AES-256 suite there */
    if (h->nciphers > 3 && (h->ciphers[0] >> 8) == 0x13 && h->ciphers[3] == 0xc02f)
        return PX_RT_NODE;
    if (!px__has_ext(h, PHA))
        return PX_RT_UNKNOWN;
    if (px__alpn_has(h, "h2"))
        return PX_RT_CURL;
    if (px__has_ext(h, ALPN))
        return PX_RT_PYTHON; /* urllib, requests and pip ask for http/1.1 alone */
    return PX_RT_UNKNOWN;
}

const char *px_runtime_name(px_runtime_t rt)
{
    static const char *const names[] = {"an unknown client", "curl (OpenSSL)", "Python", "Node",
                                        "Go", "Java"};
    return names[rt <= PX_RT_JAVA ? rt : 0];
}

const char *px_runtime_fix(px_runtime_t rt)
{
    switch (rt) {
    case PX_RT_CURL:
        return "pass --cacert with airlock's CA certificate, or add it to the system store "
               "(update-ca-certificates)";
    case PX_RT_PYTHON:
        return "set REQUESTS_CA_BUNDLE and SSL_CERT_FILE to airlock's CA certificate (pip: "
               "PIP_CERT)";
    case PX_RT_NODE:
        return "set NODE_EXTRA_CA_CERTS to airlock's CA certificate";
    case PX_RT_GO:
        return "set SSL_CERT_FILE to airlock's CA certificate, or add it to the system store";
    case PX_RT_JAVA:
        return "import airlock's CA certificate into the truststore (keytool -importcert "
               "-cacerts)";
    default:
        return "make the client trust airlock's CA certificate (mitmproxy-ca-cert.pem)";
    }
}
