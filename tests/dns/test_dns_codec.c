/* dns_codec: table-driven checks of every answer kind, exact bytes, log lines and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "dns/dns_codec.h"
#include "base/px_err.h"

/* The network-log line of info, as the proxy writes it from dns_codec_log_fields(): its length,
 * 0 when there is none. */
static int log_line(const dns_answer_info_t *info, const uint8_t ip[4], char *buf, size_t cap)
{
    dns_log_fields_t lf;
    if (!dns_codec_log_fields(info, ip, &lf)) {
        buf[0] = '\0';
        return 0;
    }
    return snprintf(buf, cap, "DNS %s %.*s -> %s", lf.type, (int)lf.name_len, lf.name, lf.answer);
}

static const uint8_t proxy_ip[4] = {10, 199, 1, 100};

/* Hex to bytes; spaces are ignored. Returns the byte count. */
static size_t hex(const char *s, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int hi = -1;

    for (; *s != '\0'; s++) {
        int v = 0;

        if (*s == ' ')
            continue;
        if (*s >= '0' && *s <= '9')
            v = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            v = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            v = *s - 'A' + 10;
        else
            fail_msg("bad hex char %c", *s);
        if (hi < 0) {
            hi = v;
            continue;
        }
        assert_true(n < cap);
        out[n++] = (uint8_t)(hi << 4 | v);
        hi = -1;
    }
    assert_int_equal(hi, -1);
    return n;
}

