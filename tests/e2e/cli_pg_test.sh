#!/usr/bin/env bash
# End to end: the whole CLI test with the server's store on PostgreSQL.
CLI_ON_PG=1 exec bash "$(dirname "$0")/cli_test.sh"
