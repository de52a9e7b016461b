#!/usr/bin/env bash
# Python clients (psycopg 3, pg8000, psqlODBC through pyodbc, asyncpg, SQLAlchemy and pandas,
# pgcli, polars, connectorx and the ADBC driver, and Grafana's queries) under pytest.
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pytest -q -p no:cacheprovider test_psycopg.py test_connection_watch.py test_portals.py test_continuous.py test_synopses.py test_pg8000.py test_pyodbc.py test_asyncpg.py test_sqlalchemy.py test_ecosystem.py
