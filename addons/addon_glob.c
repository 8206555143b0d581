#include "addons/addon_glob.h"

#include <stdint.h>
#include <string.h>

/* What an invalid UTF-8 sequence decodes to, as with Python's errors="replace". */
#define ADDON__GLOB_REPLACEMENT 0xFFFDu

/* Marks "no '*' seen yet" for the backtracking matcher. */
#define ADDON__GLOB_NO_STAR SIZE_MAX

static uint32_t glob_fold(uint32_t c, int icase)
{
    if (icase && c >= 'A' && c <= 'Z')
        return c + ('a' - 'A');
    return c;
}

/* Decodes the code point at s[*i] (*i < len) and advances *i past it. An ill-formed sequence
 * yields U+FFFD and consumes its maximal subpart (at least one byte, never an ASCII byte that
 * follows), which is how Python's UTF-8 decoder counts replacement characters. */
static uint32_t glob_next(const unsigned char *s, size_t len, size_t *i)
{
    unsigned c = s[*i];
    if (c < 0x80) {
        (*i)++;
        return c;
    }
    size_t need;
    uint32_t cp;
    unsigned lo = 0x80;
    unsigned hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        (*i)++;
        return ADDON__GLOB_REPLACEMENT;
    }
    size_t j = *i + 1;
    for (size_t k = 0; k < need; k++) {
        if (j >= len || s[j] < lo || s[j] > hi) {
            *i = j;
            return ADDON__GLOB_REPLACEMENT;
        }
        cp = (cp << 6) | (s[j] & 0x3F);
        j++;
        lo = 0x80;
        hi = 0xBF;
    }
    *i = j;
    return cp;
}

/* Index of the ']' closing the class whose '[' is at p[open], or 0 when it is unclosed (then
 * the '[' is literal). Same scan as fnmatch.translate: a leading '!' and then a leading ']'
 * belong to the class. */
static size_t glob_class_end(const unsigned char *p, size_t plen, size_t open)
{
    size_t j = open + 1;
    if (j < plen && p[j] == '!')
        j++;
    if (j < plen && p[j] == ']')
        j++;
    while (j < plen && p[j] != ']')
        j++;
    return j < plen ? j : 0;
}

/* 1 when c is in the class body p[start..end). Follows fnmatch.translate: the first member is
 * never a range operator; a '-' between two members makes a range; the member right after a
 * range's upper bound is not a range operator either; a '-' at the end is literal; a range
 * whose bounds are reversed is dropped with both bounds. A negated class that ends up empty
 * matches any character; a plain one that ends up empty matches nothing. */
static int glob_class_has(const unsigned char *p, size_t start, size_t end, uint32_t c, int icase)
{
    size_t i = start;
    int neg = 0;
    if (i < end && p[i] == '!') {
        neg = 1;
        i++;
    }
    int hit = 0;
    int have_prev = 0;
    uint32_t prev = 0;
    int no_range = 1; /* members still to read before a '-' may be a range operator */
    while (i < end) {
        uint32_t x = glob_fold(glob_next(p, end, &i), icase);
        if (x == '-' && no_range == 0 && i < end && have_prev) {
            uint32_t upper = glob_fold(glob_next(p, end, &i), icase);
            if (prev <= upper && c >= prev && c <= upper)
                hit = 1;
            have_prev = 0;
            no_range = 1;
            continue;
        }
        if (have_prev && prev == c)
            hit = 1;
        prev = x;
        have_prev = 1;
        if (no_range > 0)
            no_range--;
    }
    if (have_prev && prev == c)
        hit = 1;
    return neg ? !hit : hit;
}

/* Tries the single-character pattern element at p[pi] (anything but '*') against c. On a match
 * returns 1 and sets *pnext to the element's end. */
static int glob_elem(const unsigned char *p, size_t plen, size_t pi, uint32_t c, int icase,
                     size_t *pnext)
{
    if (p[pi] == '?') {
        *pnext = pi + 1;
        return 1;
    }
    if (p[pi] == '[') {
        size_t close = glob_class_end(p, plen, pi);
        if (close != 0) {
            *pnext = close + 1;
            return glob_class_has(p, pi + 1, close, c, icase);
        }
        *pnext = pi + 1;
        return c == '[';
    }
    size_t j = pi;
    uint32_t lit = glob_fold(glob_next(p, plen, &j), icase);
    *pnext = j;
    return lit == c;
}

