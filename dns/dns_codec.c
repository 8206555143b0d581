/* DNS wire codec: parses one query, builds the answer (RFC 1035, RFC 6891). See dns_codec.h. */
#include "dns/dns_codec.h"

#include <stdio.h>
#include <string.h>

#include "base/px_dec.h"
#include "base/px_err.h"

#define DNS__FLAG_QR 0x8000u
#define DNS__FLAG_RD 0x0100u
#define DNS__FLAG_RA 0x0080u
#define DNS__FLAG_CD 0x0010u
#define DNS__OPCODE_SHIFT 11
#define DNS__OPCODE_MASK 0x0Fu
#define DNS__RCODE_FORMERR 1u
#define DNS__RCODE_NOTIMP 4u
/* BADVERS is extended RCODE 16: upper 8 bits (1) in the OPT TTL, lower 4 bits (0) in the header. */
#define DNS__EXT_RCODE_BADVERS 1u
#define DNS__EDNS_DO 0x8000u
#define DNS__LABEL_MAX 63
#define DNS__RR_FIXED 10 /* TYPE, CLASS, TTL, RDLENGTH */
#define DNS__OPT_RR_LEN 11
#define DNS__A_RR_LEN 16

typedef struct dns__query {
    uint16_t id;
    uint16_t flags;
    uint16_t qdcount;
    uint16_t ancount;
    uint16_t nscount;
    uint16_t arcount;
    size_t qend; /* offset just past the first question's QCLASS; 0 when unreadable */
    uint16_t qtype;
    int has_opt;
    uint8_t opt_version;
    uint16_t opt_flags;
} dns__query_t;

static uint16_t dns__rd16(const uint8_t *p)
{
    return (uint16_t)((p[0] << 8) | p[1]);
}

static void dns__wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

/* Skips the uncompressed question name at off. Returns the offset past its root byte, or 0
 * when it is truncated, compressed, uses a reserved label type or exceeds 255 bytes. */
static size_t dns__question_name_end(const uint8_t *q, size_t len, size_t off)
{
    size_t wire = 0;

    for (;;) {
        uint8_t b;

        if (off >= len)
            return 0;
        b = q[off];
        if (b > DNS__LABEL_MAX)
            return 0; /* 0x40-0xBF reserved label types, 0xC0-0xFF compression pointer */
        wire += 1u + b;
        if (wire > DNS_CODEC_NAME_WIRE_MAX)
            return 0;
        if (b == 0)
            return off + 1;
        off += 1u + b;
    }
}

/* Skips a resource record name in the additional section, where compression is legal.
 * Returns the offset past it, or 0 when malformed. *root is set when the name is ".". */
static size_t dns__rr_name_end(const uint8_t *q, size_t len, size_t off, int *root)
{
    size_t wire = 0;

    *root = off < len && q[off] == 0;
    for (;;) {
        uint8_t b;

        if (off >= len)
            return 0;
        b = q[off];
        if (b >= 0xC0)
            return off + 2 <= len ? off + 2 : 0;
        if (b > DNS__LABEL_MAX)
            return 0;
        wire += 1u + b;
        if (wire > DNS_CODEC_NAME_WIRE_MAX)
            return 0;
        if (b == 0)
            return off + 1;
        off += 1u + b;
    }
}

/* Reads the additional section, looking for the OPT record. Returns 0, or PX_EPARSE when a
 * record is truncated, an OPT has a non-root owner, or there are two OPT records. */
static int dns__parse_additional(const uint8_t *q, size_t len, dns__query_t *dq)
{
    size_t off = dq->qend;
    uint16_t i;

    for (i = 0; i < dq->arcount; i++) {
        int root;
        uint16_t type;
        uint16_t rdlen;
        uint32_t ttl;

        off = dns__rr_name_end(q, len, off, &root);
        if (off == 0 || len - off < DNS__RR_FIXED)
            return PX_EPARSE;
        type = dns__rd16(q + off);
        ttl = ((uint32_t)dns__rd16(q + off + 4) << 16) | dns__rd16(q + off + 6);
        rdlen = dns__rd16(q + off + 8);
        off += DNS__RR_FIXED;
        if (len - off < rdlen)
            return PX_EPARSE;
        off += rdlen;
        if (type != DNS_TYPE_OPT)
            continue;
        if (!root || dq->has_opt)
            return PX_EPARSE;
        dq->has_opt = 1;
        dq->opt_version = (uint8_t)(ttl >> 16);
        dq->opt_flags = (uint16_t)ttl;
    }
    return 0;
}

static size_t dns__put_header(uint8_t *out, const dns__query_t *dq, unsigned rcode, uint16_t qd,
                              uint16_t an, uint16_t ar)
{
    unsigned opcode = (dq->flags >> DNS__OPCODE_SHIFT) & DNS__OPCODE_MASK;
    unsigned flags = DNS__FLAG_QR | (opcode << DNS__OPCODE_SHIFT) | DNS__FLAG_RA | rcode;

    flags |= dq->flags & (DNS__FLAG_RD | DNS__FLAG_CD);
    dns__wr16(out, dq->id);
    dns__wr16(out + 2, (uint16_t)flags);
    dns__wr16(out + 4, qd);
    dns__wr16(out + 6, an);
    dns__wr16(out + 8, 0);
    dns__wr16(out + 10, ar);
    return DNS_CODEC_HEADER_LEN;
}

