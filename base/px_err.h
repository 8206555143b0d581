/* airlock's own error codes.
 *
 * Every module returns int: 0 on success, negative on failure. libuv codes (UV_E*, which are
 * negated errno values above -5000) pass through unchanged; airlock's own codes below live in
 * this one X-macro list, far below libuv's range. The pure modules (dns codec, ca, signing,
 * addons) may include this header for the constants only; px_strerror() lives in proxy/. */
#ifndef PX_ERR_H
#define PX_ERR_H

#define PX_ERRNO_MAP(XX)                                                                       \
    XX(PARSE, -20001, "malformed input")                                                       \
    XX(TOOBIG, -20002, "input exceeds a limit")                                                \
    XX(CONFIG, -20003, "invalid configuration")                                                \
    XX(NOENT, -20004, "file not found")                                                        \
    XX(IO, -20005, "input/output error")                                                       \
    XX(NOMEM, -20006, "out of memory")                                                         \
    XX(CRYPTO, -20007, "cryptographic library failure")                                        \
    XX(TLS, -20008, "TLS failure")                                                             \
    XX(DNS, -20009, "name resolution failed")                                                  \
    XX(FORBIDDEN, -20010, "destination not allowed")                                           \
    XX(TIMEOUT, -20011, "timed out")                                                           \
    XX(UNSUPPORTED, -20012, "unsupported")                                                     \
    XX(STATE, -20013, "invalid state")                                                         \
    XX(SIGNING, -20014, "request could not be re-signed")

enum px_errno {
#define PX__ERR_ENUM(name, code, text) PX_E##name = (code),
    PX_ERRNO_MAP(PX__ERR_ENUM)
#undef PX__ERR_ENUM
};

/* Text for any code: airlock's own, or libuv's (falls back to uv_strerror). Static storage. */
const char *px_strerror(int err);

#endif
