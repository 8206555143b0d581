/* libFuzzer target for dns_codec: arbitrary datagrams must give either no answer or a
 * well-formed answer within the cap, a printable name and a one-line log entry. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "dns/dns_codec.h"
#include "base/px_err.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

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

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

/* Independent walk over our answer: header, at most one uncompressed question, at most one
 * A record (pointer to the question), at most one OPT; the sections end exactly at n. */
static void check_answer(const uint8_t *q, size_t qlen, const uint8_t *a, size_t n,
                         const dns_answer_info_t *info)
{
    size_t off = DNS_CODEC_HEADER_LEN;
    uint16_t qd;
    uint16_t an;
    uint16_t ar;

    CHECK(n >= DNS_CODEC_HEADER_LEN && n <= DNS_CODEC_ANSWER_MAX);
    CHECK(qlen >= DNS_CODEC_HEADER_LEN);
    CHECK(memcmp(a, q, 2) == 0);           /* ID echoed */
    CHECK(a[2] & 0x80);                    /* QR */
    CHECK((a[2] & 0x78) == (q[2] & 0x78)); /* opcode echoed */
    CHECK((a[2] & 0x01) == (q[2] & 0x01)); /* RD echoed */
    CHECK((a[2] & 0x06) == 0);             /* AA, TC clear */
    qd = rd16(a + 4);
    an = rd16(a + 6);
    ar = rd16(a + 10);
    CHECK(qd <= 1 && an <= 1 && rd16(a + 8) == 0 && ar <= 1);
    if (qd == 1) {
        size_t wire = 0;

        for (;;) {
            CHECK(off < n);
            CHECK(a[off] <= 63);
            wire += 1u + a[off];
            CHECK(wire <= DNS_CODEC_NAME_WIRE_MAX);
            if (a[off] == 0)
                break;
            off += 1u + a[off];
        }
        off += 1 + 4;
        CHECK(off <= n);
        CHECK(memcmp(a + 12, q + 12, off - 12) == 0); /* question copied byte for byte */
    }
    if (an == 1) {
        static const uint8_t head[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4};

        CHECK(qd == 1 && (a[3] & 0x0f) == 0);
        CHECK(off + 16 <= n && memcmp(a + off, head, sizeof(head)) == 0);
        off += 16;
        CHECK(info->kind == DNS_ANSWER_A);
    }
    if (ar == 1) {
        CHECK(off + 11 <= n && a[off] == 0 && rd16(a + off + 1) == DNS_TYPE_OPT);
        off += 11;
    }
    CHECK(off == n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t ip[4] = {10, 199, 1, 100};
    uint8_t out[DNS_CODEC_ANSWER_MAX];
    uint8_t small[DNS_CODEC_ANSWER_MAX];
    char line[DNS_CODEC_LOG_LINE_MAX];
    dns_answer_info_t info;
    size_t i;
    int n;
    int m;
    int l;

    n = dns_codec_answer(data, size, ip, out, sizeof(out), &info);
    CHECK(n >= 0 && n <= DNS_CODEC_ANSWER_MAX);
    if (size < DNS_CODEC_HEADER_LEN || (data[2] & 0x80))
        CHECK(n == 0);
    CHECK((n == 0) == (info.kind == DNS_ANSWER_NONE));
    if (n > 0)
        check_answer(data, size, out, (size_t)n, &info);

    CHECK(info.name_len < DNS_CODEC_NAME_TEXT_MAX && strlen(info.name) == info.name_len);
    for (i = 0; i < info.name_len; i++)
        CHECK(info.name[i] > 0x20 && info.name[i] < 0x7f);
    l = log_line(&info, ip, line, sizeof(line));
    CHECK(l >= 0 && l < DNS_CODEC_LOG_LINE_MAX);
    CHECK((l == 0) == (n == 0));
    CHECK(strlen(line) == (size_t)l || l == 0);
    if (l > 0) {
        CHECK(memcmp(line, "DNS ", 4) == 0);
        CHECK(strchr(line, '\n') == NULL && strchr(line, '\r') == NULL);
        CHECK(strstr(line, " -> ") != NULL);
    }

    /* a smaller output buffer gives the same answer or PX_ETOOBIG, never a partial one */
    if (size > 0 && n > 0) {
        size_t cap = data[size - 1] % (size_t)(n + 1);

        m = dns_codec_answer(data, size, ip, small, cap, NULL);
        if ((size_t)n <= cap)
            CHECK(m == n && memcmp(small, out, (size_t)n) == 0);
        else
            CHECK(m == PX_ETOOBIG);
    }
    return 0;
}
