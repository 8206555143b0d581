/* Response scrubbing (issue 33 part 1): every real value of the replacements file that an
 * upstream hands back (an echoing debug endpoint, an error body quoting a header, a token
 * endpoint) is replaced with its surrogate before the agent sees it. This is the pure core;
 * the proxy's response stage feeds it a status line, header values and body pieces.
 *
 * Patterns. Each value (ADDON_LEAK_MIN_LEN bytes or more, as the secret guard) gives these
 * (pattern -> replacement) pairs, the replacement being the surrogate in the same encoding:
 *   raw          V -> S
 *   url          percent-encoding of every byte outside A-Z a-z 0-9 - . _ ~, upper-case
 *                digits -> S the same way, upper-case; and lower-case -> lower-case
 *   base64,      b64(V) padded with '=' -> b64(S) padded; b64(V) unpadded -> b64(S) unpadded
 *   base64url    (the value encoded alone: a token base64'd on its own is replaced exactly);
 *                and the value inside a larger base64 text (Basic "user:pass", a JWT): for
 *                each offset a (0, 1, 2) of the value mod 3 in the encoded bytes, its stable
 *                core (the characters whose 6 bits all come from the value, as the secret
 *                guard's) -> S's core at the same offset. That is exact only in the middle:
 *                the characters at either end of the core mix in a neighbour's bits and are
 *                kept, so up to 4 bits of the value's first and of its last byte stay (not
 *                enough to use it); when the surrogate's length differs from the value's by
 *                other than a multiple of 3, the rest of that base64 text is shifted by 2 or
 *                4 bits and decodes to other bytes. The value is gone either way.
 *   hex          lower-case -> lower-case, upper-case -> upper-case.
 * Two encodings of one value that are the same bytes (a value without reserved bytes is its
 * own URL encoding; hex without letters) keep the first of that order's replacements; the
 * same pattern from two entries keeps the earlier entry's. An aws-sigv4 entry gives its access
 * key id -> the surrogate key id, its session token -> surrogate_session_token, and its secret
 * key (and a session token without a surrogate) -> ADDON_SCRUB_PLACEHOLDER. github-app tokens
 * are minted at run time and are not in the file: not covered here. Canaries are not replaced.
 *
 * Matching is leftmost-longest: scanning from the start, the earliest position where some
 * pattern begins wins, and of the patterns beginning there the longest (so a padded base64
 * beats its unpadded form and its core, and "secret-long" beats a value "secret-lo..." that
 * is its prefix). Replaced output is not scanned again.
 *
 * Why not Aho-Corasick alone: a byte-by-byte automaton costs a table walk per byte (about
 * 1 GB/s), more than the 5 % the issue allows on a download, and its natural report is the
 * earliest end, not the leftmost-longest match. So the matcher is two parts, both immutable
 * and built once per replacements snapshot: the secret guard's scanner (addon_leak: one
 * Aho-Corasick automaton with a sampled 4-gram filter, tens of GB/s on text that holds no
 * pattern) over the same values, as a filter (every pattern here contains one of its patterns,
 * so a stretch in which it finds nothing holds none of ours), and a sorted trie of the
 * patterns here, walked from each position only in the pattern's length before a filter hit
 * and in a piece's last (longest - 1) bytes. Text without a value costs the filter and no copy:
 * the output is handed out as views of the input.
 *
 * A stream keeps at most (longest pattern - 1) bytes back across feeds (bytes that may begin
 * a value whose end has not arrived), a working buffer of twice that, and a count per item:
 * memory bounded by the patterns, independent of the body. Values and patterns are wiped when
 * the matcher is freed; names ("entry[3].value") are the only thing to log. */
#ifndef ADDON_SCRUB_H
#define ADDON_SCRUB_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"
#include "addons/addon_leak.h"
#include "addons/addon_replacements.h"

/* What replaces a real value that has no surrogate (an AWS secret access key; a session token
 * without surrogate_session_token): unreserved characters only, so it is its own URL encoding. */
#define ADDON_SCRUB_PLACEHOLDER "airlock-scrubbed"

typedef struct addon_scrub addon_scrub_t;
typedef struct addon_scrub_stream addon_scrub_stream_t;

/* One value to replace. Every view is borrowed during addon_scrub_new only. */
typedef struct addon_scrub_item {
    addon_str_t name;      /* what a log line shows: "entry[3].value" */
    addon_str_t value;     /* the real value */
    addon_str_t surrogate; /* what replaces it (may be empty) */
} addon_scrub_item_t;

