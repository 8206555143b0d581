/* The document addon_yaml.c builds: its arena, the node accessors, the typed getters and the
 * "name:line:col: message" errors they return. No libyaml here; addon_yaml_int.h holds the
 * layouts the reader fills in. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_yaml_int.h"
#include "base/px_err.h"

#define ADDON__YAML_BLOCK_MIN (16 * 1024) /* arena block size */

/* Nodes, texts and child arrays live in one chain of blocks freed with the document. */
typedef struct addon__yaml_block {
    struct addon__yaml_block *next;
    size_t used;
    size_t cap;
    max_align_t data[];
} addon__yaml_block_t;

void *addon__yaml_alloc(addon_yaml_doc_t *doc, size_t size)
{
    size_t align = sizeof(max_align_t);
    size = (size + align - 1) / align * align;
    addon__yaml_block_t *b = doc->blocks;
    if (b == NULL || b->cap - b->used < size) {
        size_t cap = size > ADDON__YAML_BLOCK_MIN ? size : ADDON__YAML_BLOCK_MIN;
        b = malloc(sizeof(*b) + cap);
        if (b == NULL)
            return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = doc->blocks;
        doc->blocks = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p;
}

void addon__yaml_quote(const char *s, size_t len, char *out, size_t outlen)
{
    size_t o = 0;
    if (outlen < 8)
        return;
    out[o++] = '\'';
    for (size_t i = 0; i < len && i < ADDON__YAML_QUOTE_MAX && o + 6 < outlen; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\'') {
            out[o++] = (char)c;
        } else {
            int n = snprintf(out + o, outlen - o, "\\x%02x", c);
            if (n > 0)
                o += (size_t)n;
        }
    }
    if (len > ADDON__YAML_QUOTE_MAX && o + 5 < outlen) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '\'';
    out[o] = '\0';
}

