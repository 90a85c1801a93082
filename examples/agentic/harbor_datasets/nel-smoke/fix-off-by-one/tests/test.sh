#!/bin/bash
# Checks /app/sum.py's total against the closed form n(n+1)/2.
mkdir -p /logs/verifier
if python3 -c '
import sys
sys.path.insert(0, "/app")
from sum import total
assert all(total(n) == n * (n + 1) // 2 for n in range(0, 50))
'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
