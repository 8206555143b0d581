/* String and key helpers shared by the replacement map's loader (addon_replacements.c) and its
 * value_from sources (addon_replacements_from.c): a file of their own so that neither of the
 * two calls the other back. Declared in addon_replacements_int.h. */
#include "addons/addon_replacements_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/px_err.h"

int addon__repl_dup(const char *s, size_t len, int lower, addon_str_t *out)
{
    char *d = malloc(len + 1);
    if (d == NULL)
        return PX_ENOMEM;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        d[i] = lower && c >= 'A' && c <= 'Z' ? (char)(c + ('a' - 'A')) : c;
    }
    d[len] = '\0';
    out->base = d;
    out->len = len;
    return 0;
}

int addon__repl_has_ctl(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return 1;
    }
    return 0;
}

int addon__repl_check_keys(const addon_yaml_node_t *n, const char *const *allowed, const char *what,
                           char *err, size_t errlen)
{
    for (size_t i = 0; i < addon_yaml_count(n); i++) {
        const addon_yaml_node_t *k = addon_yaml_key(n, i);
        size_t klen;
        const char *key = addon_yaml_text(k, &klen);
        int known = 0;
        for (size_t a = 0; allowed[a] != NULL && !known; a++)
            known = klen == strlen(allowed[a]) && memcmp(key, allowed[a], klen) == 0;
        if (known)
            continue;
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
        return addon_yaml_errorf(k, err, errlen, "%s: unknown key (expected %s)", what, list);
    }
    return 0;
}
