/* The envelope of a GraphQL request (addon_gqlreq.h). Both checks fail closed: a server behind
 * airlock may read a body or a URL more loosely than airlock does, so whatever one of them
 * could read as a second query (a key given twice, "Query", "?query=", "?QUERY[]=") is refused
 * rather than guessed at. */
#include "addons/addon_gqlreq.h"

#include <string.h>

#include "base/px_err.h"

#define GQLREQ_NAME_MAX 32 /* decoded bytes of a parameter name worth comparing */

/* The four parameters of a GraphQL request over HTTP, lower case. */
static const char *const gqlreq_names[] = {"query", "operationname", "variables", "extensions"};

/* 1 when the JSON text nests deeper than the cap (outside strings). Runs before jansson,
 * whose own limit is 2,048 levels, so that the walkers after it never see more than the cap. */
static int gqlreq_too_deep(const char *s, size_t len)
{
    size_t depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '[' || c == '{') {
            if (++depth > ADDON_GQLREQ_DEPTH_MAX)
                return 1;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return 0;
}

/* s[0..len) (decoded, no surrounding space) folded as a server ignoring case would fold it:
 * ASCII letters, and U+0131 (dotless i) and U+017F (long s), whose upper case is I and S in
 * .NET's and JavaScript's invariant case mapping. 1 when it equals want (lower case). */
static int gqlreq_fold_eq(const unsigned char *s, size_t len, const char *want)
{
    size_t w = 0, wl = strlen(want);
    for (size_t i = 0; i < len; w++) {
        if (w >= wl)
            return 0;
        char c;
        if (i + 1 < len && s[i] == 0xC4 && s[i + 1] == 0xB1) {
            c = 'i';
            i += 2;
        } else if (i + 1 < len && s[i] == 0xC5 && s[i + 1] == 0xBF) {
            c = 's';
            i += 2;
        } else {
            c = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] | 0x20 : s[i]);
            i++;
        }
        if (c != want[w])
            return 0;
    }
    return w == wl;
}

static int gqlreq_is_param(const unsigned char *s, size_t len)
{
    for (size_t k = 0; k < sizeof(gqlreq_names) / sizeof(gqlreq_names[0]); k++) {
        if (gqlreq_fold_eq(s, len, gqlreq_names[k]))
            return 1;
    }
    return 0;
}

static int gqlreq_hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = (char)(c | 0x20);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The character at name[*i] decoded into u (UTF-8 for %uXXXX, else one byte): its length.
 * *i moves past it. */
static size_t gqlreq_decode(const char *name, size_t len, size_t *i, unsigned char u[3])
{
    size_t k = *i;
    *i = k + 1;
    u[0] = (unsigned char)(name[k] == '+' ? ' ' : name[k]);
    if (name[k] != '%')
        return 1;
    if (k + 2 < len && gqlreq_hex(name[k + 1]) >= 0 && gqlreq_hex(name[k + 2]) >= 0) {
        *i = k + 3;
        u[0] = (unsigned char)(gqlreq_hex(name[k + 1]) * 16 + gqlreq_hex(name[k + 2]));
        return 1;
    }
    unsigned long v = 0;
    size_t h = k + 2;
    if (k + 5 >= len || (name[k + 1] | 0x20) != 'u')
        return 1;
    for (; h < k + 6 && gqlreq_hex(name[h]) >= 0; h++)
        v = v * 16 + (unsigned long)gqlreq_hex(name[h]);
    if (h < k + 6)
        return 1;
    *i = h; /* %uXXXX: the IIS / System.Web form, still decoded by some servers */
    if (v < 0x80) {
        u[0] = (unsigned char)v;
        return 1;
    }
    if (v < 0x800) {
        u[0] = (unsigned char)(0xC0 | (v >> 6));
        u[1] = (unsigned char)(0x80 | (v & 0x3F));
        return 2;
    }
    u[0] = (unsigned char)(0xE0 | (v >> 12));
    u[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
    u[2] = (unsigned char)(0x80 | (v & 0x3F));
    return 3;
}

static int gqlreq_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

int addon_gqlreq_param_name(const char *name, size_t len)
{
    unsigned char buf[GQLREQ_NAME_MAX];
    size_t o = 0, keep = 0; /* keep: o without the trailing white space */
    for (size_t i = 0; i < len;) {
        unsigned char u[3];
        size_t n = gqlreq_decode(name, len, &i, u);
        if (n == 1 && (u[0] == '\0' || u[0] == '[' || u[0] == '.'))
            break;
        int space = n == 1 && gqlreq_space(u[0]);
        if (o == 0 && space)
            continue;
        if (o + n > sizeof(buf) && space)
            continue; /* trailing white space past the buffer: dropped as a server trims it */
        if (o + n > sizeof(buf))
            return 0; /* longer than any spelling of the four names */
        memcpy(buf + o, u, n);
        o += n;
        if (!space)
            keep = o;
    }
    return gqlreq_is_param(buf, keep);
}

int addon_gqlreq_url_params(addon_str_t target, addon_str_t *name)
{
    const char *q = memchr(target.base, '?', target.len);
    if (q == NULL)
        return 0;
    const char *end = target.base + target.len;
    for (const char *p = q + 1; p < end;) {
        const char *stop = p;
        while (stop < end && *stop != '&' && *stop != ';')
            stop++;
        const char *eq = memchr(p, '=', (size_t)(stop - p));
        size_t nlen = (size_t)((eq != NULL ? eq : stop) - p);
        if (addon_gqlreq_param_name(p, nlen)) {
            if (name != NULL)
                *name = (addon_str_t){p, nlen};
            return 1;
        }
        p = stop + 1;
    }
    return 0;
}

/* 1 when a top-level key is a second spelling of one of the four parameters. */
static int gqlreq_ambiguous(const json_t *o)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)o, k, v)
    {
        (void)v;
        size_t n = strlen(k);
        if (!gqlreq_is_param((const unsigned char *)k, n))
            continue;
        if (strcmp(k, "query") != 0 && strcmp(k, "operationName") != 0 &&
            strcmp(k, "variables") != 0 && strcmp(k, "extensions") != 0)
            return 1;
    }
    return 0;
}

int addon_gqlreq_load(const char *body, size_t len, int allow_nul, json_t **out, const char **why)
{
    *out = NULL;
    *why = "<unparseable>";
    if (gqlreq_too_deep(body, len)) {
        *why = "<too-deep>";
        return PX_EPARSE;
    }
    json_error_t jerr;
    size_t flags = JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | (allow_nul ? JSON_ALLOW_NUL : 0);
    json_t *j = json_loadb(body, len, flags, &jerr);
    if (j == NULL) {
        if (json_error_code(&jerr) == json_error_out_of_memory)
            return PX_ENOMEM;
        if (json_error_code(&jerr) == json_error_duplicate_key)
            *why = "<duplicate-key>";
        else if (json_error_code(&jerr) == json_error_stack_overflow)
            *why = "<too-deep>";
        return PX_EPARSE;
    }
    if (json_is_object(j) && gqlreq_ambiguous(j)) {
        json_decref(j);
        *why = "<ambiguous-key>";
        return PX_EPARSE;
    }
    *out = j;
    return 0;
}
