#include "proxy/px_write.h"

#include <stdlib.h>
#include <string.h>

#include "proxy/px_err.h"

typedef struct px__write {
    uv_write_t req;
    void *owner;
    char *owned;
    char data[];
} px__write_t;

int px_write(uv_stream_t *s, const char *data, size_t len, char *owned, void *owner,
             uv_write_cb cb)
{
    px__write_t *w = malloc(sizeof(*w) + (owned != NULL ? 0 : len));
    if (w == NULL) {
        free(owned);
        return PX_ENOMEM;
    }
    w->owner = owner;
    w->owned = owned;
    uv_buf_t b;
    if (owned != NULL) {
        b = uv_buf_init(owned, (unsigned)len);
    } else {
        memcpy(w->data, data, len);
        b = uv_buf_init(w->data, (unsigned)len);
    }
    int rc = uv_write(&w->req, s, &b, 1, cb);
    if (rc < 0) {
        free(w->owned);
        free(w);
    }
    return rc;
}

void *px_write_done(uv_write_t *req)
{
    px__write_t *w = (px__write_t *)req;
    void *owner = w->owner;
    free(w->owned);
    free(w);
    return owner;
}
