/* Test helpers for tests/signing: files, a small JSON reader, request-text parsing, and
 * running one cmocka test per vector case. Everything is static: each test_*.c includes it. */
#ifndef SIG_TEST_UTIL_H
#define SIG_TEST_UTIL_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "signing/sig.h"

#define TU_FN static __attribute__((unused))
/* The AWS SigV4/SigV4A vectors, in the repository (vectors/README.md: source, license). */
#define VEC_DIR AIRLOCK_TEST_DIR "/signing/vectors"
#define TU_MAX_HEADERS 64

/* ---------------------------------------------------------------- files */

/* Reads a whole file, NUL-terminated; NULL when missing. *len excludes the NUL. */
TU_FN char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0;
    size_t n = 0;

    if (f == NULL) {
        return NULL;
    }
    for (;;) {
        size_t got;

        if (cap - n < 4096) {
            cap = cap == 0 ? 8192 : cap * 2;
            buf = realloc(buf, cap + 1);
            assert_non_null(buf);
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            break;
        }
    }
    fclose(f);
    buf[n] = '\0';
    if (len != NULL) {
        *len = n;
    }
    return buf;
}

/* Reads path built with printf-style arguments; fails the test when missing. */
TU_FN char *tu_read(size_t *len, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
TU_FN char *tu_read(size_t *len, const char *fmt, ...)
{
    char path[1024];
    va_list ap;
    char *s;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    s = tu_read_file(path, len);
    if (s == NULL) {
        fail_msg("cannot read %s", path);
    }
    return s;
}

TU_FN int tu_exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
TU_FN int tu_exists(const char *fmt, ...)
{
    char path[1024];
    va_list ap;
    FILE *f;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    f = fopen(path, "rb");
    if (f != NULL) {
        fclose(f);
    }
    return f != NULL;
}

TU_FN int tu_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the sub-directories of dir (malloc'd array of malloc'd strings). */
TU_FN size_t tu_list_dirs(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;

    *out = NULL;
    if (d == NULL) {
        return 0;
    }
    while ((e = readdir(d)) != NULL) {
        char path[1024];
        DIR *sub;

        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        sub = opendir(path);
        if (sub == NULL) {
            continue;
        }
        closedir(sub);
        names = realloc(names, (n + 1) * sizeof(*names));
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), tu_cmp_names);
    *out = names;
    return n;
}

/* Strips one trailing "\n" (files that end with a newline that is not part of the value). */
TU_FN void tu_chomp(char *s)
{
    size_t n = strlen(s);

    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r')) {
        s[--n] = '\0';
    }
}

/* Replaces the two-character escapes "\r" and "\n" (JSON "wire" strings) by real bytes. */
TU_FN size_t tu_unescape_crlf(char *s)
{
    size_t r = 0;
    size_t w = 0;

    while (s[r] != '\0') {
        if (s[r] == '\\' && s[r + 1] == 'r') {
            s[w++] = '\r';
            r += 2;
        } else if (s[r] == '\\' && s[r + 1] == 'n') {
            s[w++] = '\n';
            r += 2;
        } else {
            s[w++] = s[r++];
        }
    }
    s[w] = '\0';
    return w;
}

/* ---------------------------------------------------------------- JSON */

enum { TJ_NULL, TJ_BOOL, TJ_NUM, TJ_STR, TJ_ARR, TJ_OBJ };

typedef struct tj {
    int type;
    char *str; /* TJ_STR: NUL-terminated (may hold NULs: see len) */
    size_t len;
    double num;
    int b;
    size_t n;    /* TJ_ARR / TJ_OBJ */
    char **keys; /* TJ_OBJ */
    struct tj **items;
} tj_t;

TU_FN void tj_free(tj_t *v)
{
    size_t i;

    if (v == NULL) {
        return;
    }
    for (i = 0; i < v->n; i++) {
        tj_free(v->items[i]);
        if (v->keys != NULL) {
            free(v->keys[i]);
        }
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

TU_FN void tj_ws(const char **p)
{
    while (**p == ' ' || **p == '\n' || **p == '\r' || **p == '\t') {
        (*p)++;
    }
}

TU_FN void tj_put_utf8(char *out, size_t *n, unsigned long cp)
{
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xc0 | (cp >> 6));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xe0 | (cp >> 12));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | (cp >> 18));
        out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

