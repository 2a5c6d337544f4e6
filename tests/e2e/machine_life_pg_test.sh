#!/usr/bin/env bash
# machine_life_test.sh on a throwaway PostgreSQL with two replicas of better-compute
# serve (the CLI and bcd site on one, the ramdisk and the installed OS on the other).
# Skipped (77) when PostgreSQL cannot start, or without swtpm or tpm2-tools.
LIFE_ENGINE=postgres exec bash "$(dirname "$0")/machine_life_test.sh"
