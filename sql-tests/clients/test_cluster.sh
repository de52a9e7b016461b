#!/usr/bin/env bash
# Cluster mode: three Brook nodes on one NATS JetStream log (test_cluster.py).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pytest -q -p no:cacheprovider test_cluster.py