static void assert_bytes(const uint8_t *got, size_t got_len, const char *want_hex)
{
    uint8_t want[8192];
    size_t want_len = hex(want_hex, want, sizeof(want));
    size_t i;

    if (got_len != want_len || memcmp(got, want, want_len) != 0) {
        char buf[4096];
        size_t n = 0;

        for (i = 0; i < got_len && n + 3 < sizeof(buf); i++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%02x", got[i]);
        fail_msg("answer mismatch\n got  %s\n want %s", buf, want_hex);
    }
}

#define EX "07 6578616d706c65 03 636f6d 00"
#define QHDR "1234 0100 0001 0000 0000 0000"
#define QHDR_AR1 "1234 0100 0001 0000 0000 0001"
#define RA "c00c 0001 0001 0000003c 0004 0ac70164"
#define OPT_Q "00 0029 1000 00 00 0000 0000"
#define OPT_A "00 0029 04d0 00 00 0000 0000"

typedef struct codec_case {
    const char *name;
    const char *query;
    const char *answer; /* NULL: no answer expected */
    dns_answer_kind_t kind;
    const char *log; /* NULL: no log line */
} codec_case_t;

static const codec_case_t cases[] = {
    {"A reference vector", QHDR EX "0001 0001", "1234 8180 0001 0001 0000 0000" EX "0001 0001" RA,
     DNS_ANSWER_A, "DNS A example.com -> 10.199.1.100"},
    {"AAAA NODATA", QHDR EX "001c 0001", "1234 8180 0001 0000 0000 0000" EX "001c 0001",
     DNS_ANSWER_NODATA, "DNS AAAA example.com -> NODATA"},
    {"HTTPS NODATA", QHDR EX "0041 0001", "1234 8180 0001 0000 0000 0000" EX "0041 0001",
     DNS_ANSWER_NODATA, "DNS HTTPS example.com -> NODATA"},
    {"MX NODATA", QHDR EX "000f 0001", "1234 8180 0001 0000 0000 0000" EX "000f 0001",
     DNS_ANSWER_NODATA, "DNS MX example.com -> NODATA"},
    {"ANY NODATA", QHDR EX "00ff 0001", "1234 8180 0001 0000 0000 0000" EX "00ff 0001",
     DNS_ANSWER_NODATA, "DNS ANY example.com -> NODATA"},
    {"TXT NODATA", QHDR EX "0010 0001", "1234 8180 0001 0000 0000 0000" EX "0010 0001",
     DNS_ANSWER_NODATA, "DNS TXT example.com -> NODATA"},
    {"unknown type", QHDR EX "0063 0001", "1234 8180 0001 0000 0000 0000" EX "0063 0001",
     DNS_ANSWER_NODATA, "DNS TYPE99 example.com -> NODATA"},
    {"RD clear echoed", "1234 0000 0001 0000 0000 0000" EX "0001 0001",
     "1234 8080 0001 0001 0000 0000" EX "0001 0001" RA, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"CD echoed, AD dropped", "1234 0130 0001 0000 0000 0000" EX "0001 0001",
     "1234 8190 0001 0001 0000 0000" EX "0001 0001" RA, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"opcode STATUS NOTIMP", "1234 1100 0001 0000 0000 0000" EX "0001 0001",
     "1234 9184 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_NOTIMP,
     "DNS A example.com -> NOTIMP"},
    {"opcode UPDATE NOTIMP, sections ignored", "1234 2800 0001 0002 0003 0000" EX "0006 0001",
     "1234 a884 0001 0000 0000 0000" EX "0006 0001", DNS_ANSWER_NOTIMP,
     "DNS SOA example.com -> NOTIMP"},
    {"NOTIMP without a readable question", "1234 2000 0000 0000 0000 0000",
     "1234 a084 0000 0000 0000 0000", DNS_ANSWER_NOTIMP, "DNS ? ? -> NOTIMP"},
    {"QDCOUNT 0 FORMERR", "1234 0100 0000 0000 0000 0000", "1234 8181 0000 0000 0000 0000",
     DNS_ANSWER_FORMERR, "DNS ? ? -> FORMERR"},
    {"QDCOUNT 2 FORMERR, first question echoed",
     "1234 0100 0002 0000 0000 0000 01 61 03 636f6d 00 0001 0001 01 62 03 636f6d 00 0001 0001",
     "1234 8181 0001 0000 0000 0000 01 61 03 636f6d 00 0001 0001", DNS_ANSWER_FORMERR,
     "DNS A a.com -> FORMERR"},
    {"compression pointer in question", QHDR "c00c 0001 0001", "1234 8181 0000 0000 0000 0000",
     DNS_ANSWER_FORMERR, "DNS ? ? -> FORMERR"},
    {"pointer after a label", QHDR "01 61 c00c 0001 0001", "1234 8181 0000 0000 0000 0000",
     DNS_ANSWER_FORMERR, "DNS ? ? -> FORMERR"},
    {"label length 0x40", QHDR "40 61 00 0001 0001", "1234 8181 0000 0000 0000 0000",
     DNS_ANSWER_FORMERR, "DNS ? ? -> FORMERR"},
    {"label length 0x80", QHDR "80 61 00 0001 0001", "1234 8181 0000 0000 0000 0000",
     DNS_ANSWER_FORMERR, "DNS ? ? -> FORMERR"},
    {"truncated header 5 bytes", "1234 0100 00", NULL, DNS_ANSWER_NONE, NULL},
    {"truncated header 11 bytes", "1234 0100 0001 0000 0000 00", NULL, DNS_ANSWER_NONE, NULL},
    {"empty datagram", "", NULL, DNS_ANSWER_NONE, NULL},
    {"header only", QHDR, "1234 8181 0000 0000 0000 0000", DNS_ANSWER_FORMERR,
     "DNS ? ? -> FORMERR"},
    {"name without QTYPE", QHDR EX, "1234 8181 0000 0000 0000 0000", DNS_ANSWER_FORMERR,
     "DNS ? ? -> FORMERR"},
    {"QTYPE without QCLASS", QHDR EX "0001", "1234 8181 0000 0000 0000 0000", DNS_ANSWER_FORMERR,
     "DNS ? ? -> FORMERR"},
    {"label past the end", QHDR "07 6578616d", "1234 8181 0000 0000 0000 0000", DNS_ANSWER_FORMERR,
     "DNS ? ? -> FORMERR"},
    {"ANCOUNT 1 FORMERR", "1234 0100 0001 0001 0000 0000" EX "0001 0001",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"NSCOUNT 1 FORMERR", "1234 0100 0001 0000 0001 0000" EX "0001 0001",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"QR=1 response ignored", "1234 8180 0001 0000 0000 0000" EX "0001 0001", NULL, DNS_ANSWER_NONE,
     NULL},
    {"QR=1 with opcode ignored", "1234 a000 0001 0000 0000 0000" EX "0001 0001", NULL,
     DNS_ANSWER_NONE, NULL},
    {"EDNS OPT answered with OPT", QHDR_AR1 EX "0001 0001" OPT_Q,
     "1234 8180 0001 0001 0000 0001" EX "0001 0001" RA OPT_A, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"EDNS DO bit echoed", QHDR_AR1 EX "0001 0001 00 0029 0200 00 00 8000 0000",
     "1234 8180 0001 0001 0000 0001" EX "0001 0001" RA "00 0029 04d0 00 00 8000 0000", DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"EDNS AAAA NODATA with OPT", QHDR_AR1 EX "001c 0001" OPT_Q,
     "1234 8180 0001 0000 0000 0001" EX "001c 0001" OPT_A, DNS_ANSWER_NODATA,
     "DNS AAAA example.com -> NODATA"},
    {"EDNS option (cookie) not echoed",
     QHDR_AR1 EX "0001 0001 00 0029 1000 00 00 0000 000c 000a 0008 0102030405060708",
     "1234 8180 0001 0001 0000 0001" EX "0001 0001" RA OPT_A, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"EDNS version 1 BADVERS", QHDR_AR1 EX "0001 0001 00 0029 1000 00 01 0000 0000",
     "1234 8180 0001 0000 0000 0001" EX "0001 0001 00 0029 04d0 01 00 0000 0000",
     DNS_ANSWER_BADVERS, "DNS A example.com -> BADVERS"},
    {"two OPT records FORMERR", "1234 0100 0001 0000 0000 0002" EX "0001 0001" OPT_Q OPT_Q,
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"OPT with a non-root owner FORMERR", QHDR_AR1 EX "0001 0001 01 61 00 0029 1000 0000 0000 0000",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"truncated OPT FORMERR", QHDR_AR1 EX "0001 0001 00 0029 1000 00",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"OPT RDLENGTH past the end FORMERR", QHDR_AR1 EX "0001 0001 00 0029 1000 0000 0000 0010 00",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"ARCOUNT 1 but nothing there FORMERR", QHDR_AR1 EX "0001 0001",
     "1234 8181 0001 0000 0000 0000" EX "0001 0001", DNS_ANSWER_FORMERR,
     "DNS A example.com -> FORMERR"},
    {"compressed non-OPT additional record skipped",
     QHDR_AR1 EX "0001 0001 c00c 00fa 00ff 00000000 0002 abcd",
     "1234 8180 0001 0001 0000 0000" EX "0001 0001" RA, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"trailing bytes after the question ignored", QHDR EX "0001 0001 deadbeef",
     "1234 8180 0001 0001 0000 0000" EX "0001 0001" RA, DNS_ANSWER_A,
     "DNS A example.com -> 10.199.1.100"},
    {"CHAOS class A answered, class kept in question",
     QHDR "07 76657273696f6e 04 62696e64 00 0001 0003",
     "1234 8180 0001 0001 0000 0000 07 76657273696f6e 04 62696e64 00 0001 0003" RA, DNS_ANSWER_A,
     "DNS A version.bind -> 10.199.1.100"},
    {"CHAOS TXT NODATA", QHDR "07 76657273696f6e 04 62696e64 00 0010 0003",
     "1234 8180 0001 0000 0000 0000 07 76657273696f6e 04 62696e64 00 0010 0003", DNS_ANSWER_NODATA,
     "DNS TXT version.bind -> NODATA"},
    {"root name", QHDR "00 0001 0001", "1234 8180 0001 0001 0000 0000 00 0001 0001" RA,
     DNS_ANSWER_A, "DNS A . -> 10.199.1.100"},
    {"root NS NODATA", QHDR "00 0002 0001", "1234 8180 0001 0000 0000 0000 00 0002 0001",
     DNS_ANSWER_NODATA, "DNS NS . -> NODATA"},
    {"uppercase preserved", QHDR "03 415049 06 476974487562 03 636f6d 00 0001 0001",
     "1234 8180 0001 0001 0000 0000 03 415049 06 476974487562 03 636f6d 00 0001 0001" RA,
     DNS_ANSWER_A, "DNS A API.GitHub.com -> 10.199.1.100"},
    {"odd bytes escaped", QHDR "03 612062 03 782e79 01 5c 03 00ff7f 00 0001 0001",
     "1234 8180 0001 0001 0000 0000 03 612062 03 782e79 01 5c 03 00ff7f 00 0001 0001" RA,
     DNS_ANSWER_A, "DNS A a\\032b.x\\046y.\\092.\\000\\255\\127 -> 10.199.1.100"},
    {"forged log line escaped", QHDR "0f 78202d3e20312e322e332e340a444e 00 0001 0001",
     "1234 8180 0001 0001 0000 0000 0f 78202d3e20312e322e332e340a444e 00 0001 0001" RA,
     DNS_ANSWER_A, "DNS A x\\032->\\0321\\0462\\0463\\0464\\010DN -> 10.199.1.100"},
    {"id and type 65535", "ffff 0100 0001 0000 0000 0000 01 61 00 ffff 0001",
     "ffff 8180 0001 0000 0000 0000 01 61 00 ffff 0001", DNS_ANSWER_NODATA,
     "DNS TYPE65535 a -> NODATA"},
};

static void run_case(const codec_case_t *c)
{
    uint8_t q[8192];
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    char line[DNS_CODEC_LOG_LINE_MAX];
    dns_answer_info_t info;
    size_t qlen = hex(c->query, q, sizeof(q));
    int n;
    int l;

    n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    if (c->answer == NULL) {
        if (n != 0)
            fail_msg("%s: expected no answer, got %d bytes", c->name, n);
    } else {
        if (n <= 0)
            fail_msg("%s: expected an answer, got %d", c->name, n);
        assert_bytes(out, (size_t)n, c->answer);
    }
    if (info.kind != c->kind)
        fail_msg("%s: kind %d, want %d", c->name, info.kind, c->kind);
    l = log_line(&info, proxy_ip, line, sizeof(line));
    if (c->log == NULL) {
        assert_int_equal(l, 0);
    } else {
        assert_true(l > 0);
        if (strcmp(line, c->log) != 0 || (size_t)l != strlen(c->log))
            fail_msg("%s: log\n got  '%s'\n want '%s'", c->name, line, c->log);
    }
    /* the same answer without info */
    assert_int_equal(dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), NULL), n);
}