TU_FN char *tj_parse_string(const char **p, size_t *len)
{
    const char *s = *p + 1;
    size_t cap = 16;
    size_t n = 0;
    char *out = malloc(cap);

    while (*s != '"') {
        if (*s == '\0') {
            free(out);
            return NULL;
        }
        if (n + 8 > cap) {
            cap *= 2;
            out = realloc(out, cap);
        }
        if (*s != '\\') {
            out[n++] = *s++;
            continue;
        }
        s++;
        switch (*s) {
        case 'n':
            out[n++] = '\n';
            break;
        case 'r':
            out[n++] = '\r';
            break;
        case 't':
            out[n++] = '\t';
            break;
        case 'b':
            out[n++] = '\b';
            break;
        case 'f':
            out[n++] = '\f';
            break;
        case 'u': {
            unsigned long cp = strtoul((char[5]){s[1], s[2], s[3], s[4], 0}, NULL, 16);

            s += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && s[1] == '\\' && s[2] == 'u') {
                unsigned long lo = strtoul((char[5]){s[3], s[4], s[5], s[6], 0}, NULL, 16);

                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                s += 6;
            }
            tj_put_utf8(out, &n, cp);
            break;
        }
        default:
            out[n++] = *s;
            break;
        }
        s++;
    }
    out[n] = '\0';
    *len = n;
    *p = s + 1;
    return out;
}

TU_FN tj_t *tj_parse_value(const char **p);

TU_FN tj_t *tj_parse_container(const char **p, int obj)
{
    tj_t *v = calloc(1, sizeof(*v));

    v->type = obj ? TJ_OBJ : TJ_ARR;
    (*p)++;
    tj_ws(p);
    if (**p == (obj ? '}' : ']')) {
        (*p)++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        size_t klen;
        tj_t *item;

        tj_ws(p);
        if (obj) {
            if (**p != '"' || (key = tj_parse_string(p, &klen)) == NULL) {
                tj_free(v);
                return NULL;
            }
            tj_ws(p);
            if (**p != ':') {
                free(key);
                tj_free(v);
                return NULL;
            }
            (*p)++;
        }
        item = tj_parse_value(p);
        if (item == NULL) {
            free(key);
            tj_free(v);
            return NULL;
        }
        v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
        if (obj) {
            v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
            v->keys[v->n] = key;
        }
        v->items[v->n++] = item;
        tj_ws(p);
        if (**p == ',') {
            (*p)++;
            continue;
        }
        if (**p == (obj ? '}' : ']')) {
            (*p)++;
            return v;
        }
        tj_free(v);
        return NULL;
    }
}

TU_FN tj_t *tj_parse_value(const char **p)
{
    tj_t *v;

    tj_ws(p);
    if (**p == '{' || **p == '[') {
        return tj_parse_container(p, **p == '{');
    }
    v = calloc(1, sizeof(*v));
    if (**p == '"') {
        v->type = TJ_STR;
        v->str = tj_parse_string(p, &v->len);
        if (v->str == NULL) {
            free(v);
            return NULL;
        }
    } else if (strncmp(*p, "true", 4) == 0 || strncmp(*p, "false", 5) == 0) {
        v->type = TJ_BOOL;
        v->b = **p == 't';
        *p += v->b ? 4 : 5;
    } else if (strncmp(*p, "null", 4) == 0) {
        v->type = TJ_NULL;
        *p += 4;
    } else {
        char *end;

        v->type = TJ_NUM;
        v->num = strtod(*p, &end);
        if (end == *p) {
            free(v);
            return NULL;
        }
        *p = end;
    }
    return v;
}

/* Parses a JSON document; fails the test on malformed input. */
TU_FN tj_t *tj_parse(const char *text)
{
    const char *p = text;
    tj_t *v = tj_parse_value(&p);

    assert_non_null(v);
    return v;
}

TU_FN tj_t *tj_get(const tj_t *obj, const char *key)
{
    size_t i;

    if (obj == NULL || obj->type != TJ_OBJ) {
        return NULL;
    }
    for (i = 0; i < obj->n; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            return obj->items[i];
        }
    }
    return NULL;
}

/* String member key of obj; fails the test when it is missing or not a string. */
TU_FN const char *tj_str(const tj_t *obj, const char *key)
{
    tj_t *v = tj_get(obj, key);

    if (v == NULL || v->type != TJ_STR) {
        fail_msg("JSON member %s missing", key);
    }
    return v->str;
}

TU_FN int tj_bool(const tj_t *obj, const char *key)
{
    tj_t *v = tj_get(obj, key);

    return v != NULL && v->type == TJ_BOOL && v->b;
}

/* ---------------------------------------------------------------- requests */

/* A request read from a vector's request text (views into the caller's buffer, which is
 * modified in place: header values of folded lines keep their "\n" separators). */
typedef struct tu_req {
    sig_str_t method;
    sig_str_t target;
    sig_header_t headers[TU_MAX_HEADERS];
    size_t nheaders;
    sig_str_t body;
} tu_req_t;

