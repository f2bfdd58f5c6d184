#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer; say so plainly before anything else fails.
set -euo pipefail
if ! command -v java >/dev/null 2>&1; then
  echo "Java 17+ is required (Spark 4) and 'java' is not on PATH." >&2
  echo "Install it, e.g.:  sudo apt-get install -y openjdk-17-jre-headless   (or set JAVA_HOME)" >&2
  exit 1
fi
version=$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
if [ "${major:-0}" -lt 17 ] 2>/dev/null; then
  echo "Java $version found; Spark 4 needs Java 17 or newer (apt-get install openjdk-17-jre-headless)." >&2
  exit 1
fi