static void test_dns_codec_table(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
}

/* Builds a query for a name of nlabels labels of llen 'a' bytes each. */
static size_t build_long_name_query(uint8_t *q, size_t nlabels, size_t llen, size_t last_len)
{
    size_t n = hex(QHDR, q, 12);
    size_t i;

    for (i = 0; i < nlabels; i++) {
        size_t l = i + 1 == nlabels ? last_len : llen;

        q[n++] = (uint8_t)l;
        memset(q + n, 'a', l);
        n += l;
    }
    q[n++] = 0;
    n += hex("0001 0001", q + n, 4);
    return n;
}

static void test_dns_codec_name_limits(void **state)
{
    uint8_t q[600];
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    char line[DNS_CODEC_LOG_LINE_MAX];
    dns_answer_info_t info;
    size_t qlen;
    int n;

    (void)state;
    /* 3 * (1 + 63) + (1 + 62) + 1 = 256: one byte too long */
    qlen = build_long_name_query(q, 4, 63, 62);
    n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    assert_int_equal(n, 12);
    assert_int_equal(info.kind, DNS_ANSWER_FORMERR);
    assert_int_equal(info.name_known, 0);
    /* 3 * 64 + 62 + 1 = 255: the longest legal name, answered in full */
    qlen = build_long_name_query(q, 4, 63, 61);
    n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    assert_int_equal(info.kind, DNS_ANSWER_A);
    assert_int_equal(n, 12 + 255 + 4 + 16);
    assert_memory_equal(out + 12, q + 12, 259);
    assert_int_equal(info.name_len, 253);
    /* label of 64 bytes: reserved length byte 0x40 */
    qlen = build_long_name_query(q, 1, 64, 64);
    n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    assert_int_equal(info.kind, DNS_ANSWER_FORMERR);
    assert_int_equal(n, 12);

    /* the worst case for the printable name: 127 one-byte labels of 0xff */
    {
        size_t i;

        qlen = hex(QHDR, q, 12);
        for (i = 0; i < 127; i++) {
            q[qlen++] = 1;
            q[qlen++] = 0xff;
        }
        q[qlen++] = 0;
        qlen += hex("0001 0001", q + qlen, 4);
        n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
        assert_int_equal(info.kind, DNS_ANSWER_A);
        assert_int_equal(info.name_len, 127 * 4 + 126);
        assert_int_equal(strlen(info.name), info.name_len);
        assert_true(log_line(&info, proxy_ip, line, sizeof(line)) > 0);
    }
    /* a single 63-byte label of 0xff and more labels: still within the cap */
    {
        size_t i;

        qlen = hex(QHDR, q, 12);
        for (i = 0; i < 3; i++) {
            q[qlen++] = 63;
            memset(q + qlen, 0x01, 63);
            qlen += 63;
        }
        q[qlen++] = 61;
        memset(q + qlen, 0x01, 61);
        qlen += 61;
        q[qlen++] = 0;
        qlen += hex("0001 0001", q + qlen, 4);
        n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
        assert_int_equal(info.kind, DNS_ANSWER_A);
        assert_int_equal(info.name_len, 250 * 4 + 3);
        assert_true(info.name_len < DNS_CODEC_NAME_TEXT_MAX);
    }
}

