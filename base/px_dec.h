/* An unsigned number in decimal without printf, for the paths that write one per request or
 * per query (the audit event, the JSON event's entry, a DNS answer's text): printf's machinery
 * was a third of an event's cost. */
#ifndef PX_DEC_H
#define PX_DEC_H

/* The most digits px_dec writes (UINT64_MAX has 20). */
#define PX_DEC_MAX 20

/* Writes v's digits backwards so that they end just before end (at most PX_DEC_MAX bytes
 * before it) and returns where they start. */
static inline char *px_dec(char *end, unsigned long long v)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    return p;
}

#endif
