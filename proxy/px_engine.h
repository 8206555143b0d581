/* The engine: one libuv loop running the DNS responder and the proxy listeners. */
#ifndef PX_ENGINE_H
#define PX_ENGINE_H

#include "proxy/px_config.h"

/* Runs airlock until SIGTERM/SIGINT. Borrows cfg. Returns the process exit code: 0 after a
 * clean shutdown, 1 when start-up failed (the reason went to stderr). */
int px_engine_run(const px_config_t *cfg);

#endif
