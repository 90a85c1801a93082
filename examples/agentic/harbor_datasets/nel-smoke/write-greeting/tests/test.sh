#!/bin/bash
# The file must hold exactly "Hello, Harbor!\n".
mkdir -p /logs/verifier
if [ "$(od -An -c /app/hello.txt 2>/dev/null | tr -s ' ')" = "$(printf 'Hello, Harbor!\n' | od -An -c | tr -s ' ')" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