void addon__yaml_vreport(char *err, size_t errlen, const char *name, unsigned line, unsigned col,
                         const char *fmt, va_list ap)
{
    if (err == NULL || errlen == 0)
        return;
    int n = snprintf(err, errlen, "%s:%u:%u: ", name, line, col);
    if (n >= 0 && (size_t)n < errlen)
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

static void yaml_free(addon_yaml_doc_t *doc, int wipe)
{
    if (doc == NULL)
        return;
    addon__yaml_block_t *b = doc->blocks;
    while (b != NULL) {
        addon__yaml_block_t *next = b->next;
        if (wipe)
            explicit_bzero(b->data, b->used);
        free(b);
        b = next;
    }
    free(doc->name);
    free(doc);
}

void addon_yaml_free(addon_yaml_doc_t *doc)
{
    yaml_free(doc, 0);
}

void addon_yaml_free_wipe(addon_yaml_doc_t *doc)
{
    yaml_free(doc, 1);
}

const char *addon_yaml_name(const addon_yaml_doc_t *doc)
{
    return doc->name;
}

const addon_yaml_node_t *addon_yaml_root(const addon_yaml_doc_t *doc)
{
    return doc->root;
}

addon_yaml_type_t addon_yaml_type(const addon_yaml_node_t *n)
{
    return n->type;
}

const char *addon_yaml_type_name(addon_yaml_type_t type)
{
    switch (type) {
    case ADDON_YAML_NULL:
        return "null";
    case ADDON_YAML_BOOL:
        return "a boolean";
    case ADDON_YAML_INT:
        return "an integer";
    case ADDON_YAML_FLOAT:
        return "a float";
    case ADDON_YAML_STRING:
        return "a string";
    case ADDON_YAML_SEQ:
        return "a sequence";
    case ADDON_YAML_MAP:
        return "a mapping";
    }
    return "an unknown type";
}

unsigned addon_yaml_line(const addon_yaml_node_t *n)
{
    return n->line;
}

unsigned addon_yaml_col(const addon_yaml_node_t *n)
{
    return n->col;
}

int addon_yaml_quoted(const addon_yaml_node_t *n)
{
    return n->quoted;
}

const char *addon_yaml_text(const addon_yaml_node_t *n, size_t *len)
{
    if (len != NULL)
        *len = n->len;
    return n->text;
}

size_t addon_yaml_count(const addon_yaml_node_t *n)
{
    return n->count;
}

const addon_yaml_node_t *addon_yaml_item(const addon_yaml_node_t *n, size_t i)
{
    if (n->type != ADDON_YAML_SEQ || i >= n->count)
        return NULL;
    return n->kids[i];
}

const addon_yaml_node_t *addon_yaml_key(const addon_yaml_node_t *n, size_t i)
{
    if (n->type != ADDON_YAML_MAP || i >= n->count)
        return NULL;
    return n->kids[2 * i];
}

const addon_yaml_node_t *addon_yaml_value(const addon_yaml_node_t *n, size_t i)
{
    if (n->type != ADDON_YAML_MAP || i >= n->count)
        return NULL;
    return n->kids[2 * i + 1];
}

const addon_yaml_node_t *addon_yaml_get(const addon_yaml_node_t *n, const char *key)
{
    if (n == NULL || n->type != ADDON_YAML_MAP)
        return NULL;
    size_t klen = strlen(key);
    for (size_t i = 0; i < n->count; i++) {
        const addon_yaml_node_t *k = n->kids[2 * i];
        if (k->len == klen && memcmp(k->text, key, klen) == 0)
            return n->kids[2 * i + 1];
    }
    return NULL;
}

int addon_yaml_errorf(const addon_yaml_node_t *n, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (n != NULL) {
        addon__yaml_vreport(err, errlen, n->doc->name, n->line, n->col, fmt, ap);
    } else if (err != NULL && errlen > 0) {
        vsnprintf(err, errlen, fmt, ap);
    }
    va_end(ap);
    return PX_ECONFIG;
}

static int yaml_type_error(const addon_yaml_node_t *n, const char *want, const char *what,
                           char *err, size_t errlen)
{
    return addon_yaml_errorf(n, err, errlen, "%s%sexpected %s, got %s", what ? what : "",
                             what ? ": " : "", want, addon_yaml_type_name(n->type));
}

int addon_yaml_expect(const addon_yaml_node_t *n, addon_yaml_type_t type, const char *what,
                      char *err, size_t errlen)
{
    if (n->type == type)
        return 0;
    return yaml_type_error(n, addon_yaml_type_name(type), what, err, errlen);
}

int addon_yaml_get_string(const addon_yaml_node_t *n, const char *what, const char **s, size_t *len,
                          char *err, size_t errlen)
{
    if (n->type != ADDON_YAML_STRING)
        return yaml_type_error(n, "a string", what, err, errlen);
    *s = n->text;
    if (len != NULL)
        *len = n->len;
    return 0;
}

int addon_yaml_get_bool(const addon_yaml_node_t *n, const char *what, int *out, char *err,
                        size_t errlen)
{
    if (n->type != ADDON_YAML_BOOL)
        return yaml_type_error(n, "a boolean", what, err, errlen);
    *out = n->text[0] == 't' || n->text[0] == 'T';
    return 0;
}

/* Parses an integer scalar the resolver accepted; 0, or -1 when it does not fit in int64. */
static int yaml_parse_int(const char *s, size_t len, int64_t *out)
{
    int neg = 0;
    unsigned base = 10;
    size_t i = 0;
    if (len > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
        base = s[1] == 'x' ? 16 : 8;
        i = 2;
    } else if (len > 0 && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        i = 1;
    }
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (; i < len; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else
            d = (unsigned)(c - 'A' + 10);
        if (v > (limit - d) / base)
            return -1;
        v = v * base + d;
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return 0;
}

int addon_yaml_get_int(const addon_yaml_node_t *n, const char *what, int64_t min, int64_t max,
                       int64_t *out, char *err, size_t errlen)
{
    if (n->type != ADDON_YAML_INT)
        return yaml_type_error(n, "an integer", what, err, errlen);
    int64_t v;
    if (yaml_parse_int(n->text, n->len, &v) != 0 || v < min || v > max) {
        return addon_yaml_errorf(n, err, errlen, "%s%smust be between %lld and %lld, got %.40s",
                                 what ? what : "", what ? ": " : "", (long long)min, (long long)max,
                                 n->text);
    }
    *out = v;
    return 0;
}

int addon_yaml_check_keys(const addon_yaml_node_t *n, const char *const *allowed, const char *what,
                          char *err, size_t errlen)
{
    if (n->type != ADDON_YAML_MAP)
        return yaml_type_error(n, "a mapping", what, err, errlen);
    for (size_t i = 0; i < n->count; i++) {
        const addon_yaml_node_t *k = n->kids[2 * i];
        int known = 0;
        for (size_t a = 0; allowed[a] != NULL && !known; a++) {
            size_t alen = strlen(allowed[a]);
            known = k->len == alen && memcmp(k->text, allowed[a], alen) == 0;
        }
        if (known)
            continue;
        char q[ADDON__YAML_QUOTE_MAX * 4 + 8];
        addon__yaml_quote(k->text, k->len, q, sizeof(q));
        char list[256];
        size_t o = 0;
        list[0] = '\0';
        for (size_t a = 0; allowed[a] != NULL; a++) {
            const char *sep = a == 0 ? "" : allowed[a + 1] == NULL ? " or " : ", ";
            int w = snprintf(list + o, sizeof(list) - o, "%s%s", sep, allowed[a]);
            if (w < 0 || (size_t)w >= sizeof(list) - o)
                break;
            o += (size_t)w;
        }
        return addon_yaml_errorf(k, err, errlen, "%s%sunknown key %s (expected %s)",
                                 what ? what : "", what ? ": " : "", q, list);
    }
    return 0;
}
