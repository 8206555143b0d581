/* Pattern matching for allowlist hosts and paths, credential scopes and header names.
 *
 * A pattern is a glob only if it contains '*' or '?'; then Python fnmatch rules apply ('*' any
 * run of characters including '/' and '.', '?' one character, [abc] [!abc] [a-z] classes, a
 * literal '[' when unclosed), anchored at both ends. Otherwise it is compared for equality.
 * A "character" is one UTF-8 code point; an invalid sequence counts as one U+FFFD (what Python
 * gets from decoding with errors="replace"). Plain equality compares bytes. Both sides are byte
 * ranges: no NUL terminator is assumed and NUL is an ordinary byte. Matching is iterative and
 * O(len(pattern) * len(subject)) at worst, whatever the pattern. */
#ifndef ADDON_GLOB_H
#define ADDON_GLOB_H

#include <stddef.h>

/* 1 when pat[0..len) contains '*' or '?' (and is therefore matched as a glob), else 0. */
int addon_glob_is_glob(const char *pat, size_t len);

/* 1 when s[0..slen) matches pat[0..plen), else 0. Case-sensitive (paths). Both borrowed. */
int addon_glob_match(const char *pat, size_t plen, const char *s, size_t slen);

/* Like addon_glob_match with ASCII letters folded to lower case on both sides (hosts, header
 * names), class ranges included: [A-Z] is [a-z]. Both borrowed. */
int addon_glob_match_icase(const char *pat, size_t plen, const char *s, size_t slen);

/* Glob rules whatever the pattern holds (the caller has applied addon_glob_is_glob once, e.g.
 * at load); icase folds ASCII letters on both sides. 1 on a match. Both borrowed. */
int addon_glob_fnmatch(const char *pat, size_t plen, const char *s, size_t slen, int icase);

#endif
