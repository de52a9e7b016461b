#!/usr/bin/env bash
# Cluster mode: three Brook nodes on one NATS JetStream log (test_cluster.py), and a
# network split between three NATS servers and nodes in network namespaces
# (test_cluster_split.py; skipped without root).
set -euo pipefail
cd "$(dirname "$0")"
python3 -m pytest -q -p no:cacheprovider -rs test_cluster.py test_cluster_split.py
