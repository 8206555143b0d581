/* DNS wire codec for the responder (docs/network-log.md). Pure: no I/O, no allocation, no loop.
 *
 * Every A query is answered with the proxy IP, every other type with NODATA, other opcodes
 * with NOTIMP and malformed queries with FORMERR when the 12-byte header is readable. A
 * datagram shorter than a header or a response (QR=1) gets no answer at all. */
#ifndef DNS_CODEC_H
#define DNS_CODEC_H

#include <stddef.h>
#include <stdint.h>

#define DNS_CODEC_HEADER_LEN 12
/* Longest name on the wire, length bytes and the root byte included (RFC 1035 §2.3.4). */
#define DNS_CODEC_NAME_WIRE_MAX 255
/* Longest answer the codec builds: header, question, one A record, one OPT record. */
#define DNS_CODEC_ANSWER_MAX (DNS_CODEC_HEADER_LEN + DNS_CODEC_NAME_WIRE_MAX + 4 + 16 + 11)
/* Printable name cap, NUL included; every legal name fits even with each byte as \DDD. */
#define DNS_CODEC_NAME_TEXT_MAX 1024
/* Type mnemonic cap, NUL included ("TYPE65535"). */
#define DNS_CODEC_TYPE_TEXT_MAX 12
/* Log line cap, NUL included: "DNS " type " " name " -> " IPv4 address or status. */
#define DNS_CODEC_LOG_LINE_MAX (4 + DNS_CODEC_TYPE_TEXT_MAX + 1 + DNS_CODEC_NAME_TEXT_MAX + 4 + 16)
/* UDP payload size advertised in our OPT record (RFC 6891 §6.2.5; the DNS flag day value). */
#define DNS_CODEC_EDNS_PAYLOAD 1232
/* TTL of the A record. */
#define DNS_CODEC_A_TTL 60

#define DNS_TYPE_A 1
#define DNS_TYPE_OPT 41

typedef enum dns_answer_kind {
    DNS_ANSWER_NONE = 0, /* nothing may be sent (short datagram, QR=1) */
    DNS_ANSWER_A,        /* NOERROR, one A record with the proxy IP */
    DNS_ANSWER_NODATA,   /* NOERROR, no answer record */
    DNS_ANSWER_NOTIMP,   /* opcode other than QUERY */
    DNS_ANSWER_FORMERR,  /* malformed query */
    DNS_ANSWER_BADVERS   /* EDNS version above 0 */
} dns_answer_kind_t;

/* What was answered, for the log. name and type are meaningful only when name_known. */
typedef struct dns_answer_info {
    dns_answer_kind_t kind;
    int name_known;
    uint16_t qtype;
    size_t name_len;                    /* bytes in name, NUL excluded */
    char name[DNS_CODEC_NAME_TEXT_MAX]; /* dig-style: \DDD escapes, root is "." */
} dns_answer_info_t;

/* Builds the answer to the query query[0..len) into out (cap bytes; DNS_CODEC_ANSWER_MAX is
 * always enough). proxy_ip is the IPv4 address in network order. Returns the answer length,
 * 0 when nothing must be sent, or PX_ETOOBIG when cap is too small. Borrows everything;
 * info (may be NULL) receives what the log line needs. Never reads past query[len). */
int dns_codec_answer(const uint8_t *query, size_t len, const uint8_t proxy_ip[4], uint8_t *out,
                     size_t cap, dns_answer_info_t *info);

/* What the network log says of an answer, as fields (the proxy's audit event writes the line:
 * "DNS A example.com -> 10.199.1.100", "DNS AAAA x -> NODATA", "DNS ? ? -> FORMERR" when the
 * question was unreadable). */
typedef struct dns_log_fields {
    char type[DNS_CODEC_TYPE_TEXT_MAX]; /* the query type's mnemonic, "?" when unreadable */
    const char *name;                   /* the query name (dig-style), "?" when unreadable */
    size_t name_len;
    char answer[16]; /* the dotted quad, or NODATA, NOTIMP, FORMERR, BADVERS */
} dns_log_fields_t;

/* Fills f for info (f->name borrows info). Returns 1, or 0 for DNS_ANSWER_NONE (no line). */
int dns_codec_log_fields(const dns_answer_info_t *info, const uint8_t proxy_ip[4],
                         dns_log_fields_t *f);

/* Writes the mnemonic of qtype (A, AAAA, HTTPS, ..., else TYPE<n>) NUL-terminated into out
 * and returns its length. */
size_t dns_codec_type_text(uint16_t qtype, char out[DNS_CODEC_TYPE_TEXT_MAX]);

#endif