static size_t dns__put_opt(uint8_t *out, const dns__query_t *dq, unsigned ext_rcode)
{
    out[0] = 0; /* root owner */
    dns__wr16(out + 1, DNS_TYPE_OPT);
    dns__wr16(out + 3, DNS_CODEC_EDNS_PAYLOAD);
    out[5] = (uint8_t)ext_rcode;
    out[6] = 0; /* version */
    dns__wr16(out + 7, dq->opt_flags & DNS__EDNS_DO);
    dns__wr16(out + 9, 0); /* no options */
    return DNS__OPT_RR_LEN;
}

static size_t dns__put_a(uint8_t *out, const uint8_t ip[4])
{
    dns__wr16(out, 0xC00C); /* pointer to the question name at offset 12 */
    dns__wr16(out + 2, DNS_TYPE_A);
    dns__wr16(out + 4, 1); /* class IN */
    dns__wr16(out + 6, 0);
    dns__wr16(out + 8, DNS_CODEC_A_TTL);
    dns__wr16(out + 10, 4);
    memcpy(out + 12, ip, 4);
    return DNS__A_RR_LEN;
}

static size_t dns__put_escaped(char *out, uint8_t c)
{
    out[0] = '\\';
    out[1] = (char)('0' + c / 100);
    out[2] = (char)('0' + (c / 10) % 10);
    out[3] = (char)('0' + c % 10);
    return 4;
}

/* Writes the question name (already validated) as text: labels joined by '.', bytes outside
 * 0x21-0x7E and '.' or '\' inside a label as \DDD, the root as ".". Returns its length. */
static size_t dns__name_text(const uint8_t *q, size_t off, char *out, size_t cap)
{
    size_t n = 0;

    if (q[off] == 0) {
        out[n++] = '.';
        out[n] = '\0';
        return n;
    }
    while (q[off] != 0) {
        uint8_t llen = q[off++];
        uint8_t i;

        if (n != 0 && n + 1 < cap)
            out[n++] = '.';
        for (i = 0; i < llen; i++) {
            uint8_t c = q[off + i];

            if (n + 5 > cap)
                goto done; /* unreachable for legal names; keeps the cap whatever happens */
            if (c > 0x20 && c < 0x7F && c != '.' && c != '\\')
                out[n++] = (char)c;
            else
                n += dns__put_escaped(out + n, c);
        }
        off += llen;
    }
done:
    out[n] = '\0';
    return n;
}

static void dns__info_question(dns_answer_info_t *info, const uint8_t *q, const dns__query_t *dq)
{
    if (info == NULL)
        return;
    info->name_known = 1;
    info->qtype = dq->qtype;
    info->name_len = dns__name_text(q, DNS_CODEC_HEADER_LEN, info->name, sizeof(info->name));
}

/* Builds a header-only or header+question answer (+ OPT when with_opt). */
static int dns__answer_short(const uint8_t *q, const dns__query_t *dq, unsigned rcode,
                             int with_question, int with_opt, unsigned ext_rcode, uint8_t *out,
                             size_t cap)
{
    size_t qlen = with_question ? dq->qend - DNS_CODEC_HEADER_LEN : 0;
    size_t need = DNS_CODEC_HEADER_LEN + qlen + (with_opt ? DNS__OPT_RR_LEN : 0);
    size_t n;

    if (need > cap)
        return PX_ETOOBIG;
    n = dns__put_header(out, dq, rcode, with_question ? 1 : 0, 0, with_opt ? 1 : 0);
    memcpy(out + n, q + DNS_CODEC_HEADER_LEN, qlen);
    n += qlen;
    if (with_opt)
        n += dns__put_opt(out + n, dq, ext_rcode);
    return (int)n;
}