/* Receives output bytes (borrowed: valid during the call only; a view of the input, of the
 * matcher's replacement or of the stream's buffer). 0 to go on; a negative value stops the
 * feed, which returns it. */
typedef int (*addon_scrub_emit_cb)(void *arg, const char *data, size_t len);

/* Builds a matcher from items[0..n) (borrowed). Values shorter than ADDON_LEAK_MIN_LEN are
 * skipped with one line each in warn (snprintf-style, may be NULL), "secret NAME: shorter than
 * 8 bytes, not scanned for\n"; *nwarn (may be NULL) gets their count. 0 and *out (maybe with
 * no pattern: it never replaces); PX_ENOMEM, or PX_ETOOBIG past ADDON_LEAK_MAX_PATTERN_BYTES. */
int addon_scrub_new(const addon_scrub_item_t *items, size_t n, addon_scrub_t **out, char *warn,
                    size_t warnlen, size_t *nwarn);

/* addon_scrub_new over r (borrowed; NULL is empty): masked values ("entry[i].value" ->
 * the entry's surrogate) and aws-sigv4 credentials ("entry[i].access_key_id",
 * "entry[i].secret_access_key", "entry[i].session_token"), as the header comment says. */
int addon_scrub_from_replacements(const addon_replacements_t *r, addon_scrub_t **out, char *warn,
                                  size_t warnlen, size_t *nwarn);

/* Wipes the values and frees m. NULL is allowed. */
void addon_scrub_free(addon_scrub_t *m);

/* Items (every item given, skipped ones included) and item i's name (borrowed from m). */
size_t addon_scrub_item_count(const addon_scrub_t *m);
const char *addon_scrub_item_name(const addon_scrub_t *m, size_t i);

/* The longest pattern in bytes (0 without patterns): a stream holds back at most one less. */
size_t addon_scrub_max_pattern_len(const addon_scrub_t *m);

/* The patterns, for tests and the fuzzer: count, then pattern i's bytes and replacement
 * (borrowed from m), its encoding and item. */
size_t addon_scrub_pattern_count(const addon_scrub_t *m);
addon_str_t addon_scrub_pattern(const addon_scrub_t *m, size_t i, addon_str_t *replacement,
                                addon_leak_enc_t *enc, size_t *item);

/* A stream over m (kept: m must outlive it), or NULL when out of memory. m may be NULL (the
 * stream then passes everything through). */
addon_scrub_stream_t *addon_scrub_stream_new(const addon_scrub_t *m);
void addon_scrub_stream_free(addon_scrub_stream_t *st);

/* Feeds data[0..len) (borrowed) as the stream's continuation: emits, in order, every byte
 * that can no longer be part of a value with each value replaced, and keeps the rest (at most
 * max_pattern_len - 1 bytes). 0, or what emit returned when negative (the stream is then
 * unusable). */
int addon_scrub_stream_feed(addon_scrub_stream_t *st, const void *data, size_t len,
                            addon_scrub_emit_cb emit, void *arg);

/* Ends the stream: emits the bytes held back (replaced). 0 or emit's negative value. The
 * stream may then be fed again as a new one; its counts stay. */
int addon_scrub_stream_flush(addon_scrub_stream_t *st, addon_scrub_emit_cb emit, void *arg);

/* Bytes held back now (never more than max_pattern_len - 1). */
size_t addon_scrub_stream_held(const addon_scrub_stream_t *st);

/* Replacements so far: all of them, or item i's. */
uint64_t addon_scrub_stream_total(const addon_scrub_stream_t *st);
uint64_t addon_scrub_stream_count(const addon_scrub_stream_t *st, size_t i);

/* Writes "[scrubbed: N name, name]" (the names of the items replaced, in item order; never a
 * value), or "" when nothing was. snprintf-style: the full length; at most len - 1 bytes and
 * a NUL. counts[] has one entry per item (a stream's, or addon_scrub_once's). */
size_t addon_scrub_describe(const addon_scrub_t *m, const uint64_t *counts, char *buf, size_t len);
const uint64_t *addon_scrub_stream_counts(const addon_scrub_stream_t *st);

/* One-shot (a status line, a header value): 0 when data[0..len) (borrowed) holds no value
 * (*out untouched: use data); 1 with *out and *outlen a new malloc'ed copy with every value
 * replaced (the caller frees it; not NUL-terminated; NULL when the output is empty: every byte
 * was a value with an empty surrogate); PX_ENOMEM. counts (may be NULL;
 * one per item) is added to. */
int addon_scrub_once(const addon_scrub_t *m, const void *data, size_t len, char **out,
                     size_t *outlen, uint64_t *counts);

#endif
