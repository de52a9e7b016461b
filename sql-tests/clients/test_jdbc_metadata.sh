#!/usr/bin/env bash
# pgjdbc (Debian libpostgresql-jdbc-java): DatabaseMetaData, ResultSetMetaData, typed
# parameters and updatable result sets as DBeaver, DataGrip and Metabase use them.
#
# BROOK_JDBC_KNOWN_GAPS: checks Brook fails today, one check name a line with what fails
# after '#'. A listed check that passes fails the run: take it out of the list then.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
if [ -z "${BROOK_JDBC_KNOWN_GAPS+set}" ]; then
export BROOK_JDBC_KNOWN_GAPS=$(cat <<'GAPS'
getTables(SYSTEM TABLE, pg_catalog)   # pg_class & co. are relkind 'v' in Brook's pg_class, so they list as views
getUDTs(all): relations' row types    # pg_type has no row type per relation
getFunctionColumns(add1)              # pg_proc.proargnames/proargmodes/proallargtypes are text, not arrays
getProcedureColumns(add1)             # the same
ResultSetMetaData(SELECT * FROM items)   # RowDescription carries table oid 0 and column 0: no table, base column or nullability
updatable ResultSet updateString + updateRow       # needs the base column names RowDescription does not carry
updatable ResultSet moveToInsertRow + insertRow    # the same
GAPS
)
fi
JAR=/usr/share/java/postgresql.jar
out=$(mktemp -d)
javac -d "$out" -cp "$JAR" "$(dirname "$0")/jdbc/JdbcMetadata.java"
start_brook
java -cp "$out:$JAR" JdbcMetadata "$BROOK_PORT"
