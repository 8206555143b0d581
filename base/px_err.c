#include "base/px_err.h"

#include <uv.h>

const char *px_strerror(int err)
{
    switch (err) {
#define PX__ERR_TEXT(name, code, text)                                                         \
    case (code):                                                                               \
        return (text);
        PX_ERRNO_MAP(PX__ERR_TEXT)
#undef PX__ERR_TEXT
    default:
        return uv_strerror(err);
    }
}