/* A query padded with an EDNS padding option (RFC 7830) to exactly total bytes. */
static size_t build_padded_query(uint8_t *q, size_t total)
{
    size_t n = hex(QHDR_AR1 EX "0001 0001 00 0029 1000 00 00 0000", q, 64);
    size_t pad = total - n - 2 - 4;

    q[n++] = (uint8_t)((pad + 4) >> 8);
    q[n++] = (uint8_t)(pad + 4);
    q[n++] = 0;
    q[n++] = 12; /* option code: padding */
    q[n++] = (uint8_t)(pad >> 8);
    q[n++] = (uint8_t)pad;
    memset(q + n, 0, pad);
    return n + pad;
}

static void test_dns_codec_big_datagrams(void **state)
{
    static uint8_t q[65536];
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    dns_answer_info_t info;
    size_t sizes[] = {512, 4096, 65535};
    size_t i;
    int n;

    (void)state;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t qlen = build_padded_query(q, sizes[i]);

        assert_int_equal(qlen, sizes[i]);
        n = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
        assert_int_equal(info.kind, DNS_ANSWER_A);
        assert_bytes(out, (size_t)n, "1234 8180 0001 0001 0000 0001" EX "0001 0001" RA OPT_A);
        /* one byte short: the padding option runs past the end */
        n = dns_codec_answer(q, qlen - 1, proxy_ip, out, sizeof(out), &info);
        assert_int_equal(info.kind, DNS_ANSWER_FORMERR);
    }
    /* a 4096-byte datagram of trailing garbage after a plain query */
    {
        size_t qlen = hex(QHDR EX "0001 0001", q, 64);

        memset(q + qlen, 0xc0, 4096 - qlen);
        n = dns_codec_answer(q, 4096, proxy_ip, out, sizeof(out), &info);
        assert_int_equal(info.kind, DNS_ANSWER_A);
        assert_int_equal(n, (int)(qlen + 16));
    }
}