/* The next subject code point, folded; ASCII without a call. */
static inline uint32_t glob_subject(const unsigned char *s, size_t slen, size_t *i, int icase)
{
    if (s[*i] < 0x80) {
        uint32_t c = s[*i];
        (*i)++;
        return glob_fold(c, icase);
    }
    return glob_fold(glob_next(s, slen, i), icase);
}

/* The classic two-pointer wildcard matcher: every element other than '*' consumes exactly one
 * code point, so on a mismatch it is enough to let the most recent '*' absorb one more code
 * point and retry from just after it. Earlier stars never need revisiting, which bounds the
 * work by plen * slen. */
static int glob_run(const unsigned char *p, size_t plen, const unsigned char *s, size_t slen,
                    int icase)
{
    size_t pi = 0;
    size_t si = 0;
    size_t star_p = ADDON__GLOB_NO_STAR;
    size_t star_s = 0;
    while (si < slen) {
        if (pi < plen && p[pi] == '*') {
            while (pi < plen && p[pi] == '*')
                pi++;
            if (pi == plen)
                return 1;
            star_p = pi;
            star_s = si;
            continue;
        }
        if (pi < plen) {
            size_t snext = si;
            uint32_t c = glob_subject(s, slen, &snext, icase);
            size_t pnext;
            int ok;
            if (p[pi] < 0x80 && p[pi] != '?' && p[pi] != '[') {
                ok = glob_fold(p[pi], icase) == c;
                pnext = pi + 1;
            } else {
                ok = glob_elem(p, plen, pi, c, icase, &pnext);
            }
            if (ok) {
                pi = pnext;
                si = snext;
                continue;
            }
        }
        if (star_p == ADDON__GLOB_NO_STAR)
            return 0;
        (void)glob_subject(s, slen, &star_s, icase);
        pi = star_p;
        si = star_s;
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/* Most patterns end in a literal ASCII tail after their last '*' ("*.github.com"): compare it
 * with the end of the subject first and match the rest against what precedes it. An ASCII byte
 * is always a character of its own in the subject, so splitting there changes nothing. A tail
 * without ']' also proves that the '*' is not inside a class such as "[*]". */
static int glob_match(const unsigned char *p, size_t plen, const unsigned char *s, size_t slen,
                      int icase)
{
    size_t star = plen;
    while (star > 0 && p[star - 1] != '*')
        star--;
    if (star == 0)
        return glob_run(p, plen, s, slen, icase);
    size_t tail = plen - star;
    for (size_t i = star; i < plen; i++) {
        if (p[i] >= 0x80 || p[i] == '?' || p[i] == '[' || p[i] == ']')
            return glob_run(p, plen, s, slen, icase);
    }
    if (tail > slen)
        return 0;
    for (size_t i = 0; i < tail; i++) {
        if (glob_fold(p[star + i], icase) != glob_fold(s[slen - tail + i], icase))
            return 0;
    }
    return glob_run(p, star, s, slen - tail, icase);
}

static int glob_equal_icase(const unsigned char *a, const unsigned char *b, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (glob_fold(a[i], 1) != glob_fold(b[i], 1))
            return 0;
    }
    return 1;
}

int addon_glob_is_glob(const char *pat, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (pat[i] == '*' || pat[i] == '?')
            return 1;
    }
    return 0;
}

int addon_glob_match(const char *pat, size_t plen, const char *s, size_t slen)
{
    if (!addon_glob_is_glob(pat, plen))
        return plen == slen && (plen == 0 || memcmp(pat, s, plen) == 0);
    return glob_match((const unsigned char *)pat, plen, (const unsigned char *)s, slen, 0);
}

int addon_glob_match_icase(const char *pat, size_t plen, const char *s, size_t slen)
{
    if (!addon_glob_is_glob(pat, plen)) {
        return plen == slen &&
               glob_equal_icase((const unsigned char *)pat, (const unsigned char *)s, plen);
    }
    return glob_match((const unsigned char *)pat, plen, (const unsigned char *)s, slen, 1);
}

int addon_glob_fnmatch(const char *pat, size_t plen, const char *s, size_t slen, int icase)
{
    return glob_match((const unsigned char *)pat, plen, (const unsigned char *)s, slen, icase != 0);
}
