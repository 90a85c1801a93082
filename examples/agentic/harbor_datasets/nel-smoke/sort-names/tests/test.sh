#!/bin/bash
# Compares /app/sorted.txt with the expected order shipped beside this script.
mkdir -p /logs/verifier
if cmp -s /app/sorted.txt /tests/expected.txt; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
