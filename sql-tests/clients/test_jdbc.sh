#!/usr/bin/env bash
# pgjdbc (Debian libpostgresql-jdbc-java).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
JAR=/usr/share/java/postgresql.jar
out=$(mktemp -d)
javac -d "$out" -cp "$JAR" "$(dirname "$0")/jdbc/JdbcTest.java"
start_brook
java -cp "$out:$JAR" JdbcTest "$BROOK_PORT"
