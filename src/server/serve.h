/* `better-compute serve --config server.toml`: the control plane.
 * Returns the process exit status (0 after a clean SIGTERM/SIGINT shutdown). */
#ifndef BC_SERVER_SERVE_H
#define BC_SERVER_SERVE_H

int bc_cmd_serve(int argc, char **argv);

#endif
