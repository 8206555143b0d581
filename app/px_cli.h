/* The subcommands of the airlock command line other than `run` and `health`, one file per
 * group (px_main.c dispatches). Each takes argc/argv with argv[0] the subcommand's name and
 * returns the process exit status: 0 success, 1 failure, 2 usage error. */
#ifndef PX_CLI_H
#define PX_CLI_H

/* px_cli_policy.c: `airlock check` and `airlock explain`. */
int px_cli_check(int argc, char **argv);
int px_cli_explain(int argc, char **argv);
extern const char px_cli_policy_usage[];

/* px_cli_audit.c: `airlock replay`, `airlock report`, `airlock suggest`. */
int px_cli_audit(int argc, char **argv);
int px_cli_audit_handles(const char *cmd);
extern const char px_cli_audit_usage[];

/* px_cli_ca.c: `airlock ca ...`. */
int px_cli_ca(int argc, char **argv);
extern const char px_cli_ca_usage[];

/* px_cli_hold.c: `airlock pending`, `airlock approve`, `airlock deny`. */
int px_cli_hold(int argc, char **argv);
int px_cli_hold_handles(const char *cmd);
extern const char px_cli_hold_usage[];

#endif
