#!/usr/bin/env bash
# node_ca_rotation_test.sh (the node CA and both join keys rotated under renewing agents)
# on a throwaway PostgreSQL with two replicas of better-compute serve: the same steps, one
# script. Skipped (77) when PostgreSQL cannot start.
ROT_ENGINE=postgres exec bash "$(dirname "$0")/node_ca_rotation_test.sh"
