#!/usr/bin/env bash
# test_evolution_db.sh - The evolution's database chapter, quick: the rows in MariaDB
# (v12..v15, atomic there, mariadbd killed), each on a stack with its own mariadbd, judged
# by tests/test_evolution.sh from what the database holds and the HTTP answers. A test of
# its own, so that make test runs it beside the Redis rows.
exec env EVO_WHERE=mysql "$(dirname "$0")/test_evolution.sh"
