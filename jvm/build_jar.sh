#!/usr/bin/env bash
# Compile jvm/src into one jar against the jars of the pyspark that PYTHON imports: the one
# build of the strict line parser, for `make jar` and the Docker image alike.
#   bash jvm/build_jar.sh PYTHON OUT_JAR
set -euo pipefail
python=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
jars=$("$python" -c "import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")
# javac needs Jackson (the parser), Spark's SQL API (the functions) and Scala's library and
# reflection (SplitLineNumbers.function builds a typed Scala UDF).
classpath=$(ls "$jars"/jackson-core-*.jar "$jars"/spark-sql-api_*.jar "$jars"/scala-library-*.jar \
  "$jars"/scala-reflect-*.jar | paste -sd:)
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
find "$here/src" -name '*.java' -print0 | xargs -0 javac --release 17 -nowarn -cp "$classpath" -d "$classes"
mkdir -p "$(dirname "$out")"
jar cf "$out" -C "$classes" .