static void test_dns_codec_small_buffers(void **state)
{
    uint8_t q[128];
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    char line[DNS_CODEC_LOG_LINE_MAX];
    dns_answer_info_t info;
    size_t qlen = hex(QHDR_AR1 EX "0001 0001" OPT_Q, q, sizeof(q));
    int full;
    int n;

    (void)state;
    full = dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    assert_int_equal(full, 12 + 17 + 16 + 11);
    n = dns_codec_answer(q, qlen, proxy_ip, out, (size_t)full - 1, &info);
    assert_int_equal(n, PX_ETOOBIG);
    n = dns_codec_answer(q, qlen, proxy_ip, out, (size_t)full, &info);
    assert_int_equal(n, full);
    n = dns_codec_answer(q, qlen, proxy_ip, out, 0, NULL);
    assert_int_equal(n, PX_ETOOBIG);
    /* FORMERR header needs 12 bytes */
    qlen = hex("1234 0100 0000 0000 0000 0000", q, sizeof(q));
    assert_int_equal(dns_codec_answer(q, qlen, proxy_ip, out, 11, NULL), PX_ETOOBIG);
    assert_int_equal(dns_codec_answer(q, qlen, proxy_ip, out, 12, NULL), 12);
    assert_int_equal(dns_codec_answer(NULL, 0, proxy_ip, out, sizeof(out), &info), 0);

    qlen = hex(QHDR EX "0001 0001", q, sizeof(q));
    dns_codec_answer(q, qlen, proxy_ip, out, sizeof(out), &info);
    n = log_line(&info, proxy_ip, line, sizeof(line));
    assert_string_equal(line, "DNS A example.com -> 10.199.1.100");
    assert_int_equal(n, (int)strlen(line));
}