/* Parses "METHOD target [HTTP/1.1]\nName:Value\n[ continuation\n]...\n\nbody". */
TU_FN void tu_parse_request(char *text, size_t len, tu_req_t *r)
{
    char *p = text;
    char *end = text + len;
    char *eol = memchr(p, '\n', (size_t)(end - p));
    char *sp;
    char *ver;

    memset(r, 0, sizeof(*r));
    if (eol == NULL) {
        eol = end;
    }
    sp = memchr(p, ' ', (size_t)(eol - p));
    assert_non_null(sp);
    r->method.base = p;
    r->method.len = (size_t)(sp - p);
    r->target.base = sp + 1;
    r->target.len = (size_t)(eol - sp - 1);
    for (ver = eol; ver > sp + 1 && ver[-1] != ' '; ver--) {
    }
    if (ver > sp + 1 && (size_t)(eol - ver) >= 5 && memcmp(ver, "HTTP/", 5) == 0) {
        r->target.len = (size_t)(ver - 1 - (sp + 1));
    }
    p = eol < end ? eol + 1 : end;
    while (p < end && *p != '\n') {
        char *colon;
        sig_header_t *h;

        eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL) {
            eol = end;
        }
        if ((*p == ' ' || *p == '\t') && r->nheaders > 0) {
            /* folded line: extend the previous value over the "\n" that separates them */
            h = &r->headers[r->nheaders - 1];
            h->value.len = (size_t)(eol - h->value.base);
        } else {
            colon = memchr(p, ':', (size_t)(eol - p));
            assert_non_null(colon);
            assert_true(r->nheaders < TU_MAX_HEADERS);
            h = &r->headers[r->nheaders++];
            h->name.base = p;
            h->name.len = (size_t)(colon - p);
            h->value.base = colon + 1;
            h->value.len = (size_t)(eol - colon - 1);
        }
        p = eol < end ? eol + 1 : end;
    }
    if (p < end) {
        p++; /* the blank line */
    }
    r->body.base = p;
    r->body.len = (size_t)(end - p);
}

TU_FN int tu_ieq(sig_str_t s, const char *lower)
{
    size_t i;

    if (s.len != strlen(lower)) {
        return 0;
    }
    for (i = 0; i < s.len; i++) {
        char c = s.base[i];

        if (c >= 'A' && c <= 'Z') {
            c = (char)(c + 32);
        }
        if (c != lower[i]) {
            return 0;
        }
    }
    return 1;
}

/* Index of the first header named lower, or -1. */
TU_FN int tu_find(const tu_req_t *r, const char *lower)
{
    size_t i;

    for (i = 0; i < r->nheaders; i++) {
        if (tu_ieq(r->headers[i].name, lower)) {
            return (int)i;
        }
    }
    return -1;
}

/* Removes header idx (keeps the order of the others). */
TU_FN void tu_remove(tu_req_t *r, int idx)
{
    memmove(&r->headers[idx], &r->headers[idx + 1],
            (r->nheaders - (size_t)idx - 1) * sizeof(r->headers[0]));
    r->nheaders--;
}

/* Trims spaces around a view. */
TU_FN sig_str_t tu_trim(sig_str_t s)
{
    while (s.len > 0 && (s.base[0] == ' ' || s.base[0] == '\t')) {
        s.base++;
        s.len--;
    }
    while (s.len > 0 && (s.base[s.len - 1] == ' ' || s.base[s.len - 1] == '\t')) {
        s.len--;
    }
    return s;
}

TU_FN sig_str_t tu_s(const char *s)
{
    sig_str_t v = {s, strlen(s)};

    return v;
}

/* Equal byte ranges, with a readable failure message. */
#define assert_mem_str(base, len, expected)                                                        \
    do {                                                                                           \
        const char *_e = (expected);                                                               \
        size_t _el = strlen(_e);                                                                   \
        if ((len) != _el || memcmp((base), _e, _el) != 0) {                                        \
            fail_msg("mismatch:\n got: [%.*s]\nwant: [%s]", (int)(len), (const char *)(base), _e); \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------- dynamic test tables */

/* A growing list of cmocka tests whose state is a malloc'd case name. */
typedef struct tu_tests {
    struct CMUnitTest *t;
    size_t n;
} tu_tests_t;

TU_FN void tu_tests_add(tu_tests_t *ts, const char *name, CMUnitTestFunction fn, void *state)
{
    ts->t = realloc(ts->t, (ts->n + 1) * sizeof(*ts->t));
    memset(&ts->t[ts->n], 0, sizeof(ts->t[0]));
    ts->t[ts->n].name = strdup(name);
    ts->t[ts->n].test_func = fn;
    ts->t[ts->n].initial_state = state;
    ts->n++;
}

TU_FN int tu_tests_run(const char *group, tu_tests_t *ts)
{
    int rc = _cmocka_run_group_tests(group, ts->t, ts->n, NULL, NULL);
    size_t i;

    for (i = 0; i < ts->n; i++) {
        free((char *)ts->t[i].name);
    }
    free(ts->t);
    ts->t = NULL;
    ts->n = 0;
    return rc;
}

#endif
