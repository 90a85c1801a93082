#!/bin/bash
# data.txt has 7 lines; the answer may end with a newline.
mkdir -p /logs/verifier
got=$(tr -d ' \n' < /app/count.txt 2>/dev/null)
if [ "$got" = "7" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