int dns_codec_answer(const uint8_t *query, size_t len, const uint8_t proxy_ip[4], uint8_t *out,
                     size_t cap, dns_answer_info_t *info)
{
    dns__query_t dq;
    size_t name_end = 0;
    size_t need;
    size_t n;
    unsigned opcode;

    if (info != NULL) {
        info->kind = DNS_ANSWER_NONE;
        info->name_known = 0;
        info->qtype = 0;
        info->name_len = 0;
        info->name[0] = '\0';
    }
    if (query == NULL || len < DNS_CODEC_HEADER_LEN)
        return 0;
    memset(&dq, 0, sizeof(dq));
    dq.id = dns__rd16(query);
    dq.flags = dns__rd16(query + 2);
    if (dq.flags & DNS__FLAG_QR)
        return 0; /* never answer a response: no reflection loops */
    dq.qdcount = dns__rd16(query + 4);
    dq.ancount = dns__rd16(query + 6);
    dq.nscount = dns__rd16(query + 8);
    dq.arcount = dns__rd16(query + 10);

    if (dq.qdcount >= 1)
        name_end = dns__question_name_end(query, len, DNS_CODEC_HEADER_LEN);
    if (name_end != 0 && len - name_end >= 4) {
        dq.qend = name_end + 4;
        dq.qtype = dns__rd16(query + name_end);
        dns__info_question(info, query, &dq);
    }

    opcode = (dq.flags >> DNS__OPCODE_SHIFT) & DNS__OPCODE_MASK;
    if (opcode != 0) {
        if (info != NULL)
            info->kind = DNS_ANSWER_NOTIMP;
        return dns__answer_short(query, &dq, DNS__RCODE_NOTIMP, dq.qend != 0, 0, 0, out, cap);
    }
    if (dq.qdcount != 1 || dq.qend == 0 || dq.ancount != 0 || dq.nscount != 0 ||
        dns__parse_additional(query, len, &dq) != 0) {
        if (info != NULL)
            info->kind = DNS_ANSWER_FORMERR;
        return dns__answer_short(query, &dq, DNS__RCODE_FORMERR, dq.qend != 0, 0, 0, out, cap);
    }
    if (dq.has_opt && dq.opt_version > 0) {
        if (info != NULL)
            info->kind = DNS_ANSWER_BADVERS;
        return dns__answer_short(query, &dq, 0, 1, 1, DNS__EXT_RCODE_BADVERS, out, cap);
    }
    if (dq.qtype != DNS_TYPE_A) {
        if (info != NULL)
            info->kind = DNS_ANSWER_NODATA;
        return dns__answer_short(query, &dq, 0, 1, dq.has_opt, 0, out, cap);
    }

    need = dq.qend + DNS__A_RR_LEN + (dq.has_opt ? DNS__OPT_RR_LEN : 0);
    if (need > cap)
        return PX_ETOOBIG;
    n = dns__put_header(out, &dq, 0, 1, 1, dq.has_opt ? 1 : 0);
    memcpy(out + n, query + DNS_CODEC_HEADER_LEN, dq.qend - DNS_CODEC_HEADER_LEN);
    n = dq.qend;
    n += dns__put_a(out + n, proxy_ip);
    if (dq.has_opt)
        n += dns__put_opt(out + n, &dq, 0);
    if (info != NULL)
        info->kind = DNS_ANSWER_A;
    return (int)n;
}

static size_t dns__put_u(char *out, unsigned v)
{
    char tmp[PX_DEC_MAX];
    const char *p = px_dec(tmp + sizeof(tmp), v);
    size_t n = (size_t)(tmp + sizeof(tmp) - p);
    memcpy(out, p, n);
    return n;
}

size_t dns_codec_type_text(uint16_t qtype, char out[DNS_CODEC_TYPE_TEXT_MAX])
{
    static const struct {
        uint16_t type;
        const char *name;
    } names[] = {
        {1, "A"},      {2, "NS"},    {5, "CNAME"}, {6, "SOA"},  {12, "PTR"},
        {15, "MX"},    {16, "TXT"},  {28, "AAAA"}, {33, "SRV"}, {64, "SVCB"},
        {65, "HTTPS"}, {255, "ANY"}, {257, "CAA"},
    };
    size_t i;
    size_t n;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (names[i].type == qtype) {
            n = strlen(names[i].name);
            memcpy(out, names[i].name, n + 1);
            return n;
        }
    }
    memcpy(out, "TYPE", 4);
    n = 4 + dns__put_u(out + 4, qtype);
    out[n] = '\0';
    return n;
}

int dns_codec_log_fields(const dns_answer_info_t *info, const uint8_t proxy_ip[4],
                         dns_log_fields_t *f)
{
    const char *status = NULL;
    switch (info->kind) {
    case DNS_ANSWER_NONE:
        return 0;
    case DNS_ANSWER_A:
        break;
    case DNS_ANSWER_NODATA:
        status = "NODATA";
        break;
    case DNS_ANSWER_NOTIMP:
        status = "NOTIMP";
        break;
    case DNS_ANSWER_FORMERR:
        status = "FORMERR";
        break;
    case DNS_ANSWER_BADVERS:
        status = "BADVERS";
        break;
    }
    if (info->name_known) {
        dns_codec_type_text(info->qtype, f->type);
        f->name = info->name;
        f->name_len = info->name_len;
    } else {
        snprintf(f->type, sizeof(f->type), "?");
        f->name = "?";
        f->name_len = 1;
    }
    if (status != NULL) {
        snprintf(f->answer, sizeof(f->answer), "%s", status);
    } else {
        size_t n = 0;
        for (int i = 0; i < 4; i++) {
            if (i != 0)
                f->answer[n++] = '.';
            n += dns__put_u(f->answer + n, proxy_ip[i]);
        }
        f->answer[n] = '\0';
    }
    return 1;
}
