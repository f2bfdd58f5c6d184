#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer, and the strict line parser (jvm/) is compiled with javac:
# say so plainly before anything else fails.
set -euo pipefail
install="sudo apt-get install -y openjdk-17-jdk-headless"
if ! command -v java >/dev/null 2>&1; then
  echo "Java 17+ (a JDK, with javac) is required and 'java' is not on PATH." >&2
  echo "Install it, e.g.:  $install   (or put a JDK 17+ on PATH)" >&2
  exit 1
fi
version=$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')
major=${version%%.*}
if [ "${major:-0}" -lt 17 ] 2>/dev/null; then
  echo "Java $version found; Spark 4 needs Java 17 or newer ($install)." >&2
  exit 1
fi
if ! command -v javac >/dev/null 2>&1; then
  echo "Java $version has no compiler (javac): the strict line parser in jvm/ is built with it." >&2
  echo "Install a JDK, e.g.:  $install" >&2
  exit 1
fi
