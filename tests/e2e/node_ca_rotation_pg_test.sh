#!/usr/bin/env bash
# node_ca_rotation_test.sh on a throwaway PostgreSQL with two replicas of better-compute
# serve. Skipped (77) when PostgreSQL cannot start.
ROT_ENGINE=postgres exec bash "$(dirname "$0")/node_ca_rotation_test.sh"
