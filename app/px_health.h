/* `airlock health`: probes the listeners of a running airlock (the container health check). */
#ifndef PX_HEALTH_H
#define PX_HEALTH_H

/* Budget for all probes of one `airlock health` run together. */
#define PX_HEALTH_BUDGET_MS 1000

/* Runs `airlock health [--http A:P] [--https A:P] [--dns A:P]` (argv[0] is "health"); with
 * no flag the three defaults on 127.0.0.1 are probed. Returns the exit status: 0 when every
 * probe answered in time, 1 with a one-line reason on stderr, 2 on a usage error. */
int px_health_main(int argc, char **argv);

#endif