static void test_dns_codec_type_names(void **state)
{
    static const struct {
        uint16_t type;
        const char *name;
    } t[] = {
        {1, "A"},
        {2, "NS"},
        {5, "CNAME"},
        {6, "SOA"},
        {12, "PTR"},
        {15, "MX"},
        {16, "TXT"},
        {28, "AAAA"},
        {33, "SRV"},
        {64, "SVCB"},
        {65, "HTTPS"},
        {255, "ANY"},
        {257, "CAA"},
        {0, "TYPE0"},
        {41, "TYPE41"},
        {252, "TYPE252"},
        {65535, "TYPE65535"},
    };
    char buf[DNS_CODEC_TYPE_TEXT_MAX];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        size_t n = dns_codec_type_text(t[i].type, buf);

        assert_string_equal(buf, t[i].name);
        assert_int_equal(n, strlen(t[i].name));
    }
}

/* Every prefix of a valid query: never a crash, never an answer longer than the cap, and
 * an answer only when the header is complete. */
static void test_dns_codec_prefixes(void **state)
{
    uint8_t q[128];
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    dns_answer_info_t info;
    size_t qlen = hex(QHDR_AR1 EX "0001 0001" OPT_Q, q, sizeof(q));
    size_t i;

    (void)state;
    for (i = 0; i <= qlen; i++) {
        int n = dns_codec_answer(q, i, proxy_ip, out, sizeof(out), &info);

        assert_true(n >= 0 && n <= DNS_CODEC_ANSWER_MAX);
        if (i < 12)
            assert_int_equal(n, 0);
        else if (i < qlen)
            assert_int_equal(info.kind, DNS_ANSWER_FORMERR);
        else
            assert_int_equal(info.kind, DNS_ANSWER_A);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dns_codec_table),
        cmocka_unit_test(test_dns_codec_name_limits),
        cmocka_unit_test(test_dns_codec_big_datagrams),
        cmocka_unit_test(test_dns_codec_small_buffers),
        cmocka_unit_test(test_dns_codec_type_names),
        cmocka_unit_test(test_dns_codec_prefixes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
